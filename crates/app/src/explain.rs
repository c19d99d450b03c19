//! "Why may (or may not) this role do this?": the decision the policy makes for a role, a
//! collection and an action, the fields its field rules deny, its item filter, whether it
//! sees one item, and which of that item's expansions it gets downgraded. What `vellum-admin explain` prints and the admin app's "preview as role" shows.
//!
//! Every answer is the policy crate's own, over the same snapshot and the same item view the
//! server's requests use ([`crate::Snapshot`], [`vellum_storage::items::with_role_view`]): this
//! module decides nothing itself, so it cannot disagree with the server.

use serde::Serialize;
use serde_json::Value;
use vellum_domain::{CollectionSlug, LocaleSelection, flatten_for_read};
use vellum_policy::{CollectionAction, Decision, FileExpansion, Reason, Role};
use vellum_storage::files::get_files;
use vellum_storage::items::{self, FilterScope};
use vellum_storage::model::Collection;

use crate::context::AppState;
use crate::error::AppError;
use crate::query::Include;
use crate::render::{collect_file_ids, is_expandable, link_targets};
use crate::snapshot::Snapshot;

/// The explanation of one (role, collection, action), and optionally one item.
#[derive(Debug, Clone)]
pub struct Explanation {
    pub role: String,
    pub collection: CollectionSlug,
    pub action: CollectionAction,
    /// The grant's decision and the rule that made it.
    pub decision: Decision,
    /// The fields the role's field rules deny for the action: hidden from reads, or refused in
    /// the data of a create or update. Empty when the grant itself denies, and for delete.
    pub denied_fields: Vec<String>,
    /// The role's item filter on the collection, as configured.
    pub item_filter: Option<Value>,
    /// With an item: its id and whether the role sees it (read grant and item filter).
    pub item: Option<(i64, Decision)>,
}

/// Explains `action` on collection `slug` for the role named `role`; with `item`, also whether
/// the role sees that item.
///
/// # Errors
/// [`AppError::Invalid`] keyed `role`, `collection` or `item` for what does not exist; the
/// database.
pub async fn item(
    state: &AppState,
    role: &str,
    slug: &str,
    action: CollectionAction,
    item: Option<i64>,
) -> Result<Explanation, AppError> {
    let snapshot = state.snapshot().await?;
    let role = snapshot
        .existing_role(role)
        .ok_or_else(|| AppError::invalid("role", format!("no role named \"{role}\"")))?;
    let collection = snapshot
        .collection(slug)
        .ok_or_else(|| AppError::invalid("collection", format!("no collection \"{slug}\"")))?;
    let slug = &collection.slug;
    let item_filter = role
        .grant(slug)
        .filter(|_| role.item_filter(slug).is_some())
        .and_then(|g| g.to_json().pointer("/rules/item_filter").cloned());
    let item = match item {
        Some(id) => Some((
            id,
            item_decision(state, &snapshot, &role, collection, id).await?,
        )),
        None => None,
    };
    Ok(Explanation {
        role: role.name.clone(),
        collection: slug.clone(),
        action,
        decision: role.may(slug, action),
        denied_fields: denied_fields(&role, collection, action),
        item_filter,
        item,
    })
}

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

/// Whether the role sees item `id`: loaded regardless of any filter, then judged on the view
/// every role item filter judges (see [`items::with_role_view`]).
async fn item_decision(
    state: &AppState,
    snapshot: &Snapshot,
    role: &Role,
    collection: &Collection,
    id: i64,
) -> Result<Decision, AppError> {
    let locale = snapshot.locales.default_locale().clone();
    let scope = FilterScope {
        schema: collection.schema(),
        locales: &snapshot.locales,
        locale: &locale,
    };
    let item = items::get_item(state.db(), collection, &scope, id, None)
        .await?
        .ok_or_else(|| {
            AppError::invalid(
                "item",
                format!("no item {id} in collection \"{}\"", collection.slug),
            )
        })?;
    Ok(items::with_role_view(
        collection,
        &snapshot.locales,
        &item,
        |item| role.may_see_item(&collection.slug, item),
    ))
}

/// One expansion `include` asks for that the role gets in a lesser form than the full resource:
/// a relation field its field rules hide (`hidden_field`), a related item it may not see (kept
/// as a lean link, `lean`), a file it may not read (`denied`: `{id, access: 'denied'}`;
/// `hidden`: null or omitted, a private file).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Downgrade {
    pub field: String,
    /// The related item's or file's id; none when the whole field is hidden.
    pub id: Option<i64>,
    pub outcome: &'static str,
    /// The policy's decision, in words.
    pub reason: String,
}

/// The expansions of `item` (of `collection`) that `include` asks for and `role` gets
/// downgraded, judged as the renderer judges them ([`crate::render`]): relation fields by the
/// field rules and, per related item, the read grant and item filter on the role's view; files
/// by the file matrix and their effective visibility. Links to items or files that do not exist
/// stay lean for every role and are not listed.
///
/// # Errors
/// The database.
pub async fn downgraded_expansions(
    state: &AppState,
    snapshot: &Snapshot,
    role: &Role,
    collection: &Collection,
    item: &items::Item,
    include: &Include,
) -> Result<Vec<Downgrade>, AppError> {
    let locales = &snapshot.locales;
    let selection = LocaleSelection::Flatten(locales.default_locale().clone());
    let data = flatten_for_read(collection.schema(), &item.data, &selection, locales);
    let fields = role.field_policy(&collection.slug);
    let mut out = Vec::new();
    for field in collection.schema().fields() {
        let name = field.name.as_str();
        let Some(value) = data.get(name) else {
            continue;
        };
        if include.has_field(name) && is_expandable(field) {
            if !fields.can_read(name) {
                out.push(Downgrade {
                    field: name.to_owned(),
                    id: None,
                    outcome: "hidden_field",
                    reason: format!("the role's field rules hide the field {name}"),
                });
                continue;
            }
            for (cid, iid) in link_targets(field, value) {
                let Some(target) = snapshot.collection_by_id(cid) else {
                    continue;
                };
                let Some(related) = items::items_by_ids(state.db(), cid, &[iid]).await?.pop()
                else {
                    continue;
                };
                let decision = items::with_role_view(target, locales, &related, |view| {
                    role.may_see_item(&target.slug, view)
                });
                if !decision.allowed {
                    out.push(Downgrade {
                        field: name.to_owned(),
                        id: Some(iid),
                        outcome: "lean",
                        reason: decision.to_string(),
                    });
                }
            }
        }
        if include.files && fields.can_read(name) {
            let mut ids = Vec::new();
            collect_file_ids(std::slice::from_ref(field), &data, &mut ids);
            for file in get_files(state.db(), &ids).await? {
                let outcome = match role.file_expansion(file.effective) {
                    FileExpansion::Expanded => continue,
                    FileExpansion::Denied => "denied",
                    FileExpansion::Hidden => "hidden",
                };
                out.push(Downgrade {
                    field: name.to_owned(),
                    id: Some(file.id),
                    outcome,
                    reason: role.may_read_file(file.effective).to_string(),
                });
            }
        }
    }
    Ok(out)
}

/// A short name of the rule behind a decision, for machine readers of an explanation.
#[must_use]
pub fn rule_name(reason: &Reason) -> &'static str {
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
