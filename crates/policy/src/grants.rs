//! Grants: the per-collection matrix (create, read, update, delete, with field rules and an item
//! filter) and the global files matrix. A missing grant means deny, everywhere.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde_json::{Map, Value, json};
use vellum_domain::{CollectionSlug, FieldName, is_truthy};

use crate::capability::{Authorized, FileWrite, ItemWrite};
use crate::catalog::SystemRole;
use crate::{Decision, Filter, ItemRef, PolicyError, Reason, Visibility};

/// The four actions of the collection matrix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CollectionAction {
    Create,
    Read,
    Update,
    Delete,
}

impl CollectionAction {
    pub const ALL: [Self; 4] = [Self::Create, Self::Read, Self::Update, Self::Delete];

    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Create => "create",
            Self::Read => "read",
            Self::Update => "update",
            Self::Delete => "delete",
        }
    }

    /// # Errors
    /// When `raw` is not one of `create`, `read`, `update`, `delete`.
    pub fn parse(raw: &str) -> Result<Self, String> {
        Self::ALL
            .into_iter()
            .find(|a| a.as_str() == raw)
            .ok_or_else(|| format!("unknown action \"{raw}\"; use create, read, update or delete"))
    }
}

impl fmt::Display for CollectionAction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The five actions of the global files matrix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FileAction {
    Create,
    Read,
    ReadPrivate,
    Update,
    Delete,
}

impl FileAction {
    pub const ALL: [Self; 5] = [
        Self::Create,
        Self::Read,
        Self::ReadPrivate,
        Self::Update,
        Self::Delete,
    ];

    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Create => "create",
            Self::Read => "read",
            Self::ReadPrivate => "read_private",
            Self::Update => "update",
            Self::Delete => "delete",
        }
    }
}

impl fmt::Display for FileAction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Per-field flags of `rules.fields`. A flag that is absent counts as allowed; `false` denies. The
/// grant's own action flag still applies on top: a field rule never widens a grant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FieldRule {
    pub read: bool,
    pub create: bool,
    pub update: bool,
}

impl FieldRule {
    fn allows(self, action: CollectionAction) -> bool {
        match action {
            CollectionAction::Read => self.read,
            CollectionAction::Create => self.create,
            CollectionAction::Update => self.update,
            CollectionAction::Delete => true,
        }
    }
}

/// One collection's row of the matrix.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CollectionGrant {
    pub create: bool,
    pub read: bool,
    pub update: bool,
    pub delete: bool,
    pub fields: BTreeMap<FieldName, FieldRule>,
    pub item_filter: Option<Filter>,
    /// The filter as written, kept for export and explanation.
    item_filter_json: Option<Value>,
}

impl CollectionGrant {
    #[must_use]
    pub fn allows(&self, action: CollectionAction) -> bool {
        match action {
            CollectionAction::Create => self.create,
            CollectionAction::Read => self.read,
            CollectionAction::Update => self.update,
            CollectionAction::Delete => self.delete,
        }
    }

