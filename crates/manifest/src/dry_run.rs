//! `dry_run`: what applying a manifest would change in each role's effective access, before
//! anyone runs `apply` (`vellum-admin explain --dry-run`).
//!
//! The "after" project is not re-derived from the manifest by a second set of rules: the
//! manifest is applied by [`crate::apply`] itself inside a transaction that is always rolled
//! back, so the preview refuses exactly what `apply` refuses and sees exactly what `apply` would
//! write (new fields, new collections and their seed items, roles). Both sides are read in that
//! transaction; visible items are counted with the storage layer's list query (the role's item
//! filter compiled to SQL, the server's own code path). The comparison itself ([`diff`]) is pure.
//!
//! Nothing persists: the transaction is rolled back on success and on failure. Two things are not
//! transactional and may move: PostgreSQL sequences (ids a later write gets may skip a few) and,
//! on SQLite, the write lock, which the preview holds for its duration as `apply` would.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use sea_orm::{
    ConnectionTrait, SqliteTransactionMode, TransactionOptions, TransactionSession,
    TransactionTrait,
};
use serde_json::{Value, json};
use vellum_domain::{CollectionSlug, ContentLocales};
use vellum_policy::{CollectionAction, FileAction, Filter, FilterField, Role};
use vellum_storage::items::{self, FilterScope, ListItems};
use vellum_storage::model::Collection;
use vellum_storage::{StorageError, collections, project, roles};

use crate::{ManifestError, apply};

/// Whether a role would get or lose something.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    Gain,
    Lose,
}

impl Direction {
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Gain => "gain",
            Self::Lose => "lose",
        }
    }
}

/// One change in what a role may do.
#[derive(Debug, Clone, PartialEq)]
pub enum AccessChange {
    /// The collection grant for `action` appears or disappears. `fields` are the fields the
    /// role may then use for it (read, create, update; none for delete) and, for read, `items`
    /// the items it sees (after a gain, before a loss).
    Grant {
        collection: CollectionSlug,
        action: CollectionAction,
        direction: Direction,
        fields: Vec<String>,
        items: Option<u64>,
    },
    /// The grant stays but field rules (or new or removed fields) change which fields the
    /// role may use; for read, `items` is how many items it sees afterwards.
    Fields {
        collection: CollectionSlug,
        action: CollectionAction,
        direction: Direction,
        fields: Vec<String>,
        items: Option<u64>,
    },
    /// Read stays granted but the item filter changes. `became_visible` / `became_invisible`
    /// are counted on the data as it would be after the apply; `None` when the old filter no
    /// longer compiles against the new schema (a field it names is gone).
    ItemFilter {
        collection: CollectionSlug,
        before: Option<Value>,
        after: Option<Value>,
        visible_before: u64,
        visible_after: u64,
        became_visible: Option<u64>,
        became_invisible: Option<u64>,
    },
    /// A flag of the files matrix.
    Files {
        action: FileAction,
        direction: Direction,
    },
}

/// What one role would gain or lose.
#[derive(Debug, Clone, PartialEq)]
pub struct RoleDiff {
    pub role: String,
    /// The manifest creates the role.
    pub created: bool,
    pub changes: Vec<AccessChange>,
}

/// What every role would gain or lose, roles sorted by name.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AccessDiff {
    pub roles: Vec<RoleDiff>,
}

/// Previews `manifest`: applies it inside a transaction that is always rolled back and returns
/// how each role's effective access would differ. The caller has migrated the database.
///
/// # Errors
/// Whatever [`apply`] would refuse the manifest with ([`ManifestError::Invalid`] naming the
/// path), or a database error. Either way nothing was changed.
pub async fn dry_run<C>(db: &C, manifest: &Value) -> Result<AccessDiff, ManifestError>
where
    C: ConnectionTrait + TransactionTrait,
{
    // IMMEDIATE on SQLite: the apply inside writes, and a deferred transaction that read first
    // would fail with SQLITE_BUSY instead of waiting when another process wrote meanwhile.
    let options = TransactionOptions {
        sqlite_transaction_mode: Some(SqliteTransactionMode::Immediate),
        ..TransactionOptions::default()
    };
    let tx = db.begin_with_options(options).await?;
    let result = preview(&tx, manifest).await;
    tx.rollback().await?;
    result
}

