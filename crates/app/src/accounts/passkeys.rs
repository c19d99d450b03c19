//! Passkeys (admin contract, "Passkeys"): registration while signed in, usernameless sign-in,
//! list and delete. webauthn-rs checks every signature, challenge, origin and counter; this
//! module keeps its state between the two requests of a ceremony (in the session store, so any
//! replica finishes it) and the credentials with their owners.
//!
//! Passkeys are registered as discoverable credentials (resident key required: webauthn-rs asks
//! for `discouraged`, with which Chromium makes credentials a usernameless sign-in cannot find),
//! under one random user handle per user. A sign-in finds the user by the handle the
//! authenticator hands back; an unknown, deleted or mismatched one is one 422 for all.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::{Deserialize, Serialize};
use serde_json::{Value as Json, json};
use time::OffsetDateTime;
use uuid::Uuid;
use vellum_storage::passkeys::{self as store, NewPasskey, PasskeyRow};
use webauthn_rs::Webauthn;
use webauthn_rs::prelude::{
    DiscoverableAuthentication, Passkey, PasskeyRegistration, PublicKeyCredential,
    RegisterPublicKeyCredential,
};

use super::{Client, SignedIn, start_session};
use crate::activity::{self, Change};
use crate::context::AppState;
use crate::error::AppError;
use crate::identity::throttle::{Counter, Limit};
use crate::input::Input;
use crate::principal::Principal;

/// Sign-in ceremonies started per client address: generous (a person retries a few times), a
/// bound on what one address can make the store hold.
const OPTIONS_PER_ADDRESS: Limit = Limit {
    max: 60,
    window: std::time::Duration::from_secs(15 * 60),
};

/// Registration ceremonies a signed-in user may start: enough to retry, not enough to fill the
/// store other users' sign-ins need.
const REGISTRATIONS_PER_USER: Limit = Limit {
    max: 30,
    window: std::time::Duration::from_secs(15 * 60),
};

/// The longest passkey name.
const MAX_NAME: usize = 100;
/// The longest ceremony id (ours are 43 characters).
const MAX_CEREMONY: usize = 64;

/// A passkey as the account's list shows it (never its key material).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PasskeyResource {
    pub id: i64,
    pub name: String,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339::option")]
    pub last_used_at: Option<OffsetDateTime>,
}

impl From<PasskeyRow> for PasskeyResource {
    fn from(row: PasskeyRow) -> Self {
        Self {
            id: row.id,
            name: row.name,
            created_at: row.created_at,
            last_used_at: row.last_used_at,
        }
    }
}

/// What a registration ceremony keeps between its two requests.
#[derive(Serialize, Deserialize)]
struct Registering {
    user_id: i64,
    user_handle: String,
    state: PasskeyRegistration,
}

/// Whether passkeys work on this server (`VELLUM_BASE_URL` can be a relying party).
#[must_use]
pub fn available(state: &AppState) -> bool {
    state.identity().passkeys.is_some()
}

fn relying_party(state: &AppState) -> Result<&Webauthn, AppError> {
    state.identity().passkeys.as_deref().ok_or_else(|| {
        AppError::invalid(
            "passkey",
            "Passkeys are off: VELLUM_BASE_URL must name a host (browsers refuse passkeys on an IP address).",
        )
    })
}

fn internal(err: impl std::fmt::Display) -> AppError {
    AppError::Internal(err.to_string().into())
}

/// A new ceremony id: 32 random bytes, base64url.
fn ceremony_id() -> Result<String, AppError> {
    let mut bytes = [0_u8; 32];
    getrandom::fill(&mut bytes).map_err(internal)?;
    Ok(URL_SAFE_NO_PAD.encode(bytes))
}

/// The answer to an options request: the ceremony to send back, and the options for
/// `navigator.credentials` (`{"publicKey": …}`).
fn options(ceremony: String, options: Json) -> Json {
    json!({ "ceremony": ceremony, "options": options })
}

