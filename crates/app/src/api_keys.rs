//! API keys over the admin app (`/settings/api-keys…`) and the CLI (`vellum-admin keys`): list
//! without secrets, create (the secret is shown once), revoke.
//!
//! Creating a key is [`create_key`], shared by both surfaces so a key is checked the same way
//! wherever it is made: a unique name, an existing role other than `public` (anonymous requests
//! already act as `public`; a key bound to it would only add a credential to leak), IPs or CIDR
//! ranges ([`IpAllowlist`]) and an RFC 3339 expiry (in the past is accepted: the key then never
//! authenticates, as the operator contract says). The secret is generated from the OS random
//! source and only its key id and SHA-256 digest are stored.
//!
//! Revoking moves the epoch: every replica drops its snapshot, whose key memo would otherwise
//! keep accepting the key until the snapshot's TTL.

use serde::Serialize;
use serde_json::{Value as Json, json};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use vellum_domain::ValidationErrors;
use vellum_policy::{ApiKeySecret, IpAllowlist, SystemRole};
use vellum_storage::Database;
use vellum_storage::keys::{self as stored, ApiKeySummary, NewApiKey};
use vellum_storage::roles;

use crate::activity::{self, Change};
use crate::context::AppState;
use crate::error::AppError;
use crate::input::Input;
use crate::paging::{Paginated, Paging};
use crate::principal::Principal;
use crate::resources::timestamp;
use crate::roles::parse_id;

/// The longest key name.
pub const MAX_NAME: usize = 255;
/// The most IP allowlist entries of one key.
pub const MAX_IPS: usize = 100;
/// The longest IP allowlist entry (an IPv6 CIDR range is at most 43 characters).
pub const MAX_IP_LEN: usize = 64;

/// The field of [`NewKey`] a problem is about, as the JSON body names it (the CLI maps it to its
/// flag).
pub mod field {
    pub const NAME: &str = "name";
    pub const ROLE: &str = "role";
    pub const IP_ALLOWLIST: &str = "ip_allowlist";
    pub const EXPIRES_AT: &str = "expires_at";
}

/// A key to create, as a surface read it. `None` for `name` or `role`: the surface already
/// reported that field as missing or malformed, so it is not checked again.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NewKey<'a> {
    pub name: Option<&'a str>,
    pub role: Option<&'a str>,
    pub ip_allowlist: Vec<&'a str>,
    /// RFC 3339.
    pub expires_at: Option<&'a str>,
}

/// A key just created, with its secret (show it once, store it nowhere).
#[derive(Debug, Clone)]
pub struct CreatedKey {
    pub key: ApiKeySummary,
    pub secret: ApiKeySecret,
}

/// A key as the admin app lists it: never its secret or digest.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ApiKeyResource {
    pub id: i64,
    pub name: String,
    /// The non-secret lookup id: the 12 characters after `ek_`.
    pub key_id: String,
    pub role: String,
    pub ip_allowlist: Vec<String>,
    pub expires_at: Json,
    pub revoked_at: Json,
    pub last_used_at: Json,
    pub created_at: Json,
}

impl From<&ApiKeySummary> for ApiKeyResource {
    fn from(key: &ApiKeySummary) -> Self {
        Self {
            id: key.id,
            name: key.name.clone(),
            key_id: key.key_id.as_str().to_owned(),
            role: key.role.clone(),
            ip_allowlist: key.ip_allowlist.entries(),
            expires_at: timestamp(key.expires_at),
            revoked_at: timestamp(key.revoked_at),
            last_used_at: timestamp(key.last_used_at),
            created_at: timestamp(Some(key.created_at)),
        }
    }
}

/// The answer to a create: the key and, this once, its secret.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CreatedKeyResource {
    #[serde(flatten)]
    pub key: ApiKeyResource,
    pub secret: String,
}

/// A page of keys in creation order, revoked ones included.
///
/// # Errors
/// 403 without `can-show-api-keys`, 422 for a bad page, the database.
pub async fn list(
    state: &AppState,
    principal: &Principal,
    query: &str,
) -> Result<Paginated<ApiKeyResource>, AppError> {
    principal.require("can-show-api-keys")?;
    let paging = Paging::parse(query)?;
    let page = stored::list_api_keys_page(state.db(), paging.page, paging.per_page).await?;
    Ok(Paginated::from_page(page, |key| ApiKeyResource::from(&key)))
}

