//! The project snapshot: what nearly every request needs and rarely changes (settings, locales,
//! the origin allowlist, the hash key, every collection's schema and every role's grants), plus
//! what is remembered for exactly as long as it holds (key lookups, list totals).
//!
//! Reading it per request would cost several queries; [`crate::AppState::snapshot`] rebuilds it
//! when the epoch moves (a write through this server) or when it is older than `snapshot_ttl` (a
//! change made behind the server's back, e.g. by `vellum-admin`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use vellum_domain::{ContentLocales, HashKey, LocaleCode};
use vellum_policy::{Filter, KeyId, OriginAllowlist, Role};
use vellum_storage::keys::FoundKey;
use vellum_storage::model::Collection;
use vellum_storage::project::ProjectSettings;
use vellum_storage::sessions::SessionRow;
use vellum_storage::{Database, StorageError};

use crate::cache::key::KeyHasher;
use crate::principal::AccountAccess;
/// The project as requests see it, consistent within one request.
#[derive(Debug)]
pub struct Snapshot {
    pub settings: ProjectSettings,
    pub locales: ContentLocales,
    pub origins: OriginAllowlist,
    pub hash_key: HashKey,
    /// Every collection, in id order.
    pub collections: Vec<Arc<Collection>>,
    by_slug: HashMap<String, Arc<Collection>>,
    by_id: HashMap<i64, Arc<Collection>>,
    roles: HashMap<String, Arc<Role>>,
    /// Keys looked up since the snapshot was built (including misses), bounded.
    keys: Mutex<HashMap<KeyId, Option<Arc<FoundKey>>>>,
    /// Signed-in users' accounts and permissions looked up since the snapshot was built (a miss
    /// is a user that no longer exists), bounded like the keys.
    accounts: Mutex<HashMap<i64, Option<Arc<AccountAccess>>>>,
    /// Sessions found since the snapshot was built, by id (token hash), bounded like the keys.
    /// Only hits are remembered (a session created on another replica must work at once); an
    /// ended session moves the epoch ([`crate::accounts`]), which drops this memo everywhere.
    sessions: Mutex<HashMap<String, Arc<SessionRow>>>,
    /// Item list totals counted since the snapshot was built. The snapshot lives exactly as long
    /// as its epoch, and every write bumps the epoch, so a remembered total is the current one.
    totals: TotalsMemo,
    pub(crate) epoch: u64,
    pub(crate) built: Instant,
}

/// Key lookups remembered per snapshot; beyond this (a flood of random key ids) the memo is
/// cleared rather than grown.
pub(crate) const MAX_REMEMBERED_KEYS: usize = 10_000;

/// Which list a total counts: a SHA-256 digest of the collection, the locale the filter compares
/// translatable fields in, the request's filter and the role's item filter (sort and page do not
/// change a total). Fixed-size on purpose: the filter alone can be as long as the URL, and a memo
/// keyed by its text grew by 64 KB per anonymous request, to 600 MiB (security review R3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct TotalKey([u8; 32]);

impl TotalKey {
    pub(crate) fn new(
        collection_id: i64,
        locale: &LocaleCode,
        filter: &Filter,
        role_filter: Option<&Filter>,
    ) -> Self {
        let mut key = KeyHasher::new("list total v1");
        key.part(&collection_id.to_string())
            .part(locale.as_str())
            .debug_part(filter)
            .debug_part(&role_filter);
        Self(key.finish())
    }
}

/// Item list totals by [`TotalKey`]. Bounded by entries, which is bounding by bytes since every
/// entry has the same size (a 32-byte key and a count: under 1 MiB at the cap); past
/// [`MAX_REMEMBERED_KEYS`] the memo is cleared rather than grown.
#[derive(Debug, Default)]
pub(crate) struct TotalsMemo(Mutex<HashMap<TotalKey, u64>>);

impl TotalsMemo {
    fn get(&self, key: &TotalKey) -> Option<u64> {
        self.lock().get(key).copied()
    }

