//! An item as a role's public API shows it (`GET …/items/{item}/preview-as-role?role=NAME`):
//! whether the role reads it, the payload it gets, and the policy's explanation (the grant, the
//! item filter, the fields its rules remove, the expansions it gets in a lesser form).

use askama::Template;
use vellum_app::admin_items::Preview;
use vellum_app::principal::Principal;

use crate::chrome::Chrome;

#[derive(Debug, Clone, Template)]
#[template(path = "preview.html")]
pub struct PreviewPage {
    pub chrome: Chrome,
    pub collection_name: String,
    pub id: i64,
    pub item_href: String,
    pub roles: Vec<String>,
    pub role: String,
    pub shown: Option<Shown>,
}

/// What the preview found for the chosen role.
#[derive(Debug, Clone)]
pub struct Shown {
    pub readable: bool,
    /// The payload as indented JSON (empty when the role may not read the item).
    pub payload: String,
    pub grant: String,
    pub item: String,
    /// The item filter as configured (JSON) and whether the item passes it.
    pub item_filter: Option<(String, Option<bool>)>,
    pub redacted_fields: Vec<String>,
    pub downgraded: Vec<String>,
}

impl PreviewPage {
    /// The page for `preview` (none when no role was chosen yet).
    #[must_use]
    pub fn new(
        principal: &Principal,
        collection_name: String,
        item_href: String,
        id: i64,
        roles: Vec<String>,
        preview: Option<Preview>,
    ) -> Self {
        let role = preview.as_ref().map(|p| p.role.clone()).unwrap_or_default();
        let shown = preview.map(|p| {
            let e = p.explanation;
            Shown {
                readable: p.readable,
                payload: p
                    .payload
                    .and_then(|raw| serde_json::from_str::<serde_json::Value>(raw.get()).ok())
                    .and_then(|v| serde_json::to_string_pretty(&v).ok())
                    .unwrap_or_default(),
                grant: e.grant.reason,
                item: e.item.reason,
                item_filter: e
                    .item_filter
                    .filter
                    .map(|f| (f.to_string(), e.item_filter.passes)),
                redacted_fields: e.redacted_fields,
                downgraded: e
                    .downgraded_expansions
                    .into_iter()
                    .map(|d| match d.id {
                        Some(id) => format!("{} ({id}): {} — {}", d.field, d.outcome, d.reason),
                        None => format!("{}: {} — {}", d.field, d.outcome, d.reason),
                    })
                    .collect(),
            }
        });
        Self {
            chrome: Chrome::new(principal, "collections"),
            collection_name,
            id,
            item_href,
            roles,
            role,
            shown,
        }
    }
}