async fn preview<T>(tx: &T, manifest: &Value) -> Result<AccessDiff, ManifestError>
where
    T: ConnectionTrait + TransactionTrait,
{
    let before = Loaded::load(tx).await?;
    let visible_before = visible_counts(tx, &before).await?;
    apply(tx, manifest).await?;
    let after = Loaded::load(tx).await?;
    let counts = Counts {
        before: visible_before,
        after: visible_counts(tx, &after).await?,
        moved: moved_counts(tx, &before, &after).await?,
    };
    Ok(diff(&before.project, &after.project, &counts))
}

/// The roles and each collection's field names: all [`diff`] compares.
#[derive(Debug, Clone, Default)]
pub(crate) struct Project {
    pub(crate) roles: BTreeMap<String, Role>,
    pub(crate) fields: BTreeMap<CollectionSlug, Vec<String>>,
}

/// One side as read from the database.
struct Loaded {
    project: Project,
    collections: BTreeMap<CollectionSlug, Collection>,
    locales: ContentLocales,
}

impl Loaded {
    async fn load<C: ConnectionTrait>(db: &C) -> Result<Self, ManifestError> {
        let locales = project::load_settings(db)
            .await?
            .locales()
            .map_err(|e| StorageError::Corrupt(e.to_string()))?;
        let collections: BTreeMap<CollectionSlug, Collection> = collections::list_collections(db)
            .await?
            .into_iter()
            .map(|c| (c.slug.clone(), c))
            .collect();
        let fields = collections
            .iter()
            .map(|(slug, c)| {
                let names = c.fields.iter().map(|f| f.def.name.to_string()).collect();
                (slug.clone(), names)
            })
            .collect();
        let roles = roles::load_roles(db)
            .await?
            .into_iter()
            .map(|r| (r.name.clone(), r))
            .collect();
        Ok(Self {
            project: Project { roles, fields },
            collections,
            locales,
        })
    }

    /// How many live items of `collection` match `filter` (all of them without one): the
    /// total of the server's list query with the filter as the role's item filter.
    async fn count<C: ConnectionTrait>(
        &self,
        db: &C,
        collection: &Collection,
        filter: Option<&Filter>,
    ) -> Result<u64, StorageError> {
        let scope = FilterScope {
            schema: collection.schema(),
            locales: &self.locales,
            locale: self.locales.default_locale(),
        };
        let everything = Filter::default();
        let query = ListItems {
            filter: &everything,
            sort: &[],
            page: 1,
            per_page: 1,
            after: None,
        };
        let page =
            items::list_items_with_total(db, collection, &scope, &query, filter, None).await?;
        Ok(page.total)
    }
}

type Key = (String, CollectionSlug);

/// The counts [`diff`] reports, gathered beforehand.
#[derive(Debug, Clone, Default)]
pub(crate) struct Counts {
    /// Items each role reads per collection (only where it has read), before and after.
    pub(crate) before: HashMap<Key, u64>,
    pub(crate) after: HashMap<Key, u64>,
    /// Where read stays but the item filter changes: (became visible, became invisible).
    pub(crate) moved: HashMap<Key, (u64, u64)>,
}

/// Items each role reads in each collection it may read; one query per distinct filter.
async fn visible_counts<C: ConnectionTrait>(
    db: &C,
    side: &Loaded,
) -> Result<HashMap<Key, u64>, StorageError> {
    let mut memo: HashMap<(CollectionSlug, String), u64> = HashMap::new();
    let mut out = HashMap::new();
    for (name, role) in &side.project.roles {
        for (slug, collection) in &side.collections {
            if !role.may(slug, CollectionAction::Read).allowed {
                continue;
            }
            let filter = role.item_filter(slug);
            let memo_key = (slug.clone(), format!("{filter:?}"));
            let n = match memo.get(&memo_key) {
                Some(n) => *n,
                None => {
                    let n = side.count(db, collection, filter).await?;
                    memo.insert(memo_key, n);
                    n
                }
            };
            out.insert((name.clone(), slug.clone()), n);
        }
    }
    Ok(out)
}

