//! The admin permissions (`GET /settings/permissions`): each stored name with how many roles
//! hold it; a sync with the catalog and deletion after a confirmation.

use askama::Template;
use vellum_app::permissions::PermissionResource;
use vellum_app::principal::Principal;

use crate::chrome::Chrome;
use crate::paging::param;

#[derive(Debug, Clone, Template)]
#[template(path = "permissions.html")]
pub struct PermissionsPage {
    pub chrome: Chrome,
    pub rows: Vec<PermissionResource>,
    pub can_sync: bool,
    pub can_delete: bool,
    /// What the last change did, from the URL (`created`/`pruned` counts, or `deleted`).
    pub notice: Option<String>,
}

impl PermissionsPage {
    #[must_use]
    pub fn new(principal: &Principal, rows: Vec<PermissionResource>, query: &str) -> Self {
        let count = |key| param(query, key).and_then(|v| v.parse::<u64>().ok());
        let notice = match (count("created"), param(query, "deleted")) {
            (Some(0), _) => Some("Every permission of the catalog is stored.".to_owned()),
            (Some(n), _) => Some(format!(
                "{n} permission{} of the catalog added.",
                if n == 1 { "" } else { "s" }
            )),
            (None, Some(_)) => Some("Permission deleted: no role holds it any more.".to_owned()),
            (None, None) => None,
        };
        Self {
            chrome: Chrome::new(principal, "permissions"),
            rows,
            can_sync: principal.may("can-edit-permissions"),
            can_delete: principal.may("can-delete-permissions"),
            notice,
        }
    }
}