    fn remember(&self, key: TotalKey, total: u64) {
        let mut totals = self.lock();
        if totals.len() >= MAX_REMEMBERED_KEYS {
            totals.clear();
        }
        totals.insert(key, total);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<TotalKey, u64>> {
        // Single inserts: a panic while holding the lock cannot leave the map inconsistent.
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Snapshot {
    pub(crate) async fn load(db: &Database, epoch: u64) -> Result<Self, StorageError> {
        use vellum_storage::{collections, project, roles};
        let settings = project::load_settings(db).await?;
        let locales = settings
            .locales()
            .map_err(|e| StorageError::Corrupt(e.to_string()))?;
        let origins = settings
            .origin_allowlist()
            .map_err(|e| StorageError::Corrupt(e.to_string()))?;
        let hash_key = project::hash_key(db).await?;
        let collections: Vec<Arc<Collection>> = collections::list_collections(db)
            .await?
            .into_iter()
            .map(Arc::new)
            .collect();
        let roles: HashMap<_, _> = roles::load_roles(db)
            .await?
            .into_iter()
            .map(|role| (role.name.clone(), Arc::new(role)))
            .collect();
        Ok(Self {
            by_slug: collections
                .iter()
                .map(|c| (c.slug.to_string(), Arc::clone(c)))
                .collect(),
            by_id: collections.iter().map(|c| (c.id, Arc::clone(c))).collect(),
            collections,
            settings,
            locales,
            origins,
            hash_key,
            roles,
            keys: Mutex::new(HashMap::new()),
            accounts: Mutex::new(HashMap::new()),
            sessions: Mutex::new(HashMap::new()),
            totals: TotalsMemo::default(),
            epoch,
            built: Instant::now(),
        })
    }

    /// The same project at `epoch`, after a content write through this server: settings,
    /// schema, roles and remembered keys carry over (none of them changed), list totals do not.
    /// `built` carries over too, so changes made behind the server's back are still noticed
    /// within the TTL.
    pub(crate) fn carried_to(&self, epoch: u64) -> Self {
        let keys = self
            .keys
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        Self {
            settings: self.settings.clone(),
            locales: self.locales.clone(),
            origins: self.origins.clone(),
            hash_key: self.hash_key.clone(),
            collections: self.collections.clone(),
            by_slug: self.by_slug.clone(),
            by_id: self.by_id.clone(),
            roles: self.roles.clone(),
            keys: Mutex::new(keys),
            accounts: Mutex::new(
                self.accounts
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .clone(),
            ),
            sessions: Mutex::new(
                self.sessions
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .clone(),
            ),
            totals: TotalsMemo::default(),
            epoch,
            built: self.built,
        }
    }

    /// The epoch this snapshot was checked against: cached responses computed from it are
    /// stored under it.
    #[must_use]
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    #[must_use]
    pub fn collection(&self, slug: &str) -> Option<&Arc<Collection>> {
        self.by_slug.get(slug)
    }

    #[must_use]
    pub fn collection_by_id(&self, id: i64) -> Option<&Arc<Collection>> {
        self.by_id.get(&id)
    }

    /// The role named `name`; a role that vanished grants nothing.
    #[must_use]
    pub fn role(&self, name: &str) -> Arc<Role> {
        self.roles.get(name).cloned().unwrap_or_else(|| {
            Arc::new(Role {
                name: name.to_owned(),
                ..Role::default()
            })
        })
    }

    /// Every role's name, sorted.
    #[must_use]
    pub fn role_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.roles.keys().cloned().collect();
        names.sort_unstable();
        names
    }

    /// The role named `name`, if it exists.
    #[must_use]
    pub fn existing_role(&self, name: &str) -> Option<Arc<Role>> {
        self.roles.get(name).cloned()
    }

    /// The key with this id, from the memo or the database.
    pub(crate) async fn find_key(
        &self,
        db: &Database,
        key_id: &KeyId,
    ) -> Result<Option<Arc<FoundKey>>, StorageError> {
        if let Some(found) = self.lock_keys().get(key_id) {
            return Ok(found.clone());
        }
        let found = vellum_storage::keys::find_api_key(db, key_id)
            .await?
            .map(Arc::new);
        let mut keys = self.lock_keys();
        if keys.len() >= MAX_REMEMBERED_KEYS {
            keys.clear();
        }
        keys.insert(key_id.clone(), found.clone());
        Ok(found)
    }

    /// The account and admin permissions of user `id`, from the memo or the database.
    pub(crate) async fn account_access(
        &self,
        db: &Database,
        id: i64,
    ) -> Result<Option<Arc<AccountAccess>>, StorageError> {
        let lock = || {
            self.accounts
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
        };
        if let Some(found) = lock().get(&id) {
            return Ok(found.clone());
        }
        let found = vellum_storage::accounts::account(db, id)
            .await?
            .map(|account| Arc::new(AccountAccess::new(account)));
        let mut accounts = lock();
        if accounts.len() >= MAX_REMEMBERED_KEYS {
            accounts.clear();
        }
        accounts.insert(id, found.clone());
        Ok(found)
    }

    /// The remembered session with this id.
    pub(crate) fn session(&self, id: &str) -> Option<Arc<SessionRow>> {
        self.sessions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(id)
            .cloned()
    }

    /// Remembers a session found in the store (or its newer "last seen").
    pub(crate) fn remember_session(&self, session: Arc<SessionRow>) {
        let mut sessions = self
            .sessions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if sessions.len() >= MAX_REMEMBERED_KEYS {
            sessions.clear();
        }
        sessions.insert(session.id.clone(), session);
    }

    /// Forgets a session (ended on this replica; others learn it from the epoch).
    pub(crate) fn forget_session(&self, id: &str) {
        self.sessions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(id);
    }

    /// Forgets what was remembered of user `id` (its account changed on this replica).
    pub(crate) fn forget_account(&self, id: i64) {
        self.accounts
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(&id);
    }

    /// The remembered total of the list identified by `key`.
    pub(crate) fn total(&self, key: &TotalKey) -> Option<u64> {
        self.totals.get(key)
    }

    /// Remembers the total of the list identified by `key` (bounded: see [`TotalsMemo`]).
    pub(crate) fn remember_total(&self, key: TotalKey, total: u64) {
        self.totals.remember(key, total);
    }

    fn lock_keys(&self) -> std::sync::MutexGuard<'_, HashMap<KeyId, Option<Arc<FoundKey>>>> {
        // A panic while holding this lock cannot leave the map inconsistent (single inserts).
        self.keys
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Whether two snapshots describe a different project (ignoring when they were built).
pub(crate) fn differs(a: &Snapshot, b: &Snapshot) -> bool {
    a.settings != b.settings
        || a.collections.len() != b.collections.len()
        || a.collections.iter().zip(&b.collections).any(|(x, y)| {
            x.id != y.id
                || x.slug != y.slug
                || x.name != y.name
                || x.is_singleton != y.is_singleton
                || x.updated_at != y.updated_at
                || x.fields != y.fields
        })
        || a.roles.len() != b.roles.len()
        || a.roles.iter().any(|(name, role)| {
            b.roles
                .get(name)
                .is_none_or(|other| other.to_json() != role.to_json())
        })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn filter(pairs: &[(&str, &str)]) -> Filter {
        Filter::from_query(pairs.iter().copied()).unwrap()
    }

    /// The memo's keys are 32 bytes whatever the filter, and each part of what a total depends
    /// on gives another key.
    #[test]
    fn totals_are_remembered_under_fixed_size_keys() {
        let en = LocaleCode::parse("en").unwrap();
        let de = LocaleCode::parse("de").unwrap();
        let short = filter(&[("filter[title][_contains]", "a")]);
        let long = filter(&[
            ("filter[title][_contains]", &"a".repeat(1024)),
            ("filter[slug][_in]", &vec!["b".repeat(1024); 60].join(",")),
        ]);
        let role =
            Filter::from_json("item_filter", &json!({"status": {"_eq": "published"}})).unwrap();
        // No heap part: the whole key is inline, so the memo's size is its entry count.
        assert_eq!(std::mem::size_of::<TotalKey>(), 32);
        let key = TotalKey::new(1, &en, &short, None);
        assert_eq!(key, TotalKey::new(1, &en, &short, None));
        for other in [
            TotalKey::new(2, &en, &short, None),
            TotalKey::new(1, &de, &short, None),
            TotalKey::new(1, &en, &long, None),
            TotalKey::new(1, &en, &short, Some(&role)),
            TotalKey::new(1, &en, &Filter::default(), None),
        ] {
            assert_ne!(key, other);
        }

        let memo = TotalsMemo::default();
        memo.remember(key, 7);
        assert_eq!(memo.get(&key), Some(7));
        assert_eq!(memo.get(&TotalKey::new(1, &en, &long, None)), None);
        // Bounded by entries: a flood of distinct lists clears the memo instead of growing it.
        for i in 0..=MAX_REMEMBERED_KEYS {
            let f = filter(&[("filter[title][_eq]", &i.to_string())]);
            memo.remember(TotalKey::new(1, &en, &f, None), 1);
            assert!(memo.lock().len() <= MAX_REMEMBERED_KEYS);
        }
    }
}