/// For each role whose read stays but whose item filter changes: the items only the new
/// filter admits and those only the old one admitted, both on the data after the apply
/// (filters are conjunctions, so "new and not old" is `count(new) - count(new and old)`).
async fn moved_counts<C: ConnectionTrait>(
    db: &C,
    before: &Loaded,
    after: &Loaded,
) -> Result<HashMap<Key, (u64, u64)>, StorageError> {
    let mut out = HashMap::new();
    for (name, new_role) in &after.project.roles {
        let Some(old_role) = before.project.roles.get(name) else {
            continue;
        };
        for (slug, collection) in &after.collections {
            let read = CollectionAction::Read;
            if !before.collections.contains_key(slug)
                || !old_role.may(slug, read).allowed
                || !new_role.may(slug, read).allowed
                || filter_json(old_role, slug) == filter_json(new_role, slug)
            {
                continue;
            }
            let (old, new) = (old_role.item_filter(slug), new_role.item_filter(slug));
            let compiles = old.is_none_or(|f| {
                f.fields().all(|field| match field {
                    FilterField::Data(name) => collection.field(name.as_str()).is_some(),
                    _ => true,
                })
            });
            if !compiles {
                continue;
            }
            let both = match (old, new) {
                (Some(o), Some(n)) => Some(o.clone().and(n)),
                (o, n) => o.or(n).cloned(),
            };
            let only_new = after.count(db, collection, new).await?;
            let only_old = after.count(db, collection, old).await?;
            let shared = after.count(db, collection, both.as_ref()).await?;
            out.insert(
                (name.clone(), slug.clone()),
                (
                    only_new.saturating_sub(shared),
                    only_old.saturating_sub(shared),
                ),
            );
        }
    }
    Ok(out)
}

/// The role's item filter on `slug` as configured, when it has one that filters.
fn filter_json(role: &Role, slug: &CollectionSlug) -> Option<Value> {
    role.item_filter(slug)?;
    role.grant(slug)?
        .to_json()
        .pointer("/rules/item_filter")
        .cloned()
}

/// The fields of a collection `role` may use for `action`: read through the redaction plan,
/// create and update through the field rules of a write; none for delete (it takes no data).
fn usable_fields(
    role: &Role,
    slug: &CollectionSlug,
    fields: &[String],
    action: CollectionAction,
) -> BTreeSet<String> {
    match action {
        CollectionAction::Read => {
            let policy = role.field_policy(slug);
            fields
                .iter()
                .filter(|f| policy.can_read(f))
                .cloned()
                .collect()
        }
        CollectionAction::Create | CollectionAction::Update => fields
            .iter()
            .filter(|f| {
                role.authorize_item_write(slug, action, [f.as_str()])
                    .is_ok()
            })
            .cloned()
            .collect(),
        CollectionAction::Delete => BTreeSet::new(),
    }
}

