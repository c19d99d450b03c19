//! The admin permission catalog and the rules about system roles. Used by the admin surfaces and
//! `vellum-admin`; API decisions come from the matrices, never from these strings.

use crate::{Decision, Reason};

/// Every permission name that may exist. No other name is ever stored.
pub const PERMISSIONS: [&str; 47] = [
    "can-show-users",
    "can-create-users",
    "can-edit-users",
    "can-delete-users",
    "can-restore-users",
    "can-force-delete-users",
    "can-show-groups",
    "can-create-groups",
    "can-edit-groups",
    "can-delete-groups",
    "can-restore-groups",
    "can-force-delete-groups",
    "can-show-roles",
    "can-create-roles",
    "can-edit-roles",
    "can-delete-roles",
    "can-show-permissions",
    "can-create-permissions",
    "can-edit-permissions",
    "can-delete-permissions",
    "can-show-files",
    "can-create-files",
    "can-edit-files",
    "can-delete-files",
    "can-restore-files",
    "can-force-delete-files",
    "can-download-files",
    "can-favorite-files",
    "can-copy-files",
    "can-replace-files",
    "can-tag-files",
    "can-update-file-metadata",
    "can-show-collections",
    "can-create-collections",
    "can-edit-collections",
    "can-delete-collections",
    "can-restore-collections",
    "can-force-delete-collections",
    "can-show-dashboard",
    "can-show-activity-logs",
    "can-use-ai",
    "can-show-api-keys",
    "can-manage-api-keys",
    "can-show-jobs",
    "can-manage-jobs",
    "can-manage-project-settings",
    "can-show-chat",
];

/// Exactly what the seeded `reader` role holds.
pub const READER_PERMISSIONS: [&str; 8] = [
    "can-show-dashboard",
    "can-show-users",
    "can-show-groups",
    "can-show-roles",
    "can-show-permissions",
    "can-show-files",
    "can-show-collections",
    "can-show-activity-logs",
];

#[must_use]
pub fn is_permission(name: &str) -> bool {
    PERMISSIONS.contains(&name)
}

/// The four seeded roles, which always exist.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SystemRole {
    SuperAdmin,
    Admin,
    Reader,
    Public,
}

impl SystemRole {
    pub const ALL: [Self; 4] = [Self::SuperAdmin, Self::Admin, Self::Reader, Self::Public];

    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::SuperAdmin => "super-admin",
            Self::Admin => "admin",
            Self::Reader => "reader",
            Self::Public => "public",
        }
    }

    #[must_use]
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|r| r.name() == name)
    }

    /// The admin permissions the seeded role holds: all for `admin` and `super-admin`, the read
    /// set for `reader`, none for `public`.
    #[must_use]
    pub fn permissions(self) -> &'static [&'static str] {
        match self {
            Self::SuperAdmin | Self::Admin => &PERMISSIONS,
            Self::Reader => &READER_PERMISSIONS,
            Self::Public => &[],
        }
    }
}

/// How the catalog treats a role by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RoleKind {
    System(SystemRole),
    Custom,
}

impl RoleKind {
    #[must_use]
    pub fn of(name: &str) -> Self {
        SystemRole::from_name(name).map_or(Self::Custom, Self::System)
    }
}

/// Operations on roles that the catalog restricts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RoleOperation {
    Rename,
    Delete,
    Duplicate,
    AssignToUser,
    EditPermissions,
    EditMatrices,
}

/// Whether `operation` is allowed on the role named `role`:
/// - `public`: not renamed, deleted, duplicated or assigned to users; only its two matrices are
///   editable (it holds no admin permissions);
/// - `super-admin`: not renamed, deleted or duplicated;
/// - `admin`, `reader` and custom roles: everything.
pub fn check_role_operation(role: &str, operation: RoleOperation) -> Decision {
    use RoleOperation as Op;
    let rule: Option<&'static str> = match (RoleKind::of(role), operation) {
        (RoleKind::System(SystemRole::Public), Op::Rename) => {
            Some("the public role cannot be renamed")
        }
        (RoleKind::System(SystemRole::Public), Op::Delete) => {
            Some("the public role cannot be deleted")
        }
        (RoleKind::System(SystemRole::Public), Op::Duplicate) => {
            Some("the public role cannot be duplicated")
        }
        (RoleKind::System(SystemRole::Public), Op::AssignToUser) => {
            Some("the public role cannot be assigned to users")
        }
        (RoleKind::System(SystemRole::Public), Op::EditPermissions) => {
            Some("only the public role's collection and file matrices are editable")
        }
        (RoleKind::System(SystemRole::SuperAdmin), Op::Rename) => {
            Some("super-admin cannot be renamed")
        }
        (RoleKind::System(SystemRole::SuperAdmin), Op::Delete) => {
            Some("super-admin cannot be deleted")
        }
        (RoleKind::System(SystemRole::SuperAdmin), Op::Duplicate) => {
            Some("super-admin cannot be duplicated")
        }
        _ => None,
    };
    Decision::new(
        rule.is_none(),
        Reason::RoleRule {
            role: role.to_owned(),
            rule: rule.unwrap_or("allowed by the role rules"),
        },
    )
}

/// Splits a bulk delete into the roles to delete and those skipped (`super-admin` and `public`,
/// which can never be deleted).
#[must_use]
pub fn bulk_delete_plan<'a>(roles: &[&'a str]) -> (Vec<&'a str>, Vec<&'a str>) {
    roles
        .iter()
        .partition(|r| check_role_operation(r, RoleOperation::Delete).allowed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalog_is_exact_and_unique() {
        let mut sorted = PERMISSIONS.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), 47);
        assert!(READER_PERMISSIONS.iter().all(|p| is_permission(p)));
        assert!(!is_permission("can-do-anything"));
        assert_eq!(SystemRole::Admin.permissions().len(), 47);
        assert_eq!(SystemRole::SuperAdmin.permissions().len(), 47);
        assert!(SystemRole::Public.permissions().is_empty());
        assert_eq!(SystemRole::Reader.permissions(), READER_PERMISSIONS);
    }

    /// One row per role rule of the spec.
    #[test]
    fn role_rules() {
        use RoleOperation::*;
        let rows: &[(&str, RoleOperation, bool)] = &[
            ("public", Rename, false),
            ("public", Delete, false),
            ("public", Duplicate, false),
            ("public", AssignToUser, false),
            ("public", EditPermissions, false),
            ("public", EditMatrices, true),
            ("super-admin", Rename, false),
            ("super-admin", Delete, false),
            ("super-admin", Duplicate, false),
            ("super-admin", AssignToUser, true),
            ("admin", Duplicate, true),
            ("admin", Delete, true),
            ("reader", Duplicate, true),
            ("reader", Rename, true),
            ("editor", Duplicate, true),
            ("editor", Delete, true),
            ("editor", AssignToUser, true),
        ];
        for (role, op, allowed) in rows {
            assert_eq!(
                check_role_operation(role, *op).allowed,
                *allowed,
                "{role} {op:?}"
            );
        }
        assert_eq!(
            check_role_operation("public", Delete).to_string(),
            "denied: role \"public\": the public role cannot be deleted"
        );
    }

    #[test]
    fn bulk_delete_skips_protected_roles() {
        let (delete, skip) = bulk_delete_plan(&["editor", "super-admin", "reader", "public"]);
        assert_eq!(delete, ["editor", "reader"]);
        assert_eq!(skip, ["super-admin", "public"]);
    }
}