    /// Parses the manifest shape `{create, read, update, delete, rules: {fields, item_filter}}`.
    /// Flags follow the settings truthiness rule; an absent flag means deny.
    ///
    /// # Errors
    /// An unknown key, a malformed field rule or item filter; the error path starts at `path`.
    pub fn from_json(path: &str, raw: &Value) -> Result<Self, PolicyError> {
        let obj = raw
            .as_object()
            .ok_or_else(|| PolicyError::grant(path, "must be an object of action flags"))?;
        for key in obj.keys() {
            if !matches!(
                key.as_str(),
                "create" | "read" | "update" | "delete" | "rules"
            ) {
                return Err(PolicyError::grant(
                    format!("{path}.{key}"),
                    "unknown key; use create, read, update, delete or rules",
                ));
            }
        }
        let flag = |k: &str| obj.get(k).is_some_and(is_truthy);
        let mut grant = Self {
            create: flag("create"),
            read: flag("read"),
            update: flag("update"),
            delete: flag("delete"),
            ..Self::default()
        };
        let Some(rules) = obj.get("rules").filter(|v| !v.is_null()) else {
            return Ok(grant);
        };
        let rules = rules
            .as_object()
            .ok_or_else(|| PolicyError::grant(format!("{path}.rules"), "must be an object"))?;
        for key in rules.keys() {
            if !matches!(key.as_str(), "fields" | "item_filter") {
                return Err(PolicyError::grant(
                    format!("{path}.rules.{key}"),
                    "unknown key; use fields or item_filter",
                ));
            }
        }
        if let Some(fields) = rules.get("fields").filter(|v| !v.is_null()) {
            let fields = fields.as_object().ok_or_else(|| {
                PolicyError::grant(format!("{path}.rules.fields"), "must be an object")
            })?;
            for (name, rule) in fields {
                let at = format!("{path}.rules.fields.{name}");
                let field =
                    FieldName::parse(name).map_err(|e| PolicyError::grant(&at, e.to_string()))?;
                let rule = rule.as_object().ok_or_else(|| {
                    PolicyError::grant(&at, "must be an object of read/create/update flags")
                })?;
                if let Some(bad) = rule
                    .keys()
                    .find(|k| !matches!(k.as_str(), "read" | "create" | "update"))
                {
                    return Err(PolicyError::grant(
                        format!("{at}.{bad}"),
                        "unknown flag; use read, create or update",
                    ));
                }
                let allowed = |k: &str| rule.get(k).is_none_or(|v| v.is_null() || is_truthy(v));
                grant.fields.insert(
                    field,
                    FieldRule {
                        read: allowed("read"),
                        create: allowed("create"),
                        update: allowed("update"),
                    },
                );
            }
        }
        if let Some(filter) = rules.get("item_filter").filter(|v| !v.is_null()) {
            let parsed = Filter::from_json("item_filter", filter).map_err(|e| {
                PolicyError::grant(format!("{path}.rules.item_filter"), e.to_string())
            })?;
            grant.item_filter = Some(parsed).filter(|f| !f.is_empty());
            grant.item_filter_json = Some(filter.clone());
        }
        Ok(grant)
    }

    /// The manifest shape, for export. Only `true` flags are written (absent means deny).
    #[must_use]
    pub fn to_json(&self) -> Value {
        let mut obj = Map::new();
        for action in CollectionAction::ALL {
            if self.allows(action) {
                obj.insert(action.as_str().into(), Value::Bool(true));
            }
        }
        let mut rules = Map::new();
        if !self.fields.is_empty() {
            let fields: Map<String, Value> = self
                .fields
                .iter()
                .map(|(name, r)| {
                    let mut flags = Map::new();
                    for (k, allowed) in
                        [("read", r.read), ("create", r.create), ("update", r.update)]
                    {
                        if !allowed {
                            flags.insert(k.into(), Value::Bool(false));
                        }
                    }
                    (name.to_string(), Value::Object(flags))
                })
                .collect();
            rules.insert("fields".into(), Value::Object(fields));
        }
        if let Some(filter) = &self.item_filter_json {
            rules.insert("item_filter".into(), filter.clone());
        }
        if !rules.is_empty() {
            obj.insert("rules".into(), Value::Object(rules));
        }
        Value::Object(obj)
    }
}

/// The global files matrix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FileGrants {
    pub create: bool,
    pub read: bool,
    pub read_private: bool,
    pub update: bool,
    pub delete: bool,
}

impl FileGrants {
    #[must_use]
    pub fn allows(&self, action: FileAction) -> bool {
        match action {
            FileAction::Create => self.create,
            FileAction::Read => self.read,
            FileAction::ReadPrivate => self.read_private,
            FileAction::Update => self.update,
            FileAction::Delete => self.delete,
        }
    }

