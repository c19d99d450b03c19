//! Project settings (the `settings` table, one JSON value per key) and the per-project secret
//! behind `hash` field fingerprints.
//!
//! Values are checked here, on write, with the same parsers the rest of Vellum uses
//! ([`LocaleCode`], [`ContentLocales`], [`OriginAllowlist`]), so a stored value is always valid and
//! readers never re-check it: an origin with a path or a default locale that is not enabled can
//! never reach the origin gate or the locale fallback. Values are stored normalized (origins in
//! their canonical form), so comparing them later is plain equality.
//!
//! The secret `hash_key` shares the table but is not a setting: [`get_setting`] and
//! [`set_setting`] refuse it, so it cannot leak through, or be overwritten by, the admin surfaces.

use sea_orm::{ConnectionTrait, DbBackend, FromQueryResult, TransactionSession, TransactionTrait};
use serde_json::{Map, Value as Json};
use tracing::instrument;
use vellum_domain::{ContentLocales, DomainError, HashKey, LocaleCode};
use vellum_policy::{OriginAllowlist, PolicyError};

use crate::StorageError;
use crate::sql::{Sql, json_out, parse_json};

/// `content_locales`: the enabled content locales, a non-empty JSON array of locale codes.
pub const CONTENT_LOCALES: &str = "content_locales";
/// `default_locale`: the fallback locale; always one of `content_locales`.
pub const DEFAULT_LOCALE: &str = "default_locale";
/// `public_api_allowed_origins`: the origin gate's allowlist (empty: the gate is off).
pub const PUBLIC_API_ALLOWED_ORIGINS: &str = "public_api_allowed_origins";
/// `files_max_upload_bytes`: the upload size cap of the files API.
pub const FILES_MAX_UPLOAD_BYTES: &str = "files_max_upload_bytes";
/// `chat_max_upload_bytes`: the attachment size cap of the chat hub.
pub const CHAT_MAX_UPLOAD_BYTES: &str = "chat_max_upload_bytes";
/// `daily_prompt_limit`: AI prompts per user per day.
pub const DAILY_PROMPT_LIMIT: &str = "daily_prompt_limit";

/// Every key [`set_setting`] accepts, in the order error messages list them.
pub const SETTING_KEYS: [&str; 6] = [
    CONTENT_LOCALES,
    DEFAULT_LOCALE,
    PUBLIC_API_ALLOWED_ORIGINS,
    FILES_MAX_UPLOAD_BYTES,
    CHAT_MAX_UPLOAD_BYTES,
    DAILY_PROMPT_LIMIT,
];

/// The row holding the fingerprint secret. Not in [`SETTING_KEYS`] on purpose.
const HASH_KEY: &str = "hash_key";
/// The row holding the key that signs transform URLs. Not in [`SETTING_KEYS`] either.
const URL_SIGNING_KEY: &str = "url_signing_key";

/// 50 MiB: the contract's default upload cap for files.
pub const DEFAULT_FILES_MAX_UPLOAD_BYTES: u64 = 50 * 1024 * 1024;
/// 10 MiB: chat attachments are context for a prompt, not an archive, so the cap is lower.
pub const DEFAULT_CHAT_MAX_UPLOAD_BYTES: u64 = 10 * 1024 * 1024;
/// 100 prompts per user per day: enough for regular editorial use while bounding the bill of a
/// runaway script.
pub const DEFAULT_DAILY_PROMPT_LIMIT: u64 = 100;

/// The effective project settings: stored values, and defaults for keys never set.
///
/// The defaults ([`Default`]) are those of a fresh installation: one content locale `en` (also the
/// default locale), no origin allowlist (the origin gate is off),
/// [`DEFAULT_FILES_MAX_UPLOAD_BYTES`], [`DEFAULT_CHAT_MAX_UPLOAD_BYTES`] and
/// [`DEFAULT_DAILY_PROMPT_LIMIT`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectSettings {
    pub content_locales: Vec<String>,
    pub default_locale: String,
    /// Canonical origins (`https://app.example.com`, default port dropped, host lowercased).
    pub public_api_allowed_origins: Vec<String>,
    pub files_max_upload_bytes: u64,
    /// `None` (stored as JSON null): no project cap, the server's ceiling applies.
    pub chat_max_upload_bytes: Option<u64>,
    pub daily_prompt_limit: u64,
}

