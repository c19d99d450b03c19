//! The groups list (`GET /groups`): search, the trash view, pages of 15.

use askama::Template;
use vellum_app::groups::GroupPage;
use vellum_app::principal::Principal;

use crate::chrome::Chrome;
use crate::paging::{Pager, param};

#[derive(Debug, Clone, Template)]
#[template(path = "groups.html")]
pub struct GroupsPage {
    pub chrome: Chrome,
    pub rows: Vec<GroupRow>,
    pub total: u64,
    /// What was searched for (shown in the search field).
    pub search: String,
    /// The trash view (`trashed=only`).
    pub trashed: bool,
    pub pager: Pager,
    pub can_create: bool,
    pub can_edit: bool,
    pub can_restore: bool,
    pub can_force_delete: bool,
}

/// One group as the table shows it.
#[derive(Debug, Clone)]
pub struct GroupRow {
    pub id: i64,
    pub name: String,
    pub roles: String,
    pub members: u64,
}

impl GroupsPage {
    /// The page for `list`, answered for the raw `query` (already validated by the use case).
    #[must_use]
    pub fn new(principal: &Principal, list: GroupPage, query: &str) -> Self {
        Self {
            can_create: principal.may("can-create-groups"),
            can_edit: principal.may("can-edit-groups"),
            can_restore: principal.may("can-restore-groups"),
            can_force_delete: principal.may("can-force-delete-groups"),
            chrome: Chrome::new(principal, "groups"),
            total: list.meta.total,
            pager: Pager::new(
                "/groups",
                query,
                list.meta.current_page,
                list.meta.last_page,
            ),
            rows: list
                .data
                .into_iter()
                .map(|g| GroupRow {
                    id: g.id,
                    name: g.name,
                    roles: g.roles.join(", "),
                    members: g.users_count,
                })
                .collect(),
            search: param(query, "search").unwrap_or_default(),
            trashed: param(query, "trashed").as_deref() == Some("only"),
        }
    }
}
