//! `vellum-admin explain`: what the policy decides for a role, a collection and an action, and
//! why; with `--item`, whether the role's item filter admits that item. With `--dry-run FILE`,
//! what applying a manifest would change in every role's access instead.
//!
//! The explanation is the application layer's ([`vellum_app::explain::item`]), over the same
//! snapshot and item view the server's requests use, so the two cannot disagree; the dry run is
//! the manifest crate's ([`vellum_manifest::dry_run`]: `apply` itself, inside a transaction that
//! is always rolled back). This module only prints their answers.

use std::io::Write;
use std::path::PathBuf;

use serde_json::{Value as Json, json};
use vellum_app::{AppConfig, AppError, AppState};
use vellum_policy::{CollectionAction, Decision, Reason};

use crate::db::open;
use crate::{AdminError, DatabaseArgs};

/// The `--help` text of `explain` (set on its `Command` variant, whose doc comment would
/// otherwise replace a `long_about` given here).
pub(crate) const LONG_ABOUT: &str = "Explain the access decision for ROLE doing ACTION on \
    collection SLUG: allowed or denied, and the rule that decided (super-admin, the collection \
    grant). Also lists the fields the role's field rules deny for that action and the role's \
    item filter. With --item ID, also loads that item and reports whether the role may see it \
    (read grant and item filter, evaluated on the item's data in the default locale). \
    With --dry-run MANIFEST, instead tells what applying that manifest would change for every \
    role: grants gained or lost per collection and action, fields gained or lost, item filter \
    changes with the items that become visible or invisible, files matrix flags; the manifest \
    is applied inside a transaction that is always rolled back, so nothing is written. \
    Human-readable by default; --json for machines.";

/// Arguments of `explain`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  vellum-admin explain --role editor --collection articles \
        --action update\n  vellum-admin explain --role public --collection articles --action \
        read --item 42 --json\n  vellum-admin explain --dry-run project.json"
)]
pub(crate) struct Args {
    /// The role to explain.
    #[arg(long, required_unless_present = "dry_run")]
    role: Option<String>,
    /// The collection's slug.
    #[arg(long, value_name = "SLUG", required_unless_present = "dry_run")]
    collection: Option<String>,
    /// One of read, create, update, delete.
    #[arg(long, value_parser = CollectionAction::parse, required_unless_present = "dry_run")]
    action: Option<CollectionAction>,
    /// Also check this item against the role's item filter.
    #[arg(long, value_name = "ID", conflicts_with = "dry_run")]
    item: Option<i64>,
    /// Tell what applying MANIFEST would change in every role's access; writes nothing.
    #[arg(
        long,
        requires = "manifest",
        conflicts_with_all = ["role", "collection", "action"]
    )]
    dry_run: bool,
    /// The manifest (JSON) for --dry-run, as `apply` takes it; `-` reads standard input.
    #[arg(value_name = "MANIFEST", requires = "dry_run")]
    manifest: Option<PathBuf>,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

/// Runs `explain`: the explanation on `out`.
pub(crate) async fn run(
    database: &DatabaseArgs,
    args: &Args,
    out: &mut impl Write,
    _log: &mut impl Write,
) -> Result<(), AdminError> {
    let (Some(role), Some(collection), Some(action)) = (&args.role, &args.collection, args.action)
    else {
        return match &args.manifest {
            Some(path) => dry_run(database, path, args.json, out).await,
            None => Err(AdminError::Invalid(
                "--dry-run needs a manifest file".to_owned(),
            )),
        };
    };
    let db = open(database).await?;
    let state = AppState::new(db, AppConfig::default()).await?;
    let explained = vellum_app::explain::item(&state, role, collection, action, args.item)
        .await
        .map_err(invalid_argument)?;
    let slug = &explained.collection;
    let decision = &explained.decision;
    let denied_fields = &explained.denied_fields;
    let item_filter = &explained.item_filter;
    let item = &explained.item;
    let role = &explained.role;

    let text = if args.json {
        let mut report = json!({
            "role": role,
            "collection": slug.as_str(),
            "action": action.as_str(),
            "allowed": decision.allowed,
            "rule": rule(&decision.reason),
            "reason": reason(decision),
            "denied_fields": denied_fields,
            "item_filter": item_filter,
        });
        if let (Some((id, seen)), Json::Object(obj)) = (item, &mut report) {
            obj.insert(
                "item".into(),
                json!({
                    "id": id,
                    "allowed": seen.allowed,
                    "rule": rule(&seen.reason),
                    "reason": reason(seen),
                }),
            );
        }
        format!("{report}\n")
    } else {
        let mut text = format!("role \"{role}\" {action} on \"{slug}\": {decision}\n");
        if !denied_fields.is_empty() {
            text.push_str(&format!(
                "field rules deny {} on: {}\n",
                action,
                denied_fields.join(", ")
            ));
        }
        if let Some(filter) = item_filter {
            text.push_str(&format!("item filter: {filter}\n"));
        }
        if let Some((id, seen)) = item {
            text.push_str(&format!("item {id}: visible to the role? {seen}\n"));
        }
        text
    };
    out.write_all(text.as_bytes()).map_err(AdminError::Output)
}

/// `--dry-run`: the manifest applied in a transaction that is rolled back, and what it would
/// change in each role's access: one sentence per change, or the JSON form. Exits 0 whether or
/// not anything would change.
async fn dry_run(
    database: &DatabaseArgs,
    path: &PathBuf,
    as_json: bool,
    out: &mut impl Write,
) -> Result<(), AdminError> {
    let manifest = crate::apply::read(path)?;
    let db = open(database).await?;
    let diff = vellum_manifest::dry_run(&db, &manifest).await?;
    let text = if as_json {
        format!("{}\n", diff.to_json())
    } else {
        diff.sentences().iter().map(|s| format!("{s}\n")).collect()
    };
    out.write_all(text.as_bytes()).map_err(AdminError::Output)
}

/// What does not exist names the flag that named it; anything else is the database's.
fn invalid_argument(err: AppError) -> AdminError {
    match err {
        AppError::Invalid(errors) => {
            let (field, messages) = errors.into_map().into_iter().next().unwrap_or_default();
            AdminError::InvalidArgument {
                flag: match field.as_str() {
                    "role" => "--role",
                    "collection" => "--collection",
                    _ => "--item",
                },
                message: messages.join(" "),
            }
        }
        other => AdminError::App(other),
    }
}

/// A stable name for the rule behind a decision, for scripts.
fn rule(reason: &Reason) -> &'static str {
    match reason {
        Reason::SuperAdmin => "super_admin",
        Reason::CollectionGrant { .. } => "collection_grant",
        Reason::FieldRules { .. } => "field_rules",
        Reason::ItemFilter { .. } => "item_filter",
        Reason::FileGrant { .. } => "file_grant",
        Reason::FileVisibility { .. } => "file_visibility",
        Reason::RoleRule { .. } => "role_rule",
        Reason::AdminPermission { .. } => "admin_permission",
    }
}

/// The decision's explanation without its leading verdict (`allowed: ` / `denied: `), which the
/// JSON carries as `allowed`.
fn reason(decision: &Decision) -> String {
    let text = decision.to_string();
    text.split_once(": ")
        .map_or_else(|| text.clone(), |(_, why)| why.to_owned())
}