impl Default for ProjectSettings {
    fn default() -> Self {
        Self {
            content_locales: vec!["en".to_owned()],
            default_locale: "en".to_owned(),
            public_api_allowed_origins: Vec::new(),
            files_max_upload_bytes: DEFAULT_FILES_MAX_UPLOAD_BYTES,
            chat_max_upload_bytes: Some(DEFAULT_CHAT_MAX_UPLOAD_BYTES),
            daily_prompt_limit: DEFAULT_DAILY_PROMPT_LIMIT,
        }
    }
}

impl ProjectSettings {
    /// The locales as the domain crate uses them. Settings loaded by [`load_settings`] always
    /// convert; the error exists because the fields are public and can be set by hand.
    ///
    /// # Errors
    /// When the locales are empty, malformed, duplicated, or the default is not among them.
    pub fn locales(&self) -> Result<ContentLocales, DomainError> {
        ContentLocales::new(&self.content_locales, &self.default_locale)
    }

    /// The origin gate's allowlist. Settings loaded by [`load_settings`] always convert.
    ///
    /// # Errors
    /// When an entry is not an http(s) origin.
    pub fn origin_allowlist(&self) -> Result<OriginAllowlist, PolicyError> {
        OriginAllowlist::from_entries(self.public_api_allowed_origins.iter().map(String::as_str))
    }

    /// Every setting in the shape [`set_settings`] takes, for export (`vellum-admin`).
    #[must_use]
    pub fn to_json(&self) -> Map<String, Json> {
        let mut map = Map::new();
        map.insert(CONTENT_LOCALES.into(), self.content_locales.clone().into());
        map.insert(DEFAULT_LOCALE.into(), self.default_locale.clone().into());
        map.insert(
            PUBLIC_API_ALLOWED_ORIGINS.into(),
            self.public_api_allowed_origins.clone().into(),
        );
        map.insert(
            FILES_MAX_UPLOAD_BYTES.into(),
            self.files_max_upload_bytes.into(),
        );
        map.insert(
            CHAT_MAX_UPLOAD_BYTES.into(),
            self.chat_max_upload_bytes.into(),
        );
        map.insert(DAILY_PROMPT_LIMIT.into(), self.daily_prompt_limit.into());
        map
    }

    /// Applies one already normalized value (see [`normalize`]).
    fn apply(&mut self, key: &str, value: &Json) -> Result<(), String> {
        match key {
            CONTENT_LOCALES => self.content_locales = string_list(value)?,
            DEFAULT_LOCALE => {
                self.default_locale = value
                    .as_str()
                    .ok_or("must be a locale code string")?
                    .to_owned();
            }
            PUBLIC_API_ALLOWED_ORIGINS => self.public_api_allowed_origins = string_list(value)?,
            FILES_MAX_UPLOAD_BYTES => self.files_max_upload_bytes = non_negative(value)?,
            CHAT_MAX_UPLOAD_BYTES => self.chat_max_upload_bytes = nullable(value)?,
            DAILY_PROMPT_LIMIT => self.daily_prompt_limit = non_negative(value)?,
            _ => return Err(unknown_key(key)),
        }
        Ok(())
    }
}

fn unknown_key(key: &str) -> String {
    format!(
        "unknown setting \"{key}\"; known settings: {}",
        SETTING_KEYS.join(", ")
    )
}

fn string_list(value: &Json) -> Result<Vec<String>, String> {
    value
        .as_array()
        .ok_or("must be an array of strings")?
        .iter()
        .map(|v| {
            v.as_str()
                .map(str::to_owned)
                .ok_or("must be an array of strings")
        })
        .collect::<Result<_, _>>()
        .map_err(str::to_owned)
}

/// A non-negative integer, or null.
fn nullable(value: &Json) -> Result<Option<u64>, String> {
    if value.is_null() {
        Ok(None)
    } else {
        non_negative(value)
            .map(Some)
            .map_err(|_| "must be a non-negative integer or null".to_owned())
    }
}

fn non_negative(value: &Json) -> Result<u64, String> {
    value
        .as_u64()
        .ok_or_else(|| "must be a non-negative integer".to_owned())
}