/// What the API keys page shows: a page of keys and, for a user who may create keys, the roles
/// a new key can be bound to (`super-admin` only for a super-admin, as [`create`] decides).
#[derive(Debug, Clone)]
pub struct KeysScreen {
    pub page: Paginated<ApiKeyResource>,
    pub can_manage: bool,
    pub roles: Vec<String>,
}

/// [`list`] with what the page's create form offers.
///
/// # Errors
/// As [`list`].
pub async fn screen(
    state: &AppState,
    principal: &Principal,
    query: &str,
) -> Result<KeysScreen, AppError> {
    let page = list(state, principal, query).await?;
    let can_manage = principal.may("can-manage-api-keys");
    let roles = if can_manage {
        let super_admin = principal.require_super_admin_if(true).is_ok();
        state
            .snapshot()
            .await?
            .role_names()
            .into_iter()
            .filter(|name| super_admin || name != crate::principal::SUPER_ADMIN)
            .filter(|name| name != SystemRole::Public.name())
            .collect()
    } else {
        Vec::new()
    };
    Ok(KeysScreen {
        page,
        can_manage,
        roles,
    })
}

/// Creates a key from `{name, role, ip_allowlist?, expires_at?}`.
///
/// # Errors
/// 403 without `can-manage-api-keys`; 422 naming every wrong field; the database.
pub async fn create(
    state: &AppState,
    principal: &Principal,
    body: &Json,
) -> Result<CreatedKeyResource, AppError> {
    principal.require("can-manage-api-keys")?;
    principal.require_super_admin_if(
        body.get(field::ROLE).and_then(Json::as_str) == Some(crate::principal::SUPER_ADMIN),
    )?;
    crate::nul::refuse_in_body(body)?;
    let mut input = Input::new(body)?;
    let name = input.required_str(field::NAME, MAX_NAME);
    let role = input.required_str(field::ROLE, MAX_NAME);
    let ip_allowlist = match input.raw(field::IP_ALLOWLIST) {
        None | Some(Json::Null) => Some(Vec::new()),
        Some(_) => input.optional_strings(field::IP_ALLOWLIST, MAX_IPS, MAX_IP_LEN),
    };
    let expires_at = input.optional_str(field::EXPIRES_AT, 64).flatten();
    let mut errors = take_errors(input);
    let new = NewKey {
        name,
        role,
        ip_allowlist: ip_allowlist.unwrap_or_default(),
        expires_at,
    };
    let created = create_key_with(state.db(), &new, &mut errors).await?;
    let created = created.ok_or(AppError::Invalid(errors))?;
    activity::record(
        state,
        Some(principal.user_id()),
        Change::new("api_keys", "created")
            .subject("api_key", created.key.id)
            .changed(
                ["name", "role", "ip_allowlist", "expires_at"]
                    .into_iter()
                    .filter(|key| matches!(*key, "name" | "role") || body.get(key).is_some()),
            ),
    )
    .await;
    state.invalidate().await;
    Ok(CreatedKeyResource {
        key: ApiKeyResource::from(&created.key),
        secret: created.secret.expose().to_owned(),
    })
}

/// Revokes key `id`: from now on it is refused (401) on every replica. Revoking again keeps the
/// first revocation time.
///
/// # Errors
/// 403 without `can-manage-api-keys`; 404 for an unknown key; the database.
pub async fn revoke(state: &AppState, principal: &Principal, id: &str) -> Result<(), AppError> {
    principal.require("can-manage-api-keys")?;
    let id = parse_id(id)?;
    let key = stored::revoke_api_key_by_id(state.db(), id).await?;
    activity::record(
        state,
        Some(principal.user_id()),
        Change::new("api_keys", "revoked")
            .subject("api_key", id)
            .changed(["revoked_at"])
            .extra(json!({ "name": key.name })),
    )
    .await;
    state.invalidate().await;
    Ok(())
}

/// Creates the key `new` describes (for surfaces without a principal: the CLI).
///
/// # Errors
/// [`AppError::Invalid`] keyed by [`field`] names; the database.
pub async fn create_key(db: &Database, new: &NewKey<'_>) -> Result<CreatedKey, AppError> {
    let mut errors = ValidationErrors::new();
    match create_key_with(db, new, &mut errors).await? {
        Some(created) => Ok(created),
        None => Err(AppError::Invalid(errors)),
    }
}

