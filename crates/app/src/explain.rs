//! "Why may (or may not) this role do this?": the decision the policy makes for a role, a
//! collection and an action, the fields its field rules deny, its item filter, and whether it
//! sees one item. What `vellum-admin explain` prints and the admin app's "preview as role" shows.
//!
//! Every answer is the policy crate's own, over the same snapshot and the same item view the
//! server's requests use ([`crate::Snapshot`], [`vellum_storage::items::with_role_view`]): this
//! module decides nothing itself, so it cannot disagree with the server.

use serde_json::Value;
use vellum_domain::CollectionSlug;
use vellum_policy::{CollectionAction, Decision, Reason, Role};
use vellum_storage::items::{self, FilterScope};
use vellum_storage::model::Collection;

use crate::context::AppState;
use crate::error::AppError;
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
