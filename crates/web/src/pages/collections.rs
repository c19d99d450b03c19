//! The collections (`GET /collections`): each with its fields and live items, linking to its
//! items and its schema; a new collection, empty or from a pack.

use askama::Template;
use vellum_app::principal::Principal;
use vellum_app::schema::collections::CollectionOverview;

use crate::chrome::Chrome;
use crate::forms::FieldErrors;

#[derive(Debug, Clone, Template)]
#[template(path = "collections.html")]
pub struct CollectionsPage {
    pub chrome: Chrome,
    pub rows: Vec<CollectionOverview>,
    pub can_create: bool,
    pub packs: Vec<&'static str>,
    /// The new collection form as typed (after a refusal) and its problems.
    pub draft: (String, String, bool),
    pub errors: FieldErrors,
}

impl CollectionsPage {
    #[must_use]
    pub fn new(
        principal: &Principal,
        rows: Vec<CollectionOverview>,
        packs: &[&'static str],
    ) -> Self {
        Self {
            chrome: Chrome::new(principal, "collections"),
            rows,
            can_create: principal.may("can-create-collections"),
            packs: packs.to_vec(),
            draft: (String::new(), String::new(), false),
            errors: FieldErrors::default(),
        }
    }

    /// The page after a refused new collection.
    #[must_use]
    pub fn with_refusal(mut self, draft: (String, String, bool), errors: FieldErrors) -> Self {
        self.draft = draft;
        self.errors = errors;
        self
    }

    /// Problems of no field of the form.
    #[must_use]
    pub fn other_errors(&self) -> Vec<String> {
        self.errors.others(&["slug", "name"])
    }
}
