//! What the write pipeline ([`crate::prepare_write`]) and field validation both work with: the
//! project and request a write is checked against, and the `unique` checks it leaves to storage.
//!
//! In a module of their own so that `write` (which calls validation) and `validate` (which needs
//! the context and records unique checks) both depend on it instead of on each other.

use serde_json::Value;

use crate::{ContentLocales, FieldName, HashKey, LocaleCode};

/// What a write needs to know about the project and the request.
#[derive(Debug, Clone, Copy)]
pub struct WriteContext<'a> {
    pub locales: &'a ContentLocales,
    /// The request's `locale` (the default locale when the request named none): plain values of
    /// translatable fields are stored under it.
    pub locale: &'a LocaleCode,
    pub hash_key: &'a HashKey,
}

/// A `unique` rule to verify against other items, inside the write transaction.
#[derive(Debug, Clone, PartialEq)]
pub struct UniqueCheck {
    pub field: FieldName,
    /// For translatable fields, the locale whose value must be unique.
    pub locale: Option<LocaleCode>,
    pub value: Value,
}
