//! Admin permissions: what a signed-in user may do in the admin app. The names come from the
//! catalog ([`crate::PERMISSIONS`]); a user holds the union over the roles assigned to it directly
//! and through its groups, and `super-admin` passes every check. The collection and file matrices
//! of those roles do not widen admin routes (admin contract).

use std::collections::BTreeSet;

use crate::catalog::{SystemRole, is_permission};
use crate::{Decision, Reason};

/// The admin permissions of one user, computed from its roles.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AdminPermissions {
    super_admin: bool,
    names: BTreeSet<String>,
}

impl AdminPermissions {
    /// The union over `roles` (role name, that role's permission names). Names outside the
    /// catalog are dropped: no such permission may exist, so none may grant anything.
    pub fn from_roles<'a>(roles: impl IntoIterator<Item = (&'a str, &'a [String])>) -> Self {
        let mut out = Self::default();
        for (role, permissions) in roles {
            if role == SystemRole::SuperAdmin.name() {
                out.super_admin = true;
            }
            out.names
                .extend(permissions.iter().filter(|p| is_permission(p)).cloned());
        }
        out
    }

    /// Whether the user may do what `permission` gates.
    pub fn check(&self, permission: &'static str) -> Decision {
        if self.super_admin {
            return Decision::allow(Reason::SuperAdmin);
        }
        Decision::new(
            self.names.contains(permission),
            Reason::AdminPermission { permission },
        )
    }

    #[must_use]
    pub fn is_super_admin(&self) -> bool {
        self.super_admin
    }

    /// The permission names the user holds, sorted: every catalog name for `super-admin`.
    #[must_use]
    pub fn names(&self) -> Vec<String> {
        if self.super_admin {
            return crate::PERMISSIONS
                .iter()
                .map(|p| (*p).to_owned())
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect();
        }
        self.names.iter().cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn perms(names: &[&str]) -> Vec<String> {
        names.iter().map(|n| (*n).to_owned()).collect()
    }

    #[test]
    fn union_over_roles_and_super_admin_bypass() {
        let reader = perms(&["can-show-users"]);
        let editor = perms(&["can-edit-users", "can-be-evil"]);
        let p = AdminPermissions::from_roles([("reader", &reader[..]), ("editor", &editor[..])]);
        assert!(p.check("can-show-users").allowed);
        assert!(p.check("can-edit-users").allowed);
        assert!(!p.check("can-delete-users").allowed);
        assert_eq!(p.names(), ["can-edit-users", "can-show-users"]);
        assert_eq!(
            p.check("can-delete-users").to_string(),
            "denied: the user lacks the admin permission can-delete-users"
        );

        let none: Vec<String> = Vec::new();
        let root = AdminPermissions::from_roles([("super-admin", &none[..])]);
        assert!(root.check("can-manage-api-keys").allowed);
        assert_eq!(root.names().len(), crate::PERMISSIONS.len());
        assert!(
            !AdminPermissions::default()
                .check("can-show-dashboard")
                .allowed
        );
    }
}