/// How each role's access differs between `before` and `after`. A role or collection missing
/// on one side grants nothing there.
pub(crate) fn diff(before: &Project, after: &Project, counts: &Counts) -> AccessDiff {
    let names: BTreeSet<&String> = before.roles.keys().chain(after.roles.keys()).collect();
    let slugs: BTreeSet<&CollectionSlug> =
        before.fields.keys().chain(after.fields.keys()).collect();
    let roles = names
        .into_iter()
        .map(|name| {
            let nobody = Role {
                name: name.clone(),
                ..Role::default()
            };
            let old = before.roles.get(name).unwrap_or(&nobody);
            let new = after.roles.get(name).unwrap_or(&nobody);
            let mut changes = Vec::new();
            for slug in &slugs {
                let key = (name.clone(), (*slug).clone());
                let sides = [(old, before, &counts.before), (new, after, &counts.after)];
                for action in CollectionAction::ALL {
                    let [(was, was_fields, was_n), (is, is_fields, is_n)] =
                        sides.map(|(role, project, visible)| match project.fields.get(*slug) {
                            Some(fields) if role.may(slug, action).allowed => (
                                true,
                                usable_fields(role, slug, fields, action),
                                visible.get(&key).copied(),
                            ),
                            _ => (false, BTreeSet::new(), None),
                        });
                    let read = action == CollectionAction::Read;
                    let grant = |direction, fields: BTreeSet<String>, items| AccessChange::Grant {
                        collection: (*slug).clone(),
                        action,
                        direction,
                        fields: fields.into_iter().collect(),
                        items: if read { items } else { None },
                    };
                    match (was, is) {
                        (false, true) => changes.push(grant(Direction::Gain, is_fields, is_n)),
                        (true, false) => changes.push(grant(Direction::Lose, was_fields, was_n)),
                        (false, false) => {}
                        (true, true) => {
                            for (direction, fields) in [
                                (Direction::Gain, &is_fields - &was_fields),
                                (Direction::Lose, &was_fields - &is_fields),
                            ] {
                                if !fields.is_empty() {
                                    changes.push(AccessChange::Fields {
                                        collection: (*slug).clone(),
                                        action,
                                        direction,
                                        fields: fields.into_iter().collect(),
                                        items: if read { is_n } else { None },
                                    });
                                }
                            }
                            let (old_filter, new_filter) =
                                (filter_json(old, slug), filter_json(new, slug));
                            if read && old_filter != new_filter {
                                let moved = counts.moved.get(&key);
                                changes.push(AccessChange::ItemFilter {
                                    collection: (*slug).clone(),
                                    before: old_filter,
                                    after: new_filter,
                                    visible_before: was_n.unwrap_or_default(),
                                    visible_after: is_n.unwrap_or_default(),
                                    became_visible: moved.map(|m| m.0),
                                    became_invisible: moved.map(|m| m.1),
                                });
                            }
                        }
                    }
                }
            }
            for action in FileAction::ALL {
                match (old.may_file(action).allowed, new.may_file(action).allowed) {
                    (false, true) => changes.push(AccessChange::Files {
                        action,
                        direction: Direction::Gain,
                    }),
                    (true, false) => changes.push(AccessChange::Files {
                        action,
                        direction: Direction::Lose,
                    }),
                    _ => {}
                }
            }
            RoleDiff {
                role: name.clone(),
                created: !before.roles.contains_key(name),
                changes,
            }
        })
        .collect();
    AccessDiff { roles }
}

impl AccessDiff {
    /// Whether no role's access would change.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.roles
            .iter()
            .all(|r| !r.created && r.changes.is_empty())
    }

    /// One sentence per change, for people: `public would gain read on 3 fields across 1,240
    /// items in articles: body, summary, title`, `editor would lose delete on articles`, and
    /// `no change for role admin` for a role whose access stays the same.
    #[must_use]
    pub fn sentences(&self) -> Vec<String> {
        let mut out = Vec::new();
        for role in &self.roles {
            let name = &role.role;
            if role.created {
                out.push(if role.changes.is_empty() {
                    format!("role {name} would be created, with no access")
                } else {
                    format!("role {name} would be created")
                });
            } else if role.changes.is_empty() {
                out.push(format!("no change for role {name}"));
            }
            out.extend(role.changes.iter().map(|c| sentence(name, c)));
        }
        out
    }

    /// The machine form: `{"roles": [{"role", "created", "changes": [...]}]}`, each change an
    /// object with its `type` (`grant`, `fields`, `item_filter`, `files`).
    #[must_use]
    pub fn to_json(&self) -> Value {
        let roles: Vec<Value> = self
            .roles
            .iter()
            .map(|r| {
                json!({
                    "role": r.role,
                    "created": r.created,
                    "changes": r.changes.iter().map(change_json).collect::<Vec<_>>(),
                })
            })
            .collect();
        json!({ "roles": roles })
    }
}

