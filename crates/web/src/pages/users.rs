//! The users list (`GET /users`): search, the trash view, pages of 15.

use askama::Template;
use vellum_app::principal::Principal;
use vellum_app::users::UserPage;

use crate::chrome::Chrome;
use crate::format::when;
use crate::paging::{Pager, param};

#[derive(Debug, Clone, Template)]
#[template(path = "users.html")]
pub struct UsersPage {
    pub chrome: Chrome,
    pub rows: Vec<UserRow>,
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

/// One user as the table shows it.
#[derive(Debug, Clone)]
pub struct UserRow {
    pub id: i64,
    pub name: String,
    pub email: String,
    pub roles: String,
    pub groups: String,
    pub created: String,
    pub verified: bool,
}

impl UsersPage {
    /// The page for `list`, answered for the raw `query` (already validated by the use case).
    #[must_use]
    pub fn new(principal: &Principal, list: UserPage, query: &str) -> Self {
        let search = param(query, "search").unwrap_or_default();
        let trashed = param(query, "trashed").as_deref() == Some("only");
        Self {
            chrome: Chrome::new(principal, "users"),
            total: list.meta.total,
            pager: Pager::new("/users", query, list.meta.current_page, list.meta.last_page),
            rows: list
                .data
                .into_iter()
                .map(|u| UserRow {
                    id: u.id,
                    name: u.name,
                    email: u.email.unwrap_or_default(),
                    roles: u.roles.join(", "),
                    groups: u
                        .groups
                        .into_iter()
                        .map(|g| g.name)
                        .collect::<Vec<_>>()
                        .join(", "),
                    created: when(u.created_at),
                    verified: u.email_verified_at.is_some(),
                })
                .collect(),
            search,
            trashed,
            can_create: principal.may("can-create-users"),
            can_edit: principal.may("can-edit-users"),
            can_restore: principal.may("can-restore-users"),
            can_force_delete: principal.may("can-force-delete-users"),
        }
    }
}