/// Checks one value on its own and returns the form to store: locale codes parsed, origins
/// canonical (a text value is split as the admin form enters it: one per line, or separated by
/// commas or whitespace). Whether the default locale is enabled depends on two keys and is
/// checked by the caller on the combined result.
fn normalize(key: &str, value: &Json) -> Result<Json, String> {
    match key {
        CONTENT_LOCALES => {
            let list = string_list(value)?;
            for code in &list {
                LocaleCode::parse(code).map_err(|e| e.to_string())?;
            }
            Ok(list.into())
        }
        DEFAULT_LOCALE => {
            let code = value.as_str().ok_or("must be a locale code string")?;
            Ok(LocaleCode::parse(code)
                .map_err(|e| e.to_string())?
                .as_str()
                .into())
        }
        PUBLIC_API_ALLOWED_ORIGINS => {
            let list = match value {
                Json::String(text) => OriginAllowlist::parse(text),
                other => {
                    let entries = string_list(other)?;
                    OriginAllowlist::from_entries(entries.iter().map(String::as_str))
                }
            }
            .map_err(|e| e.to_string())?;
            Ok(list
                .entries()
                .iter()
                .map(|o| Json::from(o.as_str()))
                .collect())
        }
        FILES_MAX_UPLOAD_BYTES | DAILY_PROMPT_LIMIT => Ok(non_negative(value)?.into()),
        CHAT_MAX_UPLOAD_BYTES => Ok(nullable(value)?.into()),
        _ => Err(unknown_key(key)),
    }
}

/// The effective settings, in one query.
///
/// # Errors
/// A database error, or [`StorageError::Corrupt`] when a stored value no longer parses (never
/// caused by [`set_setting`], which stores only valid values).
#[instrument(skip_all, err)]
pub async fn load_settings<C: ConnectionTrait>(db: &C) -> Result<ProjectSettings, StorageError> {
    let backend = db.get_database_backend();
    let mut sql = Sql::new(backend);
    sql.push("SELECT key, ")
        .push(&json_out(backend, "value"))
        .push(" AS value FROM settings WHERE key IN ");
    sql.bind_list(SETTING_KEYS);
    let mut settings = ProjectSettings::default();
    for row in sql.all_as::<SettingRow, _>(db).await? {
        let key = row.key;
        let value = parse_json(row.value.as_deref())?;
        settings
            .apply(&key, &value)
            .map_err(|e| StorageError::corrupt(format!("setting {key}: {e}")))?;
    }
    settings
        .locales()
        .map_err(|e| StorageError::corrupt(format!("settings: {e}")))?;
    Ok(settings)
}

/// The stored value of `key`, or `None` when it was never set (the default of
/// [`ProjectSettings`] then applies; [`load_settings`] gives effective values).
///
/// # Errors
/// [`StorageError::Conflict`] for a key not in [`SETTING_KEYS`] (which includes the fingerprint
/// secret: it is never handed out here), or a database error.
#[instrument(skip_all, err, fields(key))]
pub async fn get_setting<C: ConnectionTrait>(
    db: &C,
    key: &str,
) -> Result<Option<Json>, StorageError> {
    if !SETTING_KEYS.contains(&key) {
        return Err(StorageError::conflict(unknown_key(key)));
    }
    let backend = db.get_database_backend();
    let mut sql = Sql::new(backend);
    sql.push("SELECT ")
        .push(&json_out(backend, "value"))
        .push(" AS value FROM settings WHERE key = ")
        .bind(key);
    sql.one_as::<ValueRow, _>(db)
        .await?
        .map(|row| parse_json(row.value.as_deref()))
        .transpose()
}

/// Every problem of `values` checked one key at a time (an unknown key, a wrong type, a
/// malformed locale or origin, a negative number), keyed by setting, so a form can show them all
/// at once. What depends on several keys (the default locale must be enabled) is checked by
/// [`set_settings`] against the combined result.
#[must_use]
pub fn check_settings(values: &Map<String, Json>) -> vellum_domain::ValidationErrors {
    let mut errors = vellum_domain::ValidationErrors::new();
    for (key, value) in values {
        if let Err(message) = normalize(key, value) {
            errors.add(key.clone(), message);
        }
    }
    errors
}

/// Sets one setting; see [`set_settings`].
///
/// # Errors
/// As [`set_settings`].
#[instrument(skip_all, err, fields(key))]
pub async fn set_setting<C: ConnectionTrait + TransactionTrait>(
    db: &C,
    key: &str,
    value: Json,
) -> Result<(), StorageError> {
    let mut map = Map::new();
    map.insert(key.to_owned(), value);
    set_settings(db, &map).await
}