/// Checks `new` (adding to the problems already in `errors`) and creates the key when there are
/// none; `None` when there are.
async fn create_key_with(
    db: &Database,
    new: &NewKey<'_>,
    errors: &mut ValidationErrors,
) -> Result<Option<CreatedKey>, AppError> {
    if let Some(name) = new.name {
        if name.trim().is_empty() || name.trim() != name {
            errors.add(
                field::NAME,
                "a key name must be non-empty without leading or trailing spaces",
            );
        } else if name.chars().count() > MAX_NAME {
            errors.add(
                field::NAME,
                format!("a key name must not be longer than {MAX_NAME} characters"),
            );
        } else if stored::api_key_by_name(db, name).await?.is_some() {
            errors.add(
                field::NAME,
                format!("an API key named \"{name}\" already exists"),
            );
        }
    }
    if let Some(role) = new.role {
        if role == SystemRole::Public.name() {
            errors.add(
                field::ROLE,
                "a key cannot act as the public role: requests without a key already do",
            );
        } else if roles::load_role(db, role).await?.is_none() {
            errors.add(field::ROLE, format!("no role named \"{role}\""));
        }
    }
    let mut ips_ok = true;
    for (i, entry) in new.ip_allowlist.iter().enumerate() {
        if let Err(e) = IpAllowlist::parse([*entry]) {
            errors.add(format!("{}.{i}", field::IP_ALLOWLIST), e.to_string());
            ips_ok = false;
        }
    }
    let ip_allowlist = if ips_ok {
        IpAllowlist::parse(new.ip_allowlist.iter().copied()).map_err(|e| {
            errors.add(field::IP_ALLOWLIST, e.to_string());
        })
    } else {
        Err(())
    };
    let expires_at = new
        .expires_at
        .map(parse_expiry)
        .transpose()
        .map_err(|message| errors.add(field::EXPIRES_AT, message));
    let (Some(name), Some(role), Ok(ip_allowlist), Ok(expires_at)) =
        (new.name, new.role, ip_allowlist, expires_at)
    else {
        return Ok(None);
    };
    if !errors.is_empty() {
        return Ok(None);
    }
    let secret = ApiKeySecret::generate().map_err(AppError::internal)?;
    let key = stored::create_api_key(
        db,
        NewApiKey {
            name,
            role,
            secret: &secret,
            ip_allowlist: &ip_allowlist,
            expires_at,
        },
    )
    .await?;
    Ok(Some(CreatedKey { key, secret }))
}

/// An RFC 3339 expiry within the years the databases store (0 to 9999 in UTC).
fn parse_expiry(raw: &str) -> Result<OffsetDateTime, String> {
    let t = OffsetDateTime::parse(raw, &Rfc3339).map_err(|e| {
        format!("\"{raw}\" is not an RFC 3339 date-time (e.g. 2027-01-01T00:00:00Z): {e}")
    })?;
    match t.checked_to_offset(time::UtcOffset::UTC) {
        Some(utc) if (0..=9999).contains(&utc.year()) => Ok(utc),
        Some(utc) if utc.year() < 0 => Err(format!("\"{raw}\" is before year 0 in UTC")),
        _ => Err(format!("\"{raw}\" is past year 9999 in UTC")),
    }
}

/// The problems an [`Input`] recorded, to carry on checking.
fn take_errors(input: Input<'_>) -> ValidationErrors {
    match input.finish() {
        Err(AppError::Invalid(errors)) => errors,
        _ => ValidationErrors::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expiries_are_rfc3339_within_storable_years() {
        assert_eq!(
            parse_expiry("2030-01-01T12:00:00+02:00").unwrap(),
            time::macros::datetime!(2030-01-01 10:00 UTC)
        );
        assert!(
            parse_expiry("2000-01-01T00:00:00Z").is_ok(),
            "past: accepted"
        );
        assert!(parse_expiry("tomorrow").unwrap_err().contains("RFC 3339"));
        assert!(
            parse_expiry("9999-12-31T23:00:00-02:00")
                .unwrap_err()
                .contains("past year 9999")
        );
        assert!(
            parse_expiry("0000-01-01T00:00:00+01:00")
                .unwrap_err()
                .contains("before year 0")
        );
    }
}
