use std::fmt;

use vellum_domain::{CollectionSlug, FieldName};

use crate::{CollectionAction, FileAction, Visibility};

/// An access decision and the rule that made it, so "why?" always has an answer (the admin
/// "preview as role" surface, `vellum-admin explain`, logs).
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use]
pub struct Decision {
    pub allowed: bool,
    pub reason: Reason,
}

/// The rule behind a [`Decision`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reason {
    /// `super-admin` bypasses every gate.
    SuperAdmin,
    /// The role's flag for `action` on `collection` (absent counts as false).
    CollectionGrant {
        collection: CollectionSlug,
        action: CollectionAction,
    },
    /// Field rules deny `action` on these fields.
    FieldRules {
        action: CollectionAction,
        fields: Vec<FieldName>,
    },
    /// The role's item filter for the collection admits (or does not admit) the item.
    ItemFilter { collection: CollectionSlug },
    /// The role's flag in the global files matrix.
    FileGrant { action: FileAction },
    /// Reading a file needs `read` when its effective visibility is public, `read_private` when
    /// it is private.
    FileVisibility { visibility: Visibility },
    /// A rule of the permission catalog about system roles.
    RoleRule { role: String, rule: &'static str },
    /// The signed-in user's roles hold (or lack) this admin permission.
    AdminPermission { permission: &'static str },
}

impl Decision {
    pub(crate) fn allow(reason: Reason) -> Self {
        Self {
            allowed: true,
            reason,
        }
    }

    pub(crate) fn deny(reason: Reason) -> Self {
        Self {
            allowed: false,
            reason,
        }
    }

    pub(crate) fn new(allowed: bool, reason: Reason) -> Self {
        Self { allowed, reason }
    }
}

impl fmt::Display for Decision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let verdict = if self.allowed { "allowed" } else { "denied" };
        write!(f, "{verdict}: ")?;
        match &self.reason {
            Reason::SuperAdmin => f.write_str("super-admin bypasses every permission gate"),
            Reason::CollectionGrant { collection, action } => {
                let has = if self.allowed { "has" } else { "lacks" };
                write!(
                    f,
                    "the role {has} the {action} grant on collection \"{collection}\""
                )
            }
            Reason::FieldRules { action, fields } => {
                let names: Vec<&str> = fields.iter().map(FieldName::as_str).collect();
                if self.allowed {
                    write!(f, "field rules allow {action} on every field named")
                } else {
                    write!(f, "field rules deny {action} on: {}", names.join(", "))
                }
            }
            Reason::ItemFilter { collection } => {
                let verb = if self.allowed { "admits" } else { "excludes" };
                write!(
                    f,
                    "the role's item filter on \"{collection}\" {verb} the item"
                )
            }
            Reason::FileGrant { action } => {
                let has = if self.allowed { "has" } else { "lacks" };
                write!(f, "the role {has} the files {action} grant")
            }
            Reason::FileVisibility { visibility } => {
                let needed = match visibility {
                    Visibility::Public => FileAction::Read,
                    Visibility::Private => FileAction::ReadPrivate,
                };
                let has = if self.allowed { "has" } else { "lacks" };
                write!(
                    f,
                    "the file is effectively {visibility}; the role {has} the files {needed} grant"
                )
            }
            Reason::RoleRule { role, rule } => write!(f, "role \"{role}\": {rule}"),
            Reason::AdminPermission { permission } => {
                let has = if self.allowed { "holds" } else { "lacks" };
                write!(f, "the user {has} the admin permission {permission}")
            }
        }
    }
}
