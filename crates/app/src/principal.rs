//! Who an admin request acts as: a signed-in user, its account and its admin permissions (the
//! union over its direct and group roles; `super-admin` passes every check). Admin use cases take
//! a [`Principal`] as public API use cases take an [`crate::Actor`].

use std::sync::Arc;

use serde::Serialize;
use time::OffsetDateTime;
use vellum_policy::AdminPermissions;
use vellum_storage::accounts::Account;

use crate::error::AppError;

/// The role that passes every check.
pub const SUPER_ADMIN: &str = "super-admin";

/// An account with the permissions its roles give. Remembered per snapshot: every change of
/// users, groups, roles or permissions through the admin app moves the epoch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccountAccess {
    pub account: Account,
    pub permissions: AdminPermissions,
}

impl AccountAccess {
    #[must_use]
    pub fn new(account: Account) -> Self {
        let permissions = AdminPermissions::from_roles(
            account
                .roles
                .iter()
                .map(|(role, permissions)| (role.as_str(), permissions.as_slice())),
        );
        Self {
            account,
            permissions,
        }
    }
}

/// The signed-in user behind an admin request.
#[derive(Debug, Clone)]
pub struct Principal {
    pub access: Arc<AccountAccess>,
    /// The id (token hash) of the session the request came with.
    pub session_id: String,
}

impl Principal {
    #[must_use]
    pub fn user_id(&self) -> i64 {
        self.access.account.id
    }

    /// Passes when the user holds `permission` (or is `super-admin`).
    ///
    /// # Errors
    /// [`AppError::Forbidden`] naming the permission (for the log).
    pub fn require(&self, permission: &'static str) -> Result<(), AppError> {
        let decision = self.access.permissions.check(permission);
        if decision.allowed {
            Ok(())
        } else {
            Err(decision.into())
        }
    }

    /// Passes when the user is `super-admin` or `touches` is false: only a super-admin may grant
    /// `super-admin` (a role, a group holding it, a key bound to it) or change, delete or restore
    /// an account or group that holds it. Without this, any `can-edit-users` holder could set a
    /// super-admin's password, or give itself the role, and so reach every permission.
    ///
    /// # Errors
    /// [`AppError::Forbidden`] with the rule (for the log).
    pub fn require_super_admin_if(&self, touches: bool) -> Result<(), AppError> {
        if !touches || self.access.permissions.is_super_admin() {
            return Ok(());
        }
        Err(AppError::Forbidden(vellum_policy::Reason::RoleRule {
            role: SUPER_ADMIN.to_owned(),
            rule: "only a super-admin may grant super-admin or change what holds it",
        }))
    }

    /// Whether the user holds `permission`.
    #[must_use]
    pub fn may(&self, permission: &'static str) -> bool {
        self.access.permissions.check(permission).allowed
    }

    /// The account as `GET /account` shows it.
    #[must_use]
    pub fn resource(&self) -> AccountResource {
        AccountResource::of(&self.access)
    }
}

/// `GET /account`'s `data`, also the answer of every sign-in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AccountResource {
    pub id: i64,
    pub name: String,
    pub email: Option<String>,
    #[serde(with = "time::serde::rfc3339::option")]
    pub email_verified_at: Option<OffsetDateTime>,
    pub roles: Vec<String>,
    pub permissions: Vec<String>,
}

impl AccountResource {
    #[must_use]
    pub fn of(access: &AccountAccess) -> Self {
        let account = &access.account;
        Self {
            id: account.id,
            name: account.name.clone(),
            email: account.email.clone(),
            email_verified_at: account.email_verified_at,
            roles: account.roles.iter().map(|(name, _)| name.clone()).collect(),
            permissions: access.permissions.names(),
        }
    }
}

/// Whether a request body's `roles` (an array of names) names `super-admin`.
#[must_use]
pub fn names_super_admin(body: &serde_json::Value) -> bool {
    body.get("roles")
        .and_then(serde_json::Value::as_array)
        .is_some_and(|roles| roles.iter().any(|r| r.as_str() == Some(SUPER_ADMIN)))
}

/// The ids of a body's array field (`group_ids`), positive integers only (the rest is the
/// validator's business).
#[must_use]
pub fn body_ids(body: &serde_json::Value, field: &str) -> Vec<i64> {
    body.get(field)
        .and_then(serde_json::Value::as_array)
        .map(|ids| {
            ids.iter()
                .filter_map(serde_json::Value::as_i64)
                .filter(|id| *id > 0)
                .take(1000)
                .collect()
        })
        .unwrap_or_default()
}
