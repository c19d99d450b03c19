//! `vellum-admin users create`: creates an admin account, typically the first super-admin of an
//! installation, through the same use case as `POST /users` ([`vellum_app::users`]): the same
//! validation (email unique in any case, the name and password rules, `public` refused) and the
//! same write. An account created here counts as verified.
//!
//! The password is read from stdin (`--password-stdin`, its first line) or from
//! `VELLUM_ADMIN_PASSWORD`, never from a flag: flags end up in shell history and process lists.

use std::io::{BufRead, Read, Write};

use serde_json::json;
use vellum_app::AppError;
use vellum_app::identity::password::PasswordHasher;

use crate::db::open;
use crate::{AdminError, DatabaseArgs};

/// The variable the password is read from without `--password-stdin`.
pub(crate) const PASSWORD_ENV: &str = "VELLUM_ADMIN_PASSWORD";

/// The most bytes read from stdin for a password (the longest allowed is 256 characters).
const MAX_STDIN: u64 = 4096;

/// Arguments of `users`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(subcommand)]
    command: UsersCommand,
}

impl Args {
    /// Every `users` command changes the project.
    pub(crate) fn writes(&self) -> bool {
        true
    }
}

#[derive(Debug, clap::Subcommand)]
enum UsersCommand {
    /// Create an admin account (verified) and print `{"id", "email"}`.
    #[command(
        long_about = "Create an admin account holding the given roles and print {\"id\", \
            \"email\"} on stdout. The account counts as verified. The password is read from \
            stdin with --password-stdin (its first line), otherwise from VELLUM_ADMIN_PASSWORD; \
            it must be 8 to 256 characters. The email must not be used by another account, in \
            any case; the role public cannot be assigned.",
        after_help = "Example:\n  printf '%s\\n' \"$PASSWORD\" | vellum-admin users create \
            --email admin@example.com --name Admin --role super-admin --password-stdin"
    )]
    Create(CreateArgs),
}

#[derive(Debug, clap::Args)]
struct CreateArgs {
    /// The account's email (unique, in any case).
    #[arg(long)]
    email: String,
    /// The account's display name.
    #[arg(long)]
    name: String,
    /// A role the account holds directly (e.g. `super-admin`); repeat for several.
    #[arg(long = "role", value_name = "ROLE")]
    roles: Vec<String>,
    /// Read the password from stdin (its first line) instead of VELLUM_ADMIN_PASSWORD.
    #[arg(long)]
    password_stdin: bool,
}

/// Runs `users …`: JSON on `out`, notes for people on `log`. The password comes from `stdin`
/// (with `--password-stdin`) or `env_password`.
pub(crate) async fn run(
    database: &DatabaseArgs,
    args: &Args,
    stdin: &mut impl BufRead,
    env_password: Option<String>,
    out: &mut impl Write,
    log: &mut impl Write,
) -> Result<(), AdminError> {
    match &args.command {
        UsersCommand::Create(create_args) => {
            create(database, create_args, stdin, env_password, out, log).await
        }
    }
}

async fn create(
    database: &DatabaseArgs,
    args: &CreateArgs,
    stdin: &mut impl BufRead,
    env_password: Option<String>,
    out: &mut impl Write,
    log: &mut impl Write,
) -> Result<(), AdminError> {
    let password = if args.password_stdin {
        let mut line = String::new();
        stdin
            .take(MAX_STDIN)
            .read_line(&mut line)
            .map_err(|e| AdminError::InvalidArgument {
                flag: "--password-stdin",
                message: format!("could not read the password from stdin: {e}"),
            })?;
        line.trim_end_matches(['\n', '\r']).to_owned()
    } else {
        env_password.ok_or(AdminError::InvalidArgument {
            flag: "--password-stdin",
            message: format!("no password: pass --password-stdin or set {PASSWORD_ENV}"),
        })?
    };
    let body = json!({
        "name": args.name,
        "email": args.email,
        "password": password,
        "roles": args.roles,
        "email_verified": true,
    });
    let db = open(database).await?;
    let hasher = PasswordHasher::new(1).map_err(AdminError::App)?;
    let user = vellum_app::users::create_as_operator(&db, &hasher, &body)
        .await
        .map_err(invalid_flags)?;
    let _ = writeln!(
        log,
        "vellum-admin: created user {} <{}> with roles [{}]",
        user.id,
        user.email.as_deref().unwrap_or_default(),
        user.roles.join(", ")
    );
    writeln!(out, "{}", json!({"id": user.id, "email": user.email})).map_err(AdminError::Output)
}

/// A validation failure as the flags' problems (`--email: The email has already been taken.`);
/// anything else as it is.
fn invalid_flags(err: AppError) -> AdminError {
    let AppError::Invalid(errors) = err else {
        return AdminError::App(err);
    };
    let lines: Vec<String> = errors
        .iter()
        .map(|(field, messages)| {
            let flag = match field.split('.').next().unwrap_or(field) {
                "email" => "--email",
                "name" => "--name",
                "roles" => "--role",
                "password" => "password",
                other => other,
            };
            format!("{flag}: {}", messages.join(" "))
        })
        .collect();
    AdminError::Invalid(lines.join("; "))
}

#[cfg(test)]
mod tests {
    use vellum_domain::ValidationErrors;

    use super::*;

    #[test]
    fn validation_errors_name_the_flags() {
        let mut errors = ValidationErrors::new();
        errors.add("email", "The email has already been taken.");
        errors.add("roles", "The public role cannot be assigned.");
        let err = invalid_flags(AppError::Invalid(errors));
        assert_eq!(
            err.to_string(),
            "--email: The email has already been taken.; --role: The public role cannot be \
             assigned."
        );
    }
}