    /// # Errors
    /// When `raw` is not an object of the five flags.
    pub fn from_json(path: &str, raw: &Value) -> Result<Self, PolicyError> {
        let obj = match raw {
            Value::Null => return Ok(Self::default()),
            Value::Object(obj) => obj,
            _ => {
                return Err(PolicyError::grant(
                    path,
                    "must be an object of action flags",
                ));
            }
        };
        if let Some(bad) = obj
            .keys()
            .find(|k| FileAction::ALL.iter().all(|a| a.as_str() != k.as_str()))
        {
            return Err(PolicyError::grant(
                format!("{path}.{bad}"),
                "unknown key; use create, read, read_private, update or delete",
            ));
        }
        let flag = |k: &str| obj.get(k).is_some_and(is_truthy);
        Ok(Self {
            create: flag("create"),
            read: flag("read"),
            read_private: flag("read_private"),
            update: flag("update"),
            delete: flag("delete"),
        })
    }

    #[must_use]
    pub fn to_json(&self) -> Value {
        let mut obj = Map::new();
        for action in FileAction::ALL {
            if self.allows(action) {
                obj.insert(action.as_str().into(), Value::Bool(true));
            }
        }
        Value::Object(obj)
    }
}

/// What the response to a write may show of the resource it wrote: exactly what the same
/// actor's read of it would show ([`WriteEcho::Resource`]), or, where that read would be
/// refused, nothing but its id ([`WriteEcho::IdOnly`], rendered `{"id": …}`). The write itself
/// was allowed by its own grant; its answer must not read past the read grant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteEcho {
    Resource,
    IdOnly,
}

/// A role as the access model sees it: its name, whether it is `super-admin`, and its two
/// matrices. Admin-app permission strings are not needed for API decisions and live in
/// [`crate::PERMISSIONS`].
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Role {
    pub name: String,
    pub collections: BTreeMap<CollectionSlug, CollectionGrant>,
    pub files: FileGrants,
}

/// Which fields of one collection a role may read, and the write rules: the redaction plan.
///
/// A role without the collection's `read` grant reads no field at all: whatever renders an item
/// through this plan (a write's response, an expansion) carries no value, whatever the field
/// rules say. A missing grant means deny here too.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FieldPolicy {
    unrestricted: bool,
    nothing: bool,
    hidden: BTreeSet<FieldName>,
}

impl FieldPolicy {
    /// A plan that hides nothing (super-admin).
    #[must_use]
    pub fn unrestricted() -> Self {
        Self {
            unrestricted: true,
            nothing: false,
            hidden: BTreeSet::new(),
        }
    }

    /// A plan that hides every field (no `read` grant on the collection).
    #[must_use]
    pub fn nothing() -> Self {
        Self {
            unrestricted: false,
            nothing: true,
            hidden: BTreeSet::new(),
        }
    }

    /// Whether the plan hides every field (the role lacks the collection's `read` grant).
    #[must_use]
    pub fn reads_nothing(&self) -> bool {
        self.nothing
    }

    #[must_use]
    pub fn can_read(&self, field: &str) -> bool {
        self.unrestricted || (!self.nothing && !self.hidden.iter().any(|h| h.as_str() == field))
    }

    /// Removes every field the role may not read from a `data` object.
    pub fn redact(&self, data: &mut Map<String, Value>) {
        if self.nothing {
            data.clear();
        } else if !self.unrestricted {
            data.retain(|k, _| !self.hidden.iter().any(|h| h.as_str() == k));
        }
    }

    /// The fields removed by [`FieldPolicy::redact`].
    pub fn hidden(&self) -> impl Iterator<Item = &FieldName> {
        self.hidden.iter()
    }
}