fn change_json(change: &AccessChange) -> Value {
    match change {
        AccessChange::Grant {
            collection,
            action,
            direction,
            fields,
            items,
        }
        | AccessChange::Fields {
            collection,
            action,
            direction,
            fields,
            items,
        } => json!({
            "type": if matches!(change, AccessChange::Grant { .. }) { "grant" } else { "fields" },
            "collection": collection.as_str(),
            "action": action.as_str(),
            "change": direction.as_str(),
            "fields": fields,
            "items": items,
        }),
        AccessChange::ItemFilter {
            collection,
            before,
            after,
            visible_before,
            visible_after,
            became_visible,
            became_invisible,
        } => json!({
            "type": "item_filter",
            "collection": collection.as_str(),
            "before": before,
            "after": after,
            "visible_before": visible_before,
            "visible_after": visible_after,
            "became_visible": became_visible,
            "became_invisible": became_invisible,
        }),
        AccessChange::Files { action, direction } => json!({
            "type": "files",
            "action": action.as_str(),
            "change": direction.as_str(),
        }),
    }
}

fn sentence(role: &str, change: &AccessChange) -> String {
    match change {
        AccessChange::Grant {
            collection,
            action,
            direction,
            fields,
            items,
        } => {
            let what = match (action, items) {
                (CollectionAction::Delete, _) => String::new(),
                (_, Some(items)) => format!(
                    " ({} across {})",
                    counted(fields.len() as u64, "field"),
                    counted(*items, "item")
                ),
                (_, None) => format!(" ({})", counted(fields.len() as u64, "field")),
            };
            format!(
                "{role} would {} {action} on {collection}{what}",
                direction.as_str()
            )
        }
        AccessChange::Fields {
            collection,
            action,
            direction,
            fields,
            items,
        } => {
            let across =
                items.map_or_else(String::new, |n| format!(" across {}", counted(n, "item")));
            format!(
                "{role} would {} {action} on {}{across} in {collection}: {}",
                direction.as_str(),
                counted(fields.len() as u64, "field"),
                fields.join(", ")
            )
        }
        AccessChange::ItemFilter {
            collection,
            visible_before,
            visible_after,
            became_visible,
            became_invisible,
            ..
        } => {
            let totals = format!(
                "item filter: {} → {} visible",
                thousands(*visible_before),
                thousands(*visible_after)
            );
            match (became_visible, became_invisible) {
                (Some(0), Some(0)) => format!(
                    "{role}'s item filter on {collection} would change, with the same {} visible",
                    counted(*visible_after, "item")
                ),
                (Some(gained), Some(lost)) => {
                    let mut parts = Vec::new();
                    if *gained > 0 {
                        parts.push(format!("gain read on {}", counted(*gained, "item")));
                    }
                    if *lost > 0 {
                        parts.push(format!("lose read on {}", counted(*lost, "item")));
                    }
                    format!(
                        "{role} would {} in {collection} ({totals})",
                        parts.join(" and ")
                    )
                }
                _ => format!("{role}'s item filter on {collection} would change ({totals})"),
            }
        }
        AccessChange::Files { action, direction } => {
            format!("{role} would {} {action} on files", direction.as_str())
        }
    }
}

/// `1 item`, `1,240 items`.
fn counted(n: u64, noun: &str) -> String {
    let s = if n == 1 { "" } else { "s" };
    format!("{} {noun}{s}", thousands(n))
}