/// `POST /account/passkeys/options`: creation options for a new passkey of the signed-in user.
///
/// # Errors
/// 422 when passkeys are off; 429 after 30 starts in 15 minutes, or when too many ceremonies
/// are in progress; the store.
pub async fn registration_options(
    state: &AppState,
    principal: &Principal,
) -> Result<Json, AppError> {
    let rp = relying_party(state)?;
    let account = &principal.access.account;
    state
        .identity()
        .throttle
        .attempt(&[Counter::new(
            "passkey-register-user",
            &account.id.to_string(),
            REGISTRATIONS_PER_USER,
        )])
        .await
        .map_err(|retry_after| AppError::Throttled { retry_after })?;
    let existing = store::passkeys_of_user(state.db(), account.id).await?;
    let user_handle = match existing.first() {
        Some(p) => Uuid::parse_str(&p.user_handle).map_err(internal)?,
        None => Uuid::new_v4(),
    };
    let exclude = existing
        .iter()
        .filter_map(|p| URL_SAFE_NO_PAD.decode(&p.credential_id).ok())
        .collect::<Vec<_>>();
    let name = account
        .email
        .clone()
        .unwrap_or_else(|| account.name.clone());
    let (creation, registering) = rp
        .start_passkey_registration(user_handle, &name, &account.name, Some(exclude))
        .map_err(internal)?;
    let mut creation = serde_json::to_value(creation).map_err(internal)?;
    if let Some(selection) = creation.pointer_mut("/publicKey/authenticatorSelection") {
        selection["residentKey"] = json!("required");
        selection["requireResidentKey"] = json!(true);
    }
    let ceremony = ceremony_id()?;
    let kept = Registering {
        user_id: account.id,
        user_handle: user_handle.to_string(),
        state: registering,
    };
    state
        .identity()
        .ceremonies
        .put(&ceremony, serde_json::to_string(&kept).map_err(internal)?)
        .await?;
    Ok(options(ceremony, creation))
}

/// `POST /account/passkeys`: `{"ceremony", "credential", "name"?}` stores the passkey the
/// browser created for the ceremony.
///
/// # Errors
/// 422 for a missing, expired or someone else's ceremony, a credential that does not verify or
/// is already registered, more than 20 passkeys; the store.
pub async fn register(
    state: &AppState,
    principal: &Principal,
    body: &Json,
) -> Result<PasskeyResource, AppError> {
    let rp = relying_party(state)?;
    let mut input = Input::new(body)?;
    let ceremony = input.required_str("ceremony", MAX_CEREMONY);
    let name = input.optional_str("name", MAX_NAME).flatten();
    let credential = input.raw("credential").cloned();
    input.finish()?;
    let unverified = || AppError::invalid("credential", "The passkey could not be verified.");
    let credential: RegisterPublicKeyCredential = credential
        .and_then(|c| serde_json::from_value(c).ok())
        .ok_or_else(unverified)?;
    let kept = take(state, ceremony).await?;
    let kept: Registering = serde_json::from_str(&kept).map_err(|_| unverified())?;
    if kept.user_id != principal.user_id() {
        return Err(expired());
    }
    let passkey: Passkey = rp
        .finish_passkey_registration(&credential, &kept.state)
        .map_err(|_| unverified())?;
    let name = name.map_or_else(|| "Passkey".to_owned(), str::to_owned);
    let row = store::insert_passkey(
        state.db(),
        &NewPasskey {
            user_id: kept.user_id,
            user_handle: &kept.user_handle,
            credential_id: &URL_SAFE_NO_PAD.encode(passkey.cred_id()),
            name: &name,
            credential: &serde_json::to_string(&passkey).map_err(internal)?,
        },
        OffsetDateTime::now_utc(),
    )
    .await?;
    record(
        state,
        principal.user_id(),
        "passkey_added",
        json!({ "passkey_id": row.id }),
    )
    .await;
    Ok(row.into())
}

fn expired() -> AppError {
    AppError::invalid("ceremony", "The passkey request has expired; start again.")
}

/// The ceremony's kept state, once.
async fn take(state: &AppState, ceremony: Option<&str>) -> Result<String, AppError> {
    let Some(ceremony) = ceremony else {
        return Err(expired());
    };
    state
        .identity()
        .ceremonies
        .take(ceremony)
        .await?
        .ok_or_else(expired)
}

/// `GET /account/passkeys`: the signed-in user's passkeys, oldest first.
///
/// # Errors
/// The database.
pub async fn list(
    state: &AppState,
    principal: &Principal,
) -> Result<Vec<PasskeyResource>, AppError> {
    Ok(store::passkeys_of_user(state.db(), principal.user_id())
        .await?
        .into_iter()
        .map(PasskeyResource::from)
        .collect())
}

