//! The roles (`GET /settings/roles`): each with its kind and counts, linking to its editor; new,
//! duplicate and delete (after a confirmation).

use askama::Template;
use vellum_app::paging::Paginated;
use vellum_app::principal::Principal;
use vellum_app::roles::RoleListItem;

use crate::chrome::Chrome;
use crate::paging::{Pager, param};

#[derive(Debug, Clone, Template)]
#[template(path = "roles.html")]
pub struct RolesPage {
    pub chrome: Chrome,
    pub rows: Vec<RoleListItem>,
    pub total: u64,
    pub pager: Pager,
    pub can_create: bool,
    pub can_edit: bool,
    pub can_delete: bool,
    /// "Role deleted." after a deletion (`?deleted=1`).
    pub deleted: bool,
}

impl RolesPage {
    #[must_use]
    pub fn new(principal: &Principal, list: Paginated<RoleListItem>, query: &str) -> Self {
        Self {
            chrome: Chrome::new(principal, "roles"),
            total: list.meta.total,
            pager: Pager::new(
                "/settings/roles",
                query,
                list.meta.current_page,
                list.meta.last_page,
            ),
            rows: list.data,
            can_create: principal.may("can-create-roles"),
            can_edit: principal.may("can-edit-roles"),
            can_delete: principal.may("can-delete-roles"),
            deleted: param(query, "deleted").is_some(),
        }
    }

    /// Whether the role may be duplicated or deleted (`public` and `super-admin` may not; the
    /// use case refuses them too).
    #[must_use]
    pub fn fixed(name: &str) -> bool {
        matches!(name, "public" | "super-admin")
    }
}
