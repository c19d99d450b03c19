//! The collections (`GET /collections`): each with its fields and live items, linking to its
//! items.

use askama::Template;
use vellum_app::principal::Principal;
use vellum_app::schema::collections::CollectionOverview;

use crate::chrome::Chrome;

#[derive(Debug, Clone, Template)]
#[template(path = "collections.html")]
pub struct CollectionsPage {
    pub chrome: Chrome,
    pub rows: Vec<CollectionOverview>,
}

impl CollectionsPage {
    #[must_use]
    pub fn new(principal: &Principal, rows: Vec<CollectionOverview>) -> Self {
        Self {
            chrome: Chrome::new(principal, "collections"),
            rows,
        }
    }
}
