//! The project manifest: schema and access as code (`vellum-admin apply` / `export`, and the
//! server's `--demo`).
//!
//! [`apply`] makes the database match a manifest in one transaction: an invalid manifest changes
//! nothing and the error names the offending path (`collections[1].fields[3].type: unknown field
//! type "strng"`). Validation runs in layers: the JSON Schema shipped as
//! `docs/manifest.schema.json` (shape), then the domain crate (field definitions) and the policy
//! crate (roles, rules, key secrets, IP allowlists), then the database (relation targets and
//! granted collections that must exist). Applying the same manifest twice changes nothing.
//! [`export`] writes the current project back as a manifest, without secrets. [`dry_run`] tells
//! what applying a manifest would change in each role's access, and changes nothing.
//!
//! This crate must never hold rules of its own: it translates between the manifest's shape and
//! the library crates, which decide what is valid.

mod apply;
pub mod collection;
mod dry_run;
mod export;
mod path;
mod schema;
mod webhooks;

use std::fmt;

pub use apply::{ApplyReport, apply};
pub use dry_run::{AccessChange, AccessDiff, Direction, RoleDiff, dry_run};
pub use export::export;

/// Why a manifest was refused, with the path of the offending value in the manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invalid {
    /// `collections[1].fields[3].type`; empty for the document itself.
    pub path: String,
    pub message: String,
}

impl fmt::Display for Invalid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.path, self.message)
        }
    }
}

/// Everything [`apply`] and [`export`] can fail with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ManifestError {
    /// The manifest is not valid; nothing was changed.
    #[error("{0}")]
    Invalid(Invalid),
    /// The database failed; the transaction was rolled back.
    #[error(transparent)]
    Storage(#[from] vellum_storage::StorageError),
}

impl ManifestError {
    pub(crate) fn invalid(path: impl Into<String>, message: impl fmt::Display) -> Self {
        Self::Invalid(Invalid {
            path: path.into(),
            message: message.to_string(),
        })
    }
}

impl From<sea_orm::DbErr> for ManifestError {
    fn from(err: sea_orm::DbErr) -> Self {
        Self::Storage(vellum_storage::StorageError::from(err))
    }
}