/// `DELETE /account/passkeys/{id}`: removes one of the signed-in user's passkeys.
///
/// # Errors
/// 404 for an unknown id or another user's passkey; the database.
pub async fn delete(state: &AppState, principal: &Principal, id: &str) -> Result<(), AppError> {
    let id: i64 = id.parse().map_err(|_| AppError::NotFound)?;
    if !store::delete_passkey(state.db(), principal.user_id(), id).await? {
        return Err(AppError::NotFound);
    }
    record(
        state,
        principal.user_id(),
        "passkey_removed",
        json!({ "passkey_id": id }),
    )
    .await;
    Ok(())
}

/// `POST /login/passkey/options`: request options for a usernameless sign-in.
///
/// # Errors
/// 422 when passkeys are off; 429 after too many from the address, or when too many
/// ceremonies are in progress; the store.
pub async fn sign_in_options(state: &AppState, client: &Client) -> Result<Json, AppError> {
    let rp = relying_party(state)?;
    state
        .identity()
        .throttle
        .attempt(&[Counter::new(
            "passkey-options-ip",
            client.address_key(),
            OPTIONS_PER_ADDRESS,
        )])
        .await
        .map_err(|retry_after| AppError::Throttled { retry_after })?;
    let (request, authenticating) = rp.start_discoverable_authentication().map_err(internal)?;
    let ceremony = ceremony_id()?;
    state
        .identity()
        .ceremonies
        .put(
            &ceremony,
            serde_json::to_string(&authenticating).map_err(internal)?,
        )
        .await?;
    Ok(options(
        ceremony,
        serde_json::to_value(request).map_err(internal)?,
    ))
}

/// `POST /login/passkey`: `{"ceremony", "credential"}` → a new session, as `POST /login`.
///
/// # Errors
/// 422 on `credential` for an assertion that does not verify, names no live user or none of
/// its passkeys (one message for all), on `ceremony` for a missing or expired one; 429 as for
/// passwords (failures per address); the store.
pub async fn sign_in(state: &AppState, body: &Json, client: &Client) -> Result<SignedIn, AppError> {
    let rp = relying_party(state)?;
    let mut input = Input::new(body)?;
    let ceremony = input.required_str("ceremony", MAX_CEREMONY);
    let credential = input.raw("credential").cloned();
    input.finish()?;
    let identity = state.identity();
    let address = Counter::new("signin-ip", client.address_key(), identity.address_limit());
    identity
        .throttle
        .attempt(std::slice::from_ref(&address))
        .await
        .map_err(|retry_after| AppError::Throttled { retry_after })?;
    let refused = || AppError::invalid("credential", "The passkey could not be verified.");
    let credential: PublicKeyCredential = credential
        .and_then(|c| serde_json::from_value(c).ok())
        .ok_or_else(refused)?;
    let kept = take(state, ceremony).await?;
    let authenticating: DiscoverableAuthentication =
        serde_json::from_str(&kept).map_err(|_| refused())?;
    let (handle, credential_id) = rp
        .identify_discoverable_authentication(&credential)
        .map_err(|_| refused())?;
    let credential_id = URL_SAFE_NO_PAD.encode(credential_id);
    let rows = store::passkeys_of_handle(state.db(), &handle.to_string()).await?;
    let Some(row) = rows.into_iter().find(|r| r.credential_id == credential_id) else {
        return Err(refused());
    };
    let mut passkey: Passkey = serde_json::from_str(&row.credential).map_err(internal)?;
    let result = rp
        .finish_discoverable_authentication_v2(&credential, authenticating, &passkey)
        .map_err(|_| refused())?;
    passkey.update_credential(&result);
    let updated = serde_json::to_string(&passkey).map_err(internal)?;
    store::record_use(state.db(), row.id, &updated, OffsetDateTime::now_utc()).await?;
    // A passkey sign-in has no per-account counter: only the address's attempt is taken back.
    let none = Counter::new("signin-passkey", &row.user_handle, identity.account_limit());
    identity.throttle.succeeded(&none, &address).await;
    start_session(state, row.user_id, client, "passkey").await
}

async fn record(state: &AppState, user_id: i64, event: &'static str, extra: Json) {
    activity::record(
        state,
        Some(user_id),
        Change::new("auth", event)
            .subject("user", user_id)
            .extra(extra),
    )
    .await;
}