/// Sets several settings at once, all or nothing.
///
/// Several at once because `content_locales` and `default_locale` constrain each other: moving a
/// project from `[en]`/`en` to `[de]`/`de` is impossible one key at a time (either intermediate
/// state has a default that is not enabled), so the check runs on the combined result. The values
/// are written in one statement.
///
/// # Errors
/// [`StorageError::Conflict`] naming the key and the problem (unknown key, listing the known
/// ones; wrong type; malformed locale or origin; negative number; default locale not enabled);
/// nothing is written. A database error.
#[instrument(skip_all, err, fields(keys = ?values.keys().collect::<Vec<_>>()))]
pub async fn set_settings<C: ConnectionTrait + TransactionTrait>(
    db: &C,
    values: &Map<String, Json>,
) -> Result<(), StorageError> {
    let mut normalized = Vec::with_capacity(values.len());
    for (key, value) in values {
        let stored = normalize(key, value)
            .map_err(|e| StorageError::conflict(format!("setting {key}: {e}")))?;
        normalized.push((key.as_str(), stored));
    }
    if normalized.is_empty() {
        return Ok(());
    }
    let touches_locales =
        values.contains_key(CONTENT_LOCALES) || values.contains_key(DEFAULT_LOCALE);
    // The locale check reads the stored values, so the read and the write share a transaction
    // that holds the write lock from the start: two admins changing locales at once cannot both
    // pass the check against the same old state.
    let tx = crate::sql::begin_write(db).await?;
    let backend = tx.get_database_backend();
    if touches_locales {
        if backend == DbBackend::Postgres {
            // Serializes settings writers (not readers) until commit; PostgreSQL's default
            // isolation would otherwise let two checks see the same old state.
            tx.execute_unprepared("LOCK TABLE settings IN SHARE ROW EXCLUSIVE MODE")
                .await?;
        }
        let mut combined = load_settings(&tx).await?;
        for (key, value) in &normalized {
            combined
                .apply(key, value)
                .map_err(|e| StorageError::conflict(format!("setting {key}: {e}")))?;
        }
        combined
            .locales()
            .map_err(|e| StorageError::conflict(format!("settings: {e}")))?;
    }
    let mut sql = Sql::new(backend);
    sql.push("INSERT INTO settings (key, value) VALUES ");
    for (i, (key, value)) in normalized.iter().enumerate() {
        if i > 0 {
            sql.push(", ");
        }
        sql.push("(")
            .bind(*key)
            .push(", ")
            .bind_json(value)
            .push(")");
    }
    sql.push(" ON CONFLICT (key) DO UPDATE SET value = excluded.value");
    sql.execute(&tx).await?;
    tx.commit().await?;
    Ok(())
}

/// The per-project secret keying `hash` fingerprints, created on first use.
///
/// Fingerprints must stay stable for the life of the project (equality filters and `unique`
/// compare them), so the secret is generated once and only ever read afterwards. Creation is an
/// insert-if-absent followed by a read, so two processes starting at once agree on the winner's
/// secret instead of each keeping its own.
///
/// The secret is 32 bytes from two version-4 UUIDs (244 random bits from the OS source):
/// `getrandom` is not a dependency of this crate, and 244 bits are far beyond guessing.
///
/// # Errors
/// A database error, or [`StorageError::Corrupt`] when the stored secret is not hex.
#[instrument(skip_all, err)]
pub async fn hash_key<C: ConnectionTrait>(db: &C) -> Result<HashKey, StorageError> {
    stored_secret(db, HASH_KEY, "hash key")
        .await
        .map(HashKey::new)
}

/// The key signing transform URLs (issue 24) when the operator configured none
/// (`VELLUM_URL_SIGNING_KEY`): 32 random bytes created on first use and only read afterwards, as
/// [`hash_key`] is, so replicas starting together agree and sign alike. Never listed as a
/// setting.
///
/// # Errors
/// A database error, or [`StorageError::Corrupt`] when the stored key is not hex.
#[instrument(skip_all, err)]
pub async fn url_signing_key<C: ConnectionTrait>(db: &C) -> Result<Vec<u8>, StorageError> {
    stored_secret(db, URL_SIGNING_KEY, "URL signing key").await
}