/// `1240` as `1,240`.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn role(name: &str, raw: &Value) -> Role {
        Role::from_json(name, raw).unwrap()
    }

    fn slug(s: &str) -> CollectionSlug {
        CollectionSlug::parse(s).unwrap()
    }

    fn project(roles: Vec<Role>) -> Project {
        Project {
            roles: roles.into_iter().map(|r| (r.name.clone(), r)).collect(),
            fields: BTreeMap::from([(
                slug("articles"),
                ["title", "body", "summary", "secret"]
                    .map(String::from)
                    .to_vec(),
            )]),
        }
    }

    fn counts(before: u64, after: u64) -> Counts {
        let key = ("public".to_owned(), slug("articles"));
        Counts {
            before: HashMap::from([(key.clone(), before)]),
            after: HashMap::from([(key, after)]),
            moved: HashMap::new(),
        }
    }

    #[test]
    fn thousands_are_separated() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1240), "1,240");
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(counted(1, "item"), "1 item");
        assert_eq!(counted(1240, "item"), "1,240 items");
    }

    #[test]
    fn fields_opened_to_a_reader_are_a_gain_across_its_items() {
        let hidden = json!({"collection_permissions": {"articles": {"read": true, "rules": {
            "fields": {"body": {"read": false}, "summary": {"read": false}, "secret": {"read": false}}
        }}}});
        let open = json!({"collection_permissions": {"articles": {"read": true, "rules": {
            "fields": {"secret": {"read": false}}
        }}}});
        let diff = diff(
            &project(vec![role("public", &hidden)]),
            &project(vec![role("public", &open)]),
            &counts(1240, 1240),
        );
        assert_eq!(
            diff.sentences(),
            ["public would gain read on 2 fields across 1,240 items in articles: body, summary"]
        );
        assert_eq!(
            diff.to_json()["roles"][0]["changes"][0],
            json!({"type": "fields", "collection": "articles", "action": "read",
                   "change": "gain", "fields": ["body", "summary"], "items": 1240})
        );
    }

    #[test]
    fn a_removed_grant_is_a_loss_and_an_unchanged_role_says_so() {
        let editor = |delete: bool| {
            role(
                "editor",
                &json!({"collection_permissions": {"articles": {"read": true, "delete": delete}},
                        "file_permissions": {"read": true, "delete": delete}}),
            )
        };
        let public = role("public", &json!({}));
        let diff = diff(
            &project(vec![editor(true), public.clone()]),
            &project(vec![editor(false), public]),
            &Counts::default(),
        );
        assert_eq!(
            diff.sentences(),
            [
                "editor would lose delete on articles",
                "editor would lose delete on files",
                "no change for role public",
            ]
        );
        assert!(!diff.is_empty());
    }

    #[test]
    fn a_new_grant_and_a_new_role_are_gains() {
        let reader = role(
            "reader",
            &json!({"collection_permissions": {"articles": {"read": true, "create": true,
                "rules": {"fields": {"secret": {"read": false, "create": false}}}}}}),
        );
        let mut after = project(vec![reader]);
        let key = ("reader".to_owned(), slug("articles"));
        let counts = Counts {
            after: HashMap::from([(key, 1)]),
            ..Counts::default()
        };
        let diff = diff(&project(vec![]), &after, &counts);
        assert_eq!(
            diff.sentences(),
            [
                "role reader would be created",
                "reader would gain create on articles (3 fields)",
                "reader would gain read on articles (3 fields across 1 item)",
            ]
        );
        // A field the manifest adds is readable unless a rule says otherwise.
        let before = after.clone();
        after
            .fields
            .get_mut(&slug("articles"))
            .unwrap()
            .push("subtitle".into());
        let diff = super::diff(&before, &after, &Counts::default());
        assert_eq!(diff.roles[0].changes.len(), 2, "{:?}", diff.sentences());
        assert!(diff.sentences()[0].contains("gain create on 1 field in articles: subtitle"));
    }

    #[test]
    fn an_item_filter_change_reports_what_moves() {
        let with = |status: &str| {
            role(
                "public",
                &json!({"collection_permissions": {"articles": {"read": true,
                    "rules": {"item_filter": {"status": {"_eq": status}}}}}}),
            )
        };
        let mut counts = counts(10, 4);
        counts
            .moved
            .insert(("public".to_owned(), slug("articles")), (4, 10));
        let diff = diff(
            &project(vec![with("published")]),
            &project(vec![with("draft")]),
            &counts,
        );
        assert_eq!(
            diff.sentences(),
            [
                "public would gain read on 4 items and lose read on 10 items in articles \
                 (item filter: 10 → 4 visible)"
            ]
        );
        let same = super::diff(
            &project(vec![with("draft")]),
            &project(vec![with("draft")]),
            &Counts::default(),
        );
        assert!(same.is_empty());
        assert_eq!(same.sentences(), ["no change for role public"]);
    }
}
