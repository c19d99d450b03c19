//! Vellum's access model: every "may this actor do that?" decision, in one embeddable place.
//!
//! Given plain data (a [`Role`] with its grants, an [`OriginAllowlist`], a [`KeyRecord`], an item's
//! values), the functions here answer exactly as the Vellum server does: which collections and
//! fields a role may read or write ([`Role::may`], [`FieldPolicy`]), which items it may see
//! ([`Filter`], shared with the query `filter` parameter), which files it may see and how a file
//! inside an item expands ([`Visibility`], [`FileExpansion`]), whether a request passes the origin
//! gate and its API key checks, in that order ([`authenticate`]), which address it comes from
//! behind trusted reverse proxies ([`client_addr`]), and what CORS answers
//! ([`cors_allow_origin`]). Every decision carries its reason ([`Decision`]) so operators can ask
//! why. Write paths in `vellum-storage` accept only an [`Authorized`] capability that this crate
//! alone constructs, so a handler cannot forget the check.
//!
//! This crate must never perform I/O, be `async`, or depend on a framework: no sea-orm, actix-web,
//! tokio or reqwest (`.ci/run` proves it with `cargo tree`). The clock and the peer address are
//! inputs, never read here; the only ambient resource it touches is the OS random source, in
//! [`ApiKeySecret::generate`].
//!
//! ```
//! use serde_json::json;
//! use vellum_policy::*;
//!
//! let role = Role::from_json("editor", &json!({
//!     "collection_permissions": {"articles": {"read": true, "update": true,
//!         "rules": {"fields": {"internal_notes": {"read": false}},
//!                   "item_filter": {"status": {"_eq": "published"}}}}},
//!     "file_permissions": {"read": true}
//! })).unwrap();
//! let articles = "articles".parse().unwrap();
//! assert!(role.may(&articles, CollectionAction::Read).allowed);
//! assert!(!role.may(&articles, CollectionAction::Delete).allowed);
//!
//! let mut data = json!({"title": "Hi", "status": "draft", "internal_notes": "x"});
//! let data = data.as_object_mut().unwrap();
//! assert!(!role.may_see_item(&articles, &ItemRef::data(data)).allowed);
//! role.field_policy(&articles).redact(data);
//! assert!(!data.contains_key("internal_notes"));
//! ```

mod admin;
mod auth;
mod capability;
mod catalog;
mod client;
mod decision;
mod error;
mod files;
mod filter;
mod grants;
mod keys;
mod origin;
mod rules_json;

pub use admin::AdminPermissions;
pub use auth::{AuthRejection, Authenticated, RequestFacts, authenticate};
pub use capability::{Authorized, FileWrite, ItemWrite};
pub use catalog::{
    PERMISSIONS, READER_PERMISSIONS, RoleKind, RoleOperation, SystemRole, bulk_delete_plan,
    check_role_operation, is_permission,
};
pub use client::{ClientAddr, client_addr};
pub use decision::{Decision, Reason};
pub use error::PolicyError;
pub use files::{FileExpansion, Visibility, effective_visibility};
pub use filter::{
    Condition, Filter, FilterField, FilterOp, ItemRef, MAX_CONDITIONS, MAX_IN_VALUES,
    MAX_OPERAND_CHARS,
};
pub use grants::{
    CollectionAction, CollectionGrant, FieldPolicy, FieldRule, FileAction, FileGrants, ItemGrant,
    Role, WriteEcho,
};
pub use keys::{ApiKeySecret, IpAllowlist, KeyCheck, KeyDigest, KeyId, KeyRecord, SCANNER_REGEX};
pub use origin::{
    AllowOrigin, BearerState, CorsOrigins, GateDenial, Origin, OriginAllowlist, cors_allow_origin,
    origin_gate,
};
pub use rules_json::{drop_rule_field, item_filter_names, rename_rule_field};
