//! The pure domain model of Vellum: what a field is, what its settings mean, and what a valid value
//! looks like.
//!
//! Everything that decides whether item `data` is well formed lives here, so the HTTP layer, the
//! admin CLI and any embedding service agree byte for byte on what is stored: field types parsed from
//! their spec names ([`FieldType`]), typed settings that still keep unknown keys
//! ([`FieldSettings`]), value normalization on write ([`prepare_write`]), validation that reports
//! every problem at once ([`ValidationErrors`]), blocks with their depth limit, locale maps and their
//! flattening on read ([`flatten_for_read`]).
//!
//! This crate must never do I/O, spawn tasks, or know about HTTP, SQL or any framework: it is a set
//! of functions over plain data. Checks that need storage are returned as data for the storage
//! layer to perform: the `unique` rule ([`UniqueCheck`]) and the existence of related items and
//! files ([`references`]).

mod account;
mod convert;
mod display;
mod error;
mod field_type;
mod flag;
mod locale;
mod names;
mod read;
mod refs;
mod schema;
mod settings;
mod translation;
mod validate;
pub mod value;
mod write;
mod write_context;

pub use account::{
    EmailAddress, MAX_EMAIL_LEN, MAX_PASSWORD_CHARS, MAX_USER_NAME_LEN, MIN_PASSWORD_CHARS,
    check_new_password, parse_user_name,
};
pub use convert::{changes_values, convert_value};
pub use display::{check_display, rename_placeholder, template_placeholders};
pub use error::{DomainError, ValidationErrors};
pub use field_type::{FieldType, ValueShape};
pub use flag::is_truthy;
pub use locale::{ContentLocales, LocaleCode, LocaleSelection, LocalizedText};
pub use names::{CollectionSlug, FieldName};
pub use read::flatten_for_read;
pub use refs::{RefTarget, Reference, references};
pub use schema::{CollectionSchema, FieldDef};
pub use settings::{
    BlockType, BlocksSettings, ConditionOperator, ConditionRule, Conditions, DEFAULT_MAX_LINKS,
    DateMode, FieldSettings, GeometryMode, JunctionField, JunctionFieldType, LayoutWidth,
    MAX_LINKS_CEILING, RelationSettings, RuleOperator, TypeSettings, ValidationRule,
};
pub use value::hash::HashKey;
pub use write::{PreparedWrite, WriteMode, prepare_write};
pub use write_context::{UniqueCheck, WriteContext};
