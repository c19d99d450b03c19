//! `vellum-admin keys`: create, list and revoke API keys.
//!
//! A key is created by the application layer's `api_keys::create_key` (the admin app's use case
//! too): its secret is generated there, printed here once and never stored; the database keeps
//! its key id and SHA-256 digest only, and `keys list` shows neither the secret nor the digest.

use std::io::Write;

use serde_json::{Value as Json, json};
use vellum_app::AppError;
use vellum_app::api_keys::{self, NewKey, field};
use vellum_domain::ValidationErrors;
use vellum_storage::StorageError;
use vellum_storage::keys::{self, ApiKeySummary};

use crate::db::{open, rfc3339};
use crate::{AdminError, DatabaseArgs};

/// Arguments of `keys`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(subcommand)]
    command: KeysCommand,
}

impl Args {
    /// Whether the command changes the project (servers must then drop what they cached).
    pub(crate) fn writes(&self) -> bool {
        !matches!(self.command, KeysCommand::List)
    }
}

#[derive(Debug, clap::Subcommand)]
enum KeysCommand {
    /// Create a key and print its secret once.
    #[command(
        long_about = "Create an API key acting under ROLE and print \
            {\"name\", \"role\", \"key_id\", \"secret\"} on stdout. The secret is shown only \
            this once: Vellum stores its hash, never the secret itself.",
        after_help = "Example:\n  vellum-admin keys create --role editor --name site-build \
            --ip 10.0.0.0/8 --ip ::1 --expires-at 2027-01-01T00:00:00Z"
    )]
    Create(CreateArgs),
    /// List every key (never its secret).
    #[command(
        long_about = "List every API key, revoked ones included, as a JSON array on stdout: \
            name, key_id, role, ip_allowlist, expires_at, revoked_at, last_used_at, created_at. \
            Neither secrets nor their hashes are ever shown.",
        after_help = "Example:\n  vellum-admin keys list"
    )]
    List,
    /// Revoke a key by name.
    #[command(
        long_about = "Revoke the API key NAME: from now on it is rejected with 401. Revoking \
            again keeps the first revocation time. Prints the key's summary on stdout.",
        after_help = "Example:\n  vellum-admin keys revoke site-build"
    )]
    Revoke {
        /// The key's name.
        name: String,
    },
}

#[derive(Debug, clap::Args)]
struct CreateArgs {
    /// The role the key acts under (e.g. `reader`, or a role from the manifest).
    #[arg(long)]
    role: String,
    /// A unique name for the key.
    #[arg(long)]
    name: String,
    /// An IP address or CIDR range (IPv4 or IPv6) the key may be used from; repeat for several.
    /// Without any, every address may use it.
    #[arg(long = "ip", value_name = "CIDR")]
    ip: Vec<String>,
    /// When the key stops working, in RFC 3339 (`2027-01-01T00:00:00Z`).
    #[arg(long, value_name = "RFC3339")]
    expires_at: Option<String>,
}

/// Runs `keys …`: JSON results on `out`, notes for people on `log`.
pub(crate) async fn run(
    database: &DatabaseArgs,
    args: &Args,
    out: &mut impl Write,
    log: &mut impl Write,
) -> Result<(), AdminError> {
    match &args.command {
        KeysCommand::Create(create_args) => create(database, create_args, out, log).await,
        KeysCommand::List => {
            let db = open(database).await?;
            let keys: Vec<Json> = keys::list_api_keys(&db)
                .await?
                .iter()
                .map(summary_json)
                .collect();
            writeln!(out, "{}", Json::Array(keys)).map_err(AdminError::Output)
        }
        KeysCommand::Revoke { name } => {
            let db = open(database).await?;
            keys::revoke_api_key(&db, name).await.map_err(|e| match e {
                StorageError::NotFound { .. } => {
                    AdminError::NotFound(format!("no API key named \"{name}\""))
                }
                other => AdminError::Storage(other),
            })?;
            let _ = writeln!(log, "vellum-admin: revoked API key \"{name}\"");
            let summary = keys::api_key_by_name(&db, name)
                .await?
                .ok_or_else(|| AdminError::NotFound(format!("no API key named \"{name}\"")))?;
            writeln!(out, "{}", summary_json(&summary)).map_err(AdminError::Output)
        }
    }
}

/// Creates the key through the application layer's [`api_keys::create_key`], the use case the
/// admin app's `POST /settings/api-keys` runs too, so a key is checked the same way wherever it
/// is made; a refusal names the flag.
async fn create(
    database: &DatabaseArgs,
    args: &CreateArgs,
    out: &mut impl Write,
    log: &mut impl Write,
) -> Result<(), AdminError> {
    let db = open(database).await?;
    let new = NewKey {
        name: Some(&args.name),
        role: Some(&args.role),
        ip_allowlist: args.ip.iter().map(String::as_str).collect(),
        expires_at: args.expires_at.as_deref(),
    };
    let created = api_keys::create_key(&db, &new).await.map_err(|e| match e {
        AppError::Invalid(errors) => invalid_flag(&errors),
        other => AdminError::App(other),
    })?;
    let _ = writeln!(
        log,
        "vellum-admin: created API key \"{}\"; store its secret now, it is not shown again",
        created.key.name
    );
    let report = json!({
        "name": created.key.name,
        "role": created.key.role,
        "key_id": created.key.key_id.as_str(),
        "secret": created.secret.expose(),
    });
    writeln!(out, "{report}").map_err(AdminError::Output)
}

/// The first problem, in flag order, named by its flag.
fn invalid_flag(errors: &ValidationErrors) -> AdminError {
    let flags = [
        (field::IP_ALLOWLIST, "--ip"),
        (field::EXPIRES_AT, "--expires-at"),
        (field::ROLE, "--role"),
        (field::NAME, "--name"),
    ];
    for (name, flag) in flags {
        let found = errors
            .iter()
            .find(|(path, _)| *path == name || path.starts_with(&format!("{name}.")));
        if let Some((_, messages)) = found {
            return AdminError::InvalidArgument {
                flag,
                message: messages.join("; "),
            };
        }
    }
    AdminError::App(AppError::Invalid(errors.clone()))
}

/// A key as `keys list` shows it: everything but the secret and its digest (which
/// [`ApiKeySummary`] does not even hold).
fn summary_json(key: &ApiKeySummary) -> Json {
    json!({
        "name": key.name,
        "key_id": key.key_id.as_str(),
        "role": key.role,
        "ip_allowlist": key.ip_allowlist.entries(),
        "expires_at": key.expires_at.map(rfc3339),
        "revoked_at": key.revoked_at.map(rfc3339),
        "last_used_at": key.last_used_at.map(rfc3339),
        "created_at": rfc3339(key.created_at),
    })
}
