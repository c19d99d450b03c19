//! `GET /collections/{collection}/items/{item}/preview-as-role?role=NAME`: the item as that
//! role's public API renders it, and why.
//!
//! Nothing here decides: the payload is the public show use case ([`crate::items::show`]) run
//! as the role, so it is exactly the `data` of `GET /api/v1/collections/{c}/items/{id}` for
//! that role (same `locale`, `include_all_translations` and `include`); the explanation is
//! [`crate::explain`]'s, the answer `vellum-admin explain` gives.

use serde::Serialize;
use serde_json::Value as Json;
use vellum_policy::{CollectionAction, Decision};
use vellum_storage::item_admin;

use super::{Target, open};
use crate::actor::Actor;
use crate::context::AppState;
use crate::error::AppError;
use crate::explain::{self, Downgrade, rule_name};
use crate::items::{self, parse_id};
use crate::principal::Principal;
use crate::query::{first, pairs, parse_read};
use crate::render::Rendered;

/// A decision with its rule: `{allowed, rule, reason}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DecisionOut {
    pub allowed: bool,
    /// The rule's short name (`collection_grant`, `item_filter`, `super_admin`, …).
    pub rule: &'static str,
    /// The decision in words.
    pub reason: String,
}

impl From<&Decision> for DecisionOut {
    fn from(decision: &Decision) -> Self {
        Self {
            allowed: decision.allowed,
            rule: rule_name(&decision.reason),
            reason: decision.to_string(),
        }
    }
}

/// The role's item filter on the collection and whether this item passes it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ItemFilterOut {
    /// As configured in the role's grant; null when the role has none.
    pub filter: Option<Json>,
    /// Null when there is no filter or the read grant already denies.
    pub passes: Option<bool>,
}

/// Why the role reads what it reads.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PreviewExplanation {
    /// The read grant on the collection.
    pub grant: DecisionOut,
    /// Whether the role sees this item: the read grant, then the item filter.
    pub item: DecisionOut,
    pub item_filter: ItemFilterOut,
    /// The fields the role's field rules remove from the payload (every field without read).
    pub redacted_fields: Vec<String>,
    /// The expansions `include` asked for that the role gets in a lesser form.
    pub downgraded_expansions: Vec<Downgrade>,
}

/// `{"role", "readable", "payload", "explanation"}`.
#[derive(Debug, Serialize)]
pub struct Preview {
    pub role: String,
    pub readable: bool,
    /// The item resource as the role's public API shows it; null when it may not read it.
    pub payload: Option<Rendered>,
    pub explanation: PreviewExplanation,
}

/// The roles an item can be previewed as (every role, sorted), for the preview's role picker.
///
/// # Errors
/// 403 without `can-show-collections`, the database.
pub async fn preview_roles(
    state: &AppState,
    principal: &Principal,
) -> Result<Vec<String>, AppError> {
    principal.require("can-show-collections")?;
    Ok(state.snapshot().await?.role_names())
}

/// Previews the live item `id` of `slug` as the role the query's `role` names.
///
/// # Errors
/// 403 without `can-show-collections`; 404 for an unknown collection, or an item that does not
/// exist or is in the trash; 422 for a missing or unknown `role` or a bad `locale`; the database.
pub async fn preview(
    state: &AppState,
    principal: &Principal,
    slug: &str,
    id: &str,
    query: &str,
) -> Result<Preview, AppError> {
    let Target { actor, collection } = open(state, principal, "can-show-collections", slug).await?;
    let item_id = parse_id(id)?;
    let snapshot = actor.snapshot;
    let role_name = first(&pairs(query), "role").unwrap_or_default().to_owned();
    let Some(role) = snapshot.existing_role(&role_name) else {
        return Err(AppError::invalid("role", "The selected role is invalid."));
    };
    let read = parse_read(query, &snapshot.locales)?;
    let item = item_admin::find_item(state.db(), &collection, item_id)
        .await?
        .filter(|item| item.deleted_at.is_none())
        .ok_or(AppError::NotFound)?;
    let explained = explain::item(
        state,
        &role_name,
        slug,
        CollectionAction::Read,
        Some(item_id),
    )
    .await?;
    let seen = explained
        .item
        .as_ref()
        .map_or_else(|| explained.decision.clone(), |(_, d)| d.clone());
    let as_role = Actor {
        role: role.clone(),
        user_id: None,
        snapshot: snapshot.clone(),
    };
    let payload = if seen.allowed {
        match items::show(state, &as_role, slug, id, query).await {
            Ok(rendered) => Some(rendered),
            // Changed between the two reads: not readable now.
            Err(AppError::NotFound | AppError::Forbidden(_)) => None,
            Err(other) => return Err(other),
        }
    } else {
        None
    };
    let downgraded_expansions = match payload {
        Some(_) => {
            explain::downgraded_expansions(
                state,
                &snapshot,
                &role,
                &collection,
                &item,
                &read.include,
            )
            .await?
        }
        None => Vec::new(),
    };
    let passes =
        (explained.item_filter.is_some() && explained.decision.allowed).then_some(seen.allowed);
    Ok(Preview {
        role: role.name.clone(),
        readable: payload.is_some(),
        payload,
        explanation: PreviewExplanation {
            grant: DecisionOut::from(&explained.decision),
            item: DecisionOut::from(&seen),
            item_filter: ItemFilterOut {
                filter: explained.item_filter,
                passes,
            },
            // Without the read grant every field is redacted (the policy's field plan says so
            // as a whole, not field by field).
            redacted_fields: if explained.decision.allowed {
                explained.denied_fields
            } else {
                collection
                    .fields
                    .iter()
                    .map(|f| f.def.name.as_str().to_owned())
                    .collect()
            },
            downgraded_expansions,
        },
    })
}
