//! What the webhooks settings page shows: every webhook (without secrets) and what the create
//! form offers (the events, the project's collections).

use crate::context::AppState;
use crate::error::AppError;
use crate::principal::Principal;

use super::WebhookResource;
use crate::webhook_events::Event;

/// The webhooks page's data.
#[derive(Debug, Clone, PartialEq)]
pub struct WebhooksScreen {
    pub hooks: Vec<WebhookResource>,
    /// Every event name a webhook may subscribe to, in [`Event::ALL`]'s order.
    pub events: Vec<&'static str>,
    /// The project's collections, to limit item events to some of them.
    pub collections: Vec<CollectionChoice>,
}

/// A collection the form offers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CollectionChoice {
    pub slug: String,
    pub name: String,
}

/// [`super::list`] with the create form's options.
///
/// # Errors
/// As [`super::list`].
pub async fn screen(state: &AppState, principal: &Principal) -> Result<WebhooksScreen, AppError> {
    let hooks = super::list(state, principal).await?;
    let snapshot = state.snapshot().await?;
    let collections = snapshot
        .collections
        .iter()
        .map(|c| CollectionChoice {
            slug: c.slug.to_string(),
            name: c.name.clone(),
        })
        .collect();
    Ok(WebhooksScreen {
        hooks,
        events: Event::ALL.iter().map(|e| e.name()).collect(),
        collections,
    })
}
