//! The role editor (`GET /settings/roles/create`, `GET /settings/roles/{role}/edit`): the name,
//! the admin permissions, the collection matrix with each collection's field rules and item
//! filter, the file matrix, and a panel previewing an item as the saved role with the policy's
//! explanation.

use askama::Template;
use serde_json::Value;
use vellum_app::principal::Principal;
use vellum_app::roles::{CollectionFields, PermissionOption, RoleResource};

use crate::chrome::Chrome;
use crate::forms::FieldErrors;
use crate::role_input::{COLLECTION_ACTIONS, FIELD_FLAGS, FILE_ACTIONS};

#[derive(Debug, Clone, Template)]
#[template(path = "role.html")]
pub struct RolePage {
    pub chrome: Chrome,
    pub id: Option<i64>,
    pub name: String,
    /// `public` and `super-admin` keep their names.
    pub name_locked: bool,
    /// `public` holds no admin permission.
    pub public: bool,
    pub super_admin: bool,
    pub permissions: Vec<(i64, String, bool)>,
    pub collections: Vec<GrantRow>,
    /// `(action, checked)` of the file matrix.
    pub files: Vec<(&'static str, bool)>,
    pub errors: FieldErrors,
    pub saved: bool,
}

/// One collection's grant: its actions, field rules and item filter.
#[derive(Debug, Clone)]
pub struct GrantRow {
    pub slug: String,
    pub name: String,
    pub actions: Vec<(&'static str, bool)>,
    /// `(field, [(flag, allowed)])`.
    pub fields: Vec<(String, Vec<(&'static str, bool)>)>,
    pub item_filter: String,
    /// A field rule or an item filter is set (its panel opens).
    pub restricted: bool,
    pub error: Option<String>,
}

impl RolePage {
    /// The editor for `role` (none: a new role) with the form's options; `posted` is the body a
    /// refused save sent, shown again as typed.
    #[must_use]
    pub fn new(
        principal: &Principal,
        role: Option<&RoleResource>,
        posted: Option<&Value>,
        options: &[PermissionOption],
        collections: &[CollectionFields],
        errors: FieldErrors,
        saved: bool,
    ) -> Self {
        let shown: Value = posted.cloned().unwrap_or_else(|| {
            role.map_or(Value::Null, |r| {
                serde_json::json!({
                    "name": r.name,
                    "permission_ids": r.permission_ids,
                    "collection_permissions": r.collection_permissions,
                    "file_permissions": r.file_permissions,
                })
            })
        });
        let name = shown
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let stored_name = role.map(|r| r.name.as_str()).unwrap_or_default();
        let ids: Vec<i64> = shown
            .get("permission_ids")
            .and_then(Value::as_array)
            .map(|ids| ids.iter().filter_map(Value::as_i64).collect())
            .unwrap_or_default();
        let grants = shown.get("collection_permissions");
        let flag =
            |v: Option<&Value>, key: &str| v.and_then(|g| g.get(key)) == Some(&Value::Bool(true));
        Self {
            chrome: Chrome::new(principal, "roles"),
            id: role.map(|r| r.id),
            name_locked: matches!(stored_name, "public" | "super-admin"),
            public: stored_name == "public",
            super_admin: stored_name == "super-admin",
            name,
            permissions: options
                .iter()
                .map(|p| (p.id, p.name.clone(), ids.contains(&p.id)))
                .collect(),
            collections: collections
                .iter()
                .map(|c| {
                    let grant = grants.and_then(|g| g.get(&c.slug));
                    let rules = grant.and_then(|g| g.get("rules"));
                    let field_rules = rules.and_then(|r| r.get("fields"));
                    let item_filter = match rules.and_then(|r| r.get("item_filter")) {
                        None | Some(Value::Null) => String::new(),
                        Some(Value::String(s)) => s.clone(),
                        Some(other) => other.to_string(),
                    };
                    let fields: Vec<(String, Vec<(&'static str, bool)>)> = c
                        .fields
                        .iter()
                        .map(|f| {
                            let rule = field_rules.and_then(|r| r.get(f));
                            let flags = FIELD_FLAGS
                                .iter()
                                .map(|flag| {
                                    let denied = rule.and_then(|r| r.get(*flag))
                                        == Some(&Value::Bool(false));
                                    (*flag, !denied)
                                })
                                .collect();
                            (f.clone(), flags)
                        })
                        .collect();
                    let restricted = !item_filter.is_empty()
                        || fields
                            .iter()
                            .any(|(_, flags)| flags.iter().any(|(_, on)| !on));
                    GrantRow {
                        slug: c.slug.clone(),
                        name: c.name.clone(),
                        actions: COLLECTION_ACTIONS
                            .iter()
                            .map(|a| (*a, flag(grant, a)))
                            .collect(),
                        fields,
                        item_filter,
                        restricted,
                        error: errors
                            .first_under(&format!("collection_permissions.{}", c.slug))
                            .map(str::to_owned),
                    }
                })
                .collect(),
            files: FILE_ACTIONS
                .iter()
                .map(|a| (*a, flag(shown.get("file_permissions"), a)))
                .collect(),
            errors,
            saved,
        }
    }

    /// The collection matrix's columns.
    #[must_use]
    pub fn actions(&self) -> &'static [&'static str] {
        &COLLECTION_ACTIONS
    }

    /// Problems of no part of the form shown next to it.
    #[must_use]
    pub fn other_errors(&self) -> Vec<String> {
        self.errors.others(&[
            "name",
            "permission_ids",
            "collection_permissions",
            "file_permissions",
        ])
    }
}
