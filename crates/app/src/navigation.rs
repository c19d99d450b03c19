//! The admin app's areas a principal may open: what the web UI's navigation lists. The decision
//! is the same permission check each area's own use case makes first, so a link is shown exactly
//! when following it would not answer 403.

use serde::Serialize;

use crate::principal::Principal;

/// One area of the admin app.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Area {
    /// A stable key (for the page to mark the current area).
    pub key: &'static str,
    pub label: &'static str,
    pub href: &'static str,
    /// The heading the area is listed under.
    pub group: &'static str,
}

/// Every area, in the order the navigation lists them, with the permission that opens it.
const AREAS: [(Area, &str); 14] = [
    (
        area("dashboard", "Dashboard", "/", "Content"),
        "can-show-dashboard",
    ),
    (
        area("collections", "Collections", "/collections", "Content"),
        "can-show-collections",
    ),
    (
        area("files", "Files", "/files", "Content"),
        "can-show-files",
    ),
    (area("chat", "Chat", "/chat", "Content"), "can-show-chat"),
    (area("ai", "AI chat", "/ai", "Content"), "can-use-ai"),
    (area("users", "Users", "/users", "People"), "can-show-users"),
    (
        area("groups", "Groups", "/groups", "People"),
        "can-show-groups",
    ),
    (
        area("roles", "Roles", "/settings/roles", "Settings"),
        "can-show-roles",
    ),
    (
        area("api-keys", "API keys", "/settings/api-keys", "Settings"),
        "can-show-api-keys",
    ),
    (
        area("project", "Project", "/settings/project", "Settings"),
        "can-manage-project-settings",
    ),
    (
        area("webhooks", "Webhooks", "/settings/webhooks", "Settings"),
        crate::webhooks::PERMISSION,
    ),
    (
        area(
            "permissions",
            "Permissions",
            "/settings/permissions",
            "Settings",
        ),
        "can-show-permissions",
    ),
    (
        area("activity", "Activity", "/activity-logs", "Settings"),
        "can-show-activity-logs",
    ),
    (area("jobs", "Jobs", "/jobs", "Settings"), "can-show-jobs"),
];

const fn area(
    key: &'static str,
    label: &'static str,
    href: &'static str,
    group: &'static str,
) -> Area {
    Area {
        key,
        label,
        href,
        group,
    }
}

/// The areas `principal` may open, in navigation order.
#[must_use]
pub fn areas(principal: &Principal) -> Vec<Area> {
    AREAS
        .iter()
        .filter(|(_, permission)| principal.access.permissions.check(permission).allowed)
        .map(|(area, _)| *area)
        .collect()
}
