//! `vellum-admin explain`: what the policy decides for a role, a collection and an action, and
//! why; with `--item`, whether the role's item filter admits that item.
//!
//! Every answer is the policy crate's own ([`Role::may`], [`Role::field_policy`],
//! [`Role::authorize_item_write`], [`Role::may_see_item`]): this module loads what they need and
//! prints their [`Decision`]s, it never decides anything itself.

use std::io::Write;

use serde_json::{Value as Json, json};
use vellum_policy::{CollectionAction, Decision, Reason, Role};
use vellum_storage::collections;
use vellum_storage::items::{self, FilterScope};
use vellum_storage::model::Collection;
use vellum_storage::{Database, StorageError, project, roles};

use crate::db::open;
use crate::{AdminError, DatabaseArgs};

/// The `--help` text of `explain` (set on its `Command` variant, whose doc comment would
/// otherwise replace a `long_about` given here).
pub(crate) const LONG_ABOUT: &str = "Explain the access decision for ROLE doing ACTION on \
    collection SLUG: allowed or denied, and the rule that decided (super-admin, the collection \
    grant). Also lists the fields the role's field rules deny for that action and the role's \
    item filter. With --item ID, also loads that item and reports whether the role may see it \
    (read grant and item filter, evaluated on the item's data in the default locale). \
    Human-readable by default; --json for machines.";

/// Arguments of `explain`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  vellum-admin explain --role editor --collection articles \
        --action update\n  vellum-admin explain --role public --collection articles --action \
        read --item 42 --json"
)]
pub(crate) struct Args {
    /// The role to explain.
    #[arg(long)]
    role: String,
    /// The collection's slug.
    #[arg(long, value_name = "SLUG")]
    collection: String,
    /// One of read, create, update, delete.
    #[arg(long, value_parser = CollectionAction::parse)]
    action: CollectionAction,
    /// Also check this item against the role's item filter.
    #[arg(long, value_name = "ID")]
    item: Option<i64>,
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
    let db = open(database).await?;
    let role =
        roles::load_role(&db, &args.role)
            .await?
            .ok_or_else(|| AdminError::InvalidArgument {
                flag: "--role",
                message: format!("no role named \"{}\"", args.role),
            })?;
    let collection = collections::collection_by_slug(&db, &args.collection)
        .await?
        .ok_or_else(|| AdminError::InvalidArgument {
            flag: "--collection",
            message: format!("no collection \"{}\"", args.collection),
        })?;
    let slug = &collection.slug;
    let decision = role.may(slug, args.action);
    let denied_fields = denied_fields(&role, &collection, args.action);
    let item_filter = role
        .grant(slug)
        .filter(|_| role.item_filter(slug).is_some())
        .and_then(|g| g.to_json().pointer("/rules/item_filter").cloned());
    let item = match args.item {
        Some(id) => Some((id, item_decision(&db, &role, &collection, id).await?)),
        None => None,
    };

    let text = if args.json {
        let mut report = json!({
            "role": role.name,
            "collection": slug.as_str(),
            "action": args.action.as_str(),
            "allowed": decision.allowed,
            "rule": rule(&decision.reason),
            "reason": reason(&decision),
            "denied_fields": denied_fields,
            "item_filter": item_filter,
        });
        if let (Some((id, seen)), Json::Object(obj)) = (&item, &mut report) {
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
        let mut text = format!(
            "role \"{}\" {} on \"{}\": {decision}\n",
            role.name, args.action, slug
        );
        if !denied_fields.is_empty() {
            text.push_str(&format!(
                "field rules deny {} on: {}\n",
                args.action,
                denied_fields.join(", ")
            ));
        }
        if let Some(filter) = &item_filter {
            text.push_str(&format!("item filter: {filter}\n"));
        }
        if let Some((id, seen)) = &item {
            text.push_str(&format!("item {id}: visible to the role? {seen}\n"));
        }
        text
    };
    out.write_all(text.as_bytes()).map_err(AdminError::Output)
}

/// The fields of the collection the role's field rules deny for `action`: hidden from reads, or
/// refused in the `data` of a create or update. Empty when the action itself is denied (the
/// grant decides first) and for delete.
fn denied_fields(role: &Role, collection: &Collection, action: CollectionAction) -> Vec<String> {
    match action {
        CollectionAction::Read => role
            .field_policy(&collection.slug)
            .hidden()
            .map(ToString::to_string)
            .collect(),
        CollectionAction::Create | CollectionAction::Update => {
            let names = collection.fields.iter().map(|f| f.def.name.as_str());
            match role.authorize_item_write(&collection.slug, action, names) {
                Err(Decision {
                    reason: Reason::FieldRules { fields, .. },
                    ..
                }) => fields.iter().map(ToString::to_string).collect(),
                _ => Vec::new(),
            }
        }
        CollectionAction::Delete => Vec::new(),
    }
}

/// Whether the role sees item `id`: loaded regardless of any filter, flattened to the default
/// locale as the read path compares, then judged by [`Role::may_see_item`].
async fn item_decision(
    db: &Database,
    role: &Role,
    collection: &Collection,
    id: i64,
) -> Result<Decision, AdminError> {
    let locales = project::load_settings(db)
        .await?
        .locales()
        .map_err(|e| StorageError::Corrupt(format!("settings: {e}")))?;
    let locale = locales.default_locale().clone();
    let scope = FilterScope {
        schema: collection.schema(),
        locales: &locales,
        locale: &locale,
    };
    let item = items::get_item(db, collection, &scope, id, None)
        .await?
        .ok_or_else(|| AdminError::InvalidArgument {
            flag: "--item",
            message: format!("no item {id} in collection \"{}\"", collection.slug),
        })?;
    Ok(items::with_role_view(collection, &locales, &item, |item| {
        role.may_see_item(&collection.slug, item)
    }))
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
    }
}

/// The decision's explanation without its leading verdict (`allowed: ` / `denied: `), which the
/// JSON carries as `allowed`.
fn reason(decision: &Decision) -> String {
    let text = decision.to_string();
    text.split_once(": ")
        .map_or_else(|| text.clone(), |(_, why)| why.to_owned())
}
