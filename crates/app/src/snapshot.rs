//! The project snapshot: what nearly every request needs and rarely changes (settings, locales,
//! the origin allowlist, the hash key, every collection's schema and every role's grants), plus
//! what is remembered for exactly as long as it holds (key lookups, list totals and positions).
//!
//! Reading it per request would cost several queries; [`crate::AppState::snapshot`] rebuilds it
//! when the global epoch moves (a change of the project through this server; content writes move
//! only their scope's counter, see [`crate::cache::scope`]) or when it is older than `snapshot_ttl` (a
//! change made behind the server's back, e.g. by `vellum-admin`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use vellum_domain::{ContentLocales, HashKey};
use vellum_policy::{KeyId, OriginAllowlist, Role};
use vellum_storage::keys::FoundKey;
use vellum_storage::model::Collection;
use vellum_storage::project::ProjectSettings;
use vellum_storage::sessions::SessionRow;
use vellum_storage::{Database, StorageError};

use crate::cache::Scope;
use crate::list_memo::ListMemo;
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
    /// Item list totals and positions read since the snapshot was built, each under the stamp
    /// of its collection's content ([`crate::cache::scope`]), so a write of that content makes
    /// them unreachable.
    pub(crate) lists: ListMemo,
    /// The content scopes each collection's answers depend on, by collection id.
    scopes: HashMap<i64, Vec<Scope>>,
    /// The webhooks and what they subscribe to (a change to one invalidates the snapshot).
    pub webhooks: Vec<crate::webhook_events::Subscription>,
    pub(crate) epoch: u64,
    pub(crate) built: Instant,
}

/// Key lookups remembered per snapshot; beyond this (a flood of random key ids) the memo is
/// cleared rather than grown.
pub(crate) const MAX_REMEMBERED_KEYS: usize = 10_000;

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
        let webhooks = vellum_storage::webhooks::all(db)
            .await?
            .iter()
            .map(crate::webhook_events::Subscription::of)
            .collect();
        Ok(Self {
            webhooks,
            scopes: crate::cache::scope::dependencies(&collections),
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
            lists: ListMemo::default(),
            epoch,
            built: Instant::now(),
        })
    }

    /// The content scopes the answers about collection `id` depend on: its own, those of the
    /// collections its relations reach and files when a file field is reachable; every
    /// content write's for an unknown collection.
    #[must_use]
    pub fn scopes_of(&self, id: i64) -> &[Scope] {
        const ANY: &[Scope] = &[Scope::Any];
        self.scopes.get(&id).map_or(ANY, Vec::as_slice)
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
