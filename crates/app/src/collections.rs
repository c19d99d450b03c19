//! The collections use cases: the collections a role may read, and one with the fields it may
//! read.

use serde_json::Value;
use vellum_policy::CollectionAction;

use crate::actor::Actor;
use crate::error::AppError;
use crate::resources::{collection_resource, collection_summary};

/// Only the collections the role may read; never an error for missing grants.
#[must_use]
pub fn list(actor: &Actor) -> Vec<Value> {
    actor
        .snapshot
        .collections
        .iter()
        .filter(|c| actor.role.may(&c.slug, CollectionAction::Read).allowed)
        .map(|c| collection_summary(c))
        .collect()
}

/// The collection `slug` with the fields the role may read.
///
/// # Errors
/// 404 for an unknown collection, 403 without `read`.
pub fn show(actor: &Actor, slug: &str) -> Result<Value, AppError> {
    let collection = actor.snapshot.collection(slug).ok_or(AppError::NotFound)?;
    let decision = actor.role.may(&collection.slug, CollectionAction::Read);
    if !decision.allowed {
        return Err(decision.into());
    }
    let fields = actor.role.field_policy(&collection.slug);
    Ok(collection_resource(collection, &fields))
}