impl Role {
    /// A role from the manifest shape `{collection_permissions: {slug: grant}, file_permissions}`.
    ///
    /// # Errors
    /// A malformed slug, grant or file matrix; the error names its path.
    pub fn from_json(name: &str, raw: &Value) -> Result<Self, PolicyError> {
        let obj = raw
            .as_object()
            .ok_or_else(|| PolicyError::grant("", "a role must be an object"))?;
        let mut role = Self {
            name: name.to_owned(),
            ..Self::default()
        };
        if let Some(perms) = obj.get("collection_permissions").filter(|v| !v.is_null()) {
            let perms = perms.as_object().ok_or_else(|| {
                PolicyError::grant(
                    "collection_permissions",
                    "must be an object keyed by collection slug",
                )
            })?;
            for (slug, grant) in perms {
                let at = format!("collection_permissions.{slug}");
                let slug = CollectionSlug::parse(slug)
                    .map_err(|e| PolicyError::grant(&at, e.to_string()))?;
                role.collections
                    .insert(slug, CollectionGrant::from_json(&at, grant)?);
            }
        }
        role.files = FileGrants::from_json(
            "file_permissions",
            obj.get("file_permissions").unwrap_or(&Value::Null),
        )?;
        Ok(role)
    }

    /// The manifest shape of the two matrices.
    #[must_use]
    pub fn to_json(&self) -> Value {
        let collections: Map<String, Value> = self
            .collections
            .iter()
            .map(|(slug, g)| (slug.to_string(), g.to_json()))
            .collect();
        json!({"collection_permissions": collections, "file_permissions": self.files.to_json()})
    }

    /// The operator's role: `super-admin`, with which provisioning (the manifest, the demo)
    /// acts, so its writes go through the same capabilities as a request's.
    #[must_use]
    pub fn super_admin() -> Self {
        Self {
            name: SystemRole::SuperAdmin.name().to_owned(),
            ..Self::default()
        }
    }

    /// `super-admin` bypasses every gate.
    #[must_use]
    pub fn is_super_admin(&self) -> bool {
        self.name == SystemRole::SuperAdmin.name()
    }

    #[must_use]
    pub fn grant(&self, collection: &CollectionSlug) -> Option<&CollectionGrant> {
        self.collections.get(collection)
    }

    /// May the role perform `action` on `collection` at all?
    pub fn may(&self, collection: &CollectionSlug, action: CollectionAction) -> Decision {
        if self.is_super_admin() {
            return Decision::allow(Reason::SuperAdmin);
        }
        let allowed = self.grant(collection).is_some_and(|g| g.allows(action));
        Decision::new(
            allowed,
            Reason::CollectionGrant {
                collection: collection.clone(),
                action,
            },
        )
    }

    /// Collections the role may read (for `GET /collections`, which never errors).
    pub fn readable_collections(&self) -> impl Iterator<Item = &CollectionSlug> {
        self.collections
            .iter()
            .filter(|(_, g)| g.read)
            .map(|(slug, _)| slug)
    }

    /// The role's item filter on `collection`, if any (none for super-admin).
    #[must_use]
    pub fn item_filter(&self, collection: &CollectionSlug) -> Option<&Filter> {
        if self.is_super_admin() {
            return None;
        }
        self.grant(collection).and_then(|g| g.item_filter.as_ref())
    }

    /// Does the role see this item: read grant and item filter.
    pub fn may_see_item(&self, collection: &CollectionSlug, item: &ItemRef<'_>) -> Decision {
        let read = self.may(collection, CollectionAction::Read);
        if !read.allowed || self.is_super_admin() {
            return read;
        }
        match self.item_filter(collection) {
            Some(filter) => Decision::new(
                filter.matches(item),
                Reason::ItemFilter {
                    collection: collection.clone(),
                },
            ),
            None => read,
        }
    }

    /// The redaction plan for `collection`: fields whose read flag is false are hidden, and
    /// without the collection's `read` grant every field is.
    #[must_use]
    pub fn field_policy(&self, collection: &CollectionSlug) -> FieldPolicy {
        if self.is_super_admin() {
            return FieldPolicy::unrestricted();
        }
        let Some(grant) = self.grant(collection).filter(|g| g.read) else {
            return FieldPolicy::nothing();
        };
        FieldPolicy {
            unrestricted: false,
            nothing: false,
            hidden: grant
                .fields
                .iter()
                .filter(|(_, r)| !r.read)
                .map(|(n, _)| n.clone())
                .collect(),
        }
    }