/// The secret in row `row`, created first when absent (an insert-if-absent then a read, so the
/// first writer wins for everyone).
async fn stored_secret<C: ConnectionTrait>(
    db: &C,
    row: &str,
    what: &str,
) -> Result<Vec<u8>, StorageError> {
    if let Some(secret) = read_secret(db, row, what).await? {
        return Ok(secret);
    }
    let mut bytes = Vec::with_capacity(32);
    bytes.extend_from_slice(uuid::Uuid::new_v4().as_bytes());
    bytes.extend_from_slice(uuid::Uuid::new_v4().as_bytes());
    let backend = db.get_database_backend();
    let mut sql = Sql::new(backend);
    sql.push("INSERT INTO settings (key, value) VALUES (")
        .bind(row)
        .push(", ")
        .bind_json(&Json::from(hex::encode(&bytes)))
        .push(") ON CONFLICT (key) DO NOTHING");
    sql.execute(db).await?;
    read_secret(db, row, what).await?.ok_or_else(|| {
        StorageError::corrupt(format!("the {what} just written cannot be read back"))
    })
}

async fn read_secret<C: ConnectionTrait>(
    db: &C,
    row: &str,
    what: &str,
) -> Result<Option<Vec<u8>>, StorageError> {
    let backend = db.get_database_backend();
    let mut sql = Sql::new(backend);
    sql.push("SELECT ")
        .push(&json_out(backend, "value"))
        .push(" AS value FROM settings WHERE key = ")
        .bind(row);
    let Some(row) = sql.one_as::<ValueRow, _>(db).await? else {
        return Ok(None);
    };
    let bytes = parse_json(row.value.as_deref())?
        .as_str()
        .and_then(|text| hex::decode(text).ok())
        .filter(|b| !b.is_empty())
        .ok_or_else(|| StorageError::corrupt(format!("the stored {what} is not hex")))?;
    Ok(Some(bytes))
}

/// A setting as stored (`value` as JSON text).
#[derive(FromQueryResult)]
struct SettingRow {
    key: String,
    value: Option<String>,
}

/// A setting's value alone (JSON text).
#[derive(FromQueryResult)]
struct ValueRow {
    value: Option<String>,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn values_are_normalized_or_refused() {
        let ok = [
            (
                CONTENT_LOCALES,
                json!(["en", "de-AT"]),
                json!(["en", "de-AT"]),
            ),
            (DEFAULT_LOCALE, json!("de"), json!("de")),
            (
                PUBLIC_API_ALLOWED_ORIGINS,
                json!(["HTTPS://App.Example.com:443", "https://app.example.com"]),
                json!(["https://app.example.com"]),
            ),
            (
                PUBLIC_API_ALLOWED_ORIGINS,
                json!("https://a.test,\nhttp://b.test:8080"),
                json!(["https://a.test", "http://b.test:8080"]),
            ),
            (FILES_MAX_UPLOAD_BYTES, json!(0), json!(0)),
            (CHAT_MAX_UPLOAD_BYTES, json!(2048), json!(2048)),
            (CHAT_MAX_UPLOAD_BYTES, json!(null), json!(null)),
            (DAILY_PROMPT_LIMIT, json!(5), json!(5)),
        ];
        for (key, raw, stored) in ok {
            assert_eq!(normalize(key, &raw).unwrap(), stored, "{key} {raw}");
        }
        let bad = [
            (CONTENT_LOCALES, json!("en")),
            (CONTENT_LOCALES, json!(["EN"])),
            (DEFAULT_LOCALE, json!(1)),
            (PUBLIC_API_ALLOWED_ORIGINS, json!(["https://a.test/app"])),
            (PUBLIC_API_ALLOWED_ORIGINS, json!([1])),
            (FILES_MAX_UPLOAD_BYTES, json!(-1)),
            (FILES_MAX_UPLOAD_BYTES, json!(null)),
            (CHAT_MAX_UPLOAD_BYTES, json!(1.5)),
            (DAILY_PROMPT_LIMIT, json!("5")),
            (HASH_KEY, json!("00")),
        ];
        for (key, raw) in bad {
            assert!(normalize(key, &raw).is_err(), "{key} {raw}");
        }
    }

    #[test]
    fn defaults_are_a_valid_project() {
        let d = ProjectSettings::default();
        assert_eq!(d.locales().unwrap().default_locale().as_str(), "en");
        assert!(d.origin_allowlist().unwrap().is_empty());
        assert_eq!(d.files_max_upload_bytes, 52_428_800);
        let mut again = ProjectSettings::default();
        for (k, v) in d.to_json() {
            again.apply(&k, &v).unwrap();
        }
        assert_eq!(again, d);
    }
}