    /// What the response to a create or update of an item may show: the item as this actor's
    /// show would render it when the actor may see it (read grant and item filter, evaluated on
    /// `item` as stored, its translatable values flattened to the project's default locale like
    /// every evaluation of a role's item filter), otherwise only its id. A write grant never
    /// widens what the actor reads.
    #[must_use]
    pub fn item_write_echo(&self, collection: &CollectionSlug, item: &ItemRef<'_>) -> WriteEcho {
        if self.may_see_item(collection, item).allowed {
            WriteEcho::Resource
        } else {
            WriteEcho::IdOnly
        }
    }

    /// Authorizes a create or update naming `fields`: the grant, then field rules. An allowed
    /// write carries the item filter the stored result must still satisfy.
    ///
    /// # Errors
    /// The denying [`Decision`]: a missing grant, or field rules naming every offending field.
    pub fn authorize_item_write<'f>(
        &self,
        collection: &CollectionSlug,
        action: CollectionAction,
        fields: impl IntoIterator<Item = &'f str>,
    ) -> Result<Authorized<ItemWrite>, Decision> {
        self.authorize_item_action(collection, action)?
            .for_fields(fields)
    }

    /// The first half of [`Role::authorize_item_write`]: the grant for `action` on
    /// `collection`, checked once, before the write's body is even read (a role that may not
    /// write gets 403 whatever it sends). [`ItemGrant::for_fields`] finishes it with the field
    /// rules once the body names its fields.
    ///
    /// # Errors
    /// The denying [`Decision`] when the role lacks the grant.
    pub fn authorize_item_action(
        &self,
        collection: &CollectionSlug,
        action: CollectionAction,
    ) -> Result<ItemGrant<'_>, Decision> {
        let decision = self.may(collection, action);
        if decision.allowed {
            Ok(ItemGrant {
                role: self,
                collection: collection.clone(),
                action,
                reason: decision.reason,
            })
        } else {
            Err(decision)
        }
    }

    /// A global files matrix decision.
    pub fn may_file(&self, action: FileAction) -> Decision {
        if self.is_super_admin() {
            return Decision::allow(Reason::SuperAdmin);
        }
        Decision::new(self.files.allows(action), Reason::FileGrant { action })
    }

    /// Authorizes a file write (`create`, `update`, `delete`).
    ///
    /// # Errors
    /// The denying [`Decision`] when the files matrix lacks `action`.
    pub fn authorize_file_write(
        &self,
        action: FileAction,
    ) -> Result<Authorized<FileWrite>, Decision> {
        let decision = self.may_file(action);
        if decision.allowed {
            let reaches_private = self.may_read_file(Visibility::Private).allowed;
            Ok(Authorized::new(
                FileWrite {
                    action,
                    reaches_private,
                },
                decision.reason,
            ))
        } else {
            Err(decision)
        }
    }
}

/// A role's grant for one item action on one collection, not yet checked against the fields a
/// write names (see [`Role::authorize_item_action`]). It cannot be made outside this crate, so
/// the only way to an [`Authorized<ItemWrite>`] still goes through the grant.
#[derive(Debug)]
#[must_use]
pub struct ItemGrant<'r> {
    role: &'r Role,
    collection: CollectionSlug,
    action: CollectionAction,
    reason: Reason,
}

impl ItemGrant<'_> {
    /// Checks the role's field rules for the fields a create or update names (a delete names
    /// none) and hands out the write capability, which carries the item filter the stored
    /// result must still satisfy.
    ///
    /// # Errors
    /// The denying [`Decision`], naming every field the rules refuse.
    pub fn for_fields<'f>(
        self,
        fields: impl IntoIterator<Item = &'f str>,
    ) -> Result<Authorized<ItemWrite>, Decision> {
        let Self {
            role,
            collection,
            action,
            reason,
        } = self;
        if !role.is_super_admin()
            && matches!(action, CollectionAction::Create | CollectionAction::Update)
            && let Some(grant) = role.grant(&collection)
        {
            let mut denied: Vec<FieldName> = fields
                .into_iter()
                .filter_map(|f| grant.fields.iter().find(|(n, _)| n.as_str() == f))
                .filter(|(_, rule)| !rule.allows(action))
                .map(|(n, _)| n.clone())
                .collect();
            denied.sort();
            denied.dedup();
            if !denied.is_empty() {
                return Err(Decision::deny(Reason::FieldRules {
                    action,
                    fields: denied,
                }));
            }
        }
        let item_filter = role.item_filter(&collection).cloned();
        Ok(Authorized::new(
            ItemWrite {
                collection,
                action,
                item_filter,
            },
            reason,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slug(s: &str) -> CollectionSlug {
        CollectionSlug::parse(s).unwrap()
    }

    fn editor() -> Role {
        Role::from_json(
            "editor",
            &json!({
                "collection_permissions": {
                    "articles": {"create": true, "read": true, "update": "1", "delete": false, "rules": {
                        "fields": {"internal_notes": {"read": false, "create": false, "update": false}, "slug": {"update": false}},
                        "item_filter": {"status": {"_eq": "published"}}
                    }},
                    "authors": {"read": true}
                },
                "file_permissions": {"create": true, "read": true, "read_private": false, "update": true}
            }),
        )
        .unwrap()
    }

    #[test]
    fn matrix_decisions_with_missing_grant_meaning_deny() {
        let r = editor();
        let articles = slug("articles");
        let table = [
            (&articles, CollectionAction::Create, true),
            (&articles, CollectionAction::Read, true),
            (&articles, CollectionAction::Update, true),
            (&articles, CollectionAction::Delete, false),
        ];
        for (c, action, expected) in table {
            assert_eq!(r.may(c, action).allowed, expected, "{action}");
        }
        let tags = slug("tags");
        for action in CollectionAction::ALL {
            assert!(!r.may(&tags, action).allowed);
        }
        assert_eq!(
            r.readable_collections()
                .map(CollectionSlug::as_str)
                .collect::<Vec<_>>(),
            ["articles", "authors"]
        );
        let d = r.may(&articles, CollectionAction::Delete);
        assert_eq!(
            d.to_string(),
            "denied: the role lacks the delete grant on collection \"articles\""
        );
    }

    #[test]
    fn super_admin_bypasses_everything() {
        let r = Role {
            name: "super-admin".into(),
            ..Role::default()
        };
        let tags = slug("tags");
        for action in CollectionAction::ALL {
            assert_eq!(r.may(&tags, action), Decision::allow(Reason::SuperAdmin));
        }
        for action in FileAction::ALL {
            assert!(r.may_file(action).allowed);
        }
        assert!(r.field_policy(&tags).can_read("anything"));
        assert!(r.item_filter(&tags).is_none());
        assert!(
            r.authorize_item_write(&tags, CollectionAction::Update, ["x"])
                .is_ok()
        );
    }

    #[test]
    fn field_rules_redact_and_reject_writes() {
        let r = editor();
        let articles = slug("articles");
        let plan = r.field_policy(&articles);
        let mut data = json!({"title": "t", "internal_notes": "n", "slug": "s"});
        let data = data.as_object_mut().unwrap();
        plan.redact(data);
        assert_eq!(
            Value::Object(data.clone()),
            json!({"title": "t", "slug": "s"})
        );
        assert!(!plan.can_read("internal_notes"));
        assert!(plan.can_read("slug"));

        assert!(
            r.authorize_item_write(&articles, CollectionAction::Create, ["title", "slug"])
                .is_ok()
        );
        let err = r
            .authorize_item_write(
                &articles,
                CollectionAction::Create,
                ["title", "internal_notes"],
            )
            .unwrap_err();
        assert_eq!(
            err.reason,
            Reason::FieldRules {
                action: CollectionAction::Create,
                fields: vec![FieldName::parse("internal_notes").unwrap()]
            }
        );
        let err = r
            .authorize_item_write(
                &articles,
                CollectionAction::Update,
                ["slug", "internal_notes"],
            )
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "denied: field rules deny update on: internal_notes, slug"
        );
        // The grant's flag applies on top of field rules.
        assert!(
            r.authorize_item_write(&slug("authors"), CollectionAction::Create, ["name"])
                .is_err()
        );
    }

    /// A1: a write grant never widens what the role reads. Without `read`, the redaction plan
    /// hides every field (field rules or not), and a write's response is only the id.
    #[test]
    fn without_read_nothing_is_readable_and_writes_echo_only_the_id() {
        let writer = Role::from_json(
            "writer",
            &json!({"collection_permissions": {"articles": {"update": true, "create": true,
                "rules": {"fields": {"internal_notes": {"read": false}}}}}}),
        )
        .unwrap();
        let articles = slug("articles");
        let plan = writer.field_policy(&articles);
        assert!(plan.reads_nothing());
        assert!(!plan.can_read("title"));
        let mut data = json!({"title": "Secret draft", "internal_notes": "n"});
        let data = data.as_object_mut().unwrap();
        plan.redact(data);
        assert!(data.is_empty());
        // No grant at all on a collection: the same.
        assert!(writer.field_policy(&slug("tags")).reads_nothing());

        let item = json!({"title": "t", "status": "draft"});
        let item = ItemRef::data(item.as_object().unwrap());
        assert_eq!(writer.item_write_echo(&articles, &item), WriteEcho::IdOnly);
        // With read, inside the filter: the resource; outside it: the id only.
        let r = editor();
        assert_eq!(r.item_write_echo(&articles, &item), WriteEcho::IdOnly);
        let published = json!({"status": "published"});
        assert_eq!(
            r.item_write_echo(&articles, &ItemRef::data(published.as_object().unwrap())),
            WriteEcho::Resource
        );
        assert!(!r.field_policy(&articles).reads_nothing());
        assert_eq!(
            Role::super_admin().item_write_echo(&articles, &item),
            WriteEcho::Resource
        );
    }

    #[test]
    fn writes_carry_the_item_filter() {
        let r = editor();
        let articles = slug("articles");
        let w = r
            .authorize_item_write(&articles, CollectionAction::Create, ["title"])
            .unwrap();
        let published = json!({"status": "published"});
        let draft = json!({"status": "draft"});
        assert!(
            w.get()
                .admits(&ItemRef::data(published.as_object().unwrap()))
        );
        assert!(!w.get().admits(&ItemRef::data(draft.as_object().unwrap())));
        assert!(
            r.may_see_item(&articles, &ItemRef::data(published.as_object().unwrap()))
                .allowed
        );
        let hidden = r.may_see_item(&articles, &ItemRef::data(draft.as_object().unwrap()));
        assert_eq!(
            hidden.to_string(),
            "denied: the role's item filter on \"articles\" excludes the item"
        );
    }

    #[test]
    fn grants_round_trip_and_report_paths() {
        let r = editor();
        let again = Role::from_json("editor", &r.to_json()).unwrap();
        assert_eq!(again, r);
        let cases = [
            (
                json!({"collection_permissions": {"Bad Slug": {}}}),
                "collection_permissions.Bad Slug",
            ),
            (
                json!({"collection_permissions": {"a": {"write": true}}}),
                "collection_permissions.a.write",
            ),
            (
                json!({"collection_permissions": {"a": {"rules": {"fields": {"x": {"hide": true}}}}}}),
                "collection_permissions.a.rules.fields.x.hide",
            ),
            (
                json!({"collection_permissions": {"a": {"rules": {"item_filter": {"x": {"_bad": 1}}}}}}),
                "collection_permissions.a.rules.item_filter",
            ),
            (
                json!({"collection_permissions": {"a": {"rules": {"other": 1}}}}),
                "collection_permissions.a.rules.other",
            ),
            (
                json!({"file_permissions": {"list": true}}),
                "file_permissions.list",
            ),
        ];
        for (raw, path) in cases {
            match Role::from_json("r", &raw) {
                Err(PolicyError::InvalidGrant { path: p, .. }) => assert_eq!(p, path, "{raw}"),
                other => panic!("{raw}: {other:?}"),
            }
        }
    }

    /// A2: a file write reaches private files only with `read_private`, and its response shows
    /// the file only where show would.
    #[test]
    fn file_writes_reach_what_show_reaches() {
        let r = editor();
        let update = r.authorize_file_write(FileAction::Update).unwrap();
        assert!(update.get().reaches(Visibility::Public));
        assert!(!update.get().reaches(Visibility::Private));
        assert_eq!(r.file_write_echo(Visibility::Public), WriteEcho::Resource);
        assert_eq!(r.file_write_echo(Visibility::Private), WriteEcho::IdOnly);
        let writer = Role::from_json("w", &json!({"file_permissions": {"update": true}})).unwrap();
        assert_eq!(
            writer.file_write_echo(Visibility::Public),
            WriteEcho::IdOnly
        );
        let all = Role::super_admin()
            .authorize_file_write(FileAction::Delete)
            .unwrap();
        assert!(all.get().reaches(Visibility::Private));
        let private_reader = Role::from_json(
            "p",
            &json!({"file_permissions": {"update": true, "read_private": true}}),
        )
        .unwrap();
        assert!(
            private_reader
                .authorize_file_write(FileAction::Update)
                .unwrap()
                .get()
                .reaches(Visibility::Private)
        );
    }

    #[test]
    fn file_matrix() {
        let r = editor();
        let expected = [
            (FileAction::Create, true),
            (FileAction::Read, true),
            (FileAction::ReadPrivate, false),
            (FileAction::Update, true),
            (FileAction::Delete, false),
        ];
        for (action, allowed) in expected {
            assert_eq!(r.may_file(action).allowed, allowed, "{action}");
            assert_eq!(r.authorize_file_write(action).is_ok(), allowed);
        }
    }

    /// The grant is asked once, before any field is known; the field rules come second; the two
    /// steps together are exactly `authorize_item_write`.
    #[test]
    fn item_writes_are_authorized_in_two_steps_that_compose() {
        let r = editor();
        let articles = slug("articles");
        let denied = r
            .authorize_item_action(&articles, CollectionAction::Delete)
            .unwrap_err();
        assert!(matches!(denied.reason, Reason::CollectionGrant { .. }));
        assert!(
            r.authorize_item_action(&slug("authors"), CollectionAction::Create)
                .is_err()
        );
        let cases: [(CollectionAction, &[&str]); 4] = [
            (CollectionAction::Create, &["title"]),
            (CollectionAction::Create, &["title", "internal_notes"]),
            (CollectionAction::Update, &["slug"]),
            (CollectionAction::Update, &["title"]),
        ];
        for (action, fields) in cases {
            let two_steps = r
                .authorize_item_action(&articles, action)
                .unwrap()
                .for_fields(fields.iter().copied());
            let one_call = r.authorize_item_write(&articles, action, fields.iter().copied());
            assert_eq!(two_steps, one_call, "{action} {fields:?}");
        }
        let refused = r
            .authorize_item_action(&articles, CollectionAction::Create)
            .unwrap()
            .for_fields(["internal_notes", "title"])
            .unwrap_err();
        assert_eq!(
            refused.reason,
            Reason::FieldRules {
                action: CollectionAction::Create,
                fields: vec![FieldName::parse("internal_notes").unwrap()],
            }
        );
        // An allowed write carries the role's item filter to storage.
        let write = r
            .authorize_item_action(&articles, CollectionAction::Update)
            .unwrap()
            .for_fields(["title"])
            .unwrap();
        assert!(write.get().item_filter.is_some());
        assert_eq!(write.get().action, CollectionAction::Update);
    }
}
