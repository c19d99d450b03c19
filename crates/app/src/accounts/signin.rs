//! Password sign-in and starting a session.

use serde_json::Value as Json;
use time::OffsetDateTime;
use vellum_domain::{EmailAddress, MAX_EMAIL_LEN};
use vellum_storage::accounts;
use vellum_storage::sessions::SessionRow;

use super::{Client, SignedIn, user_agent};
use crate::activity::{self, Change};
use crate::context::AppState;
use crate::error::AppError;
use crate::identity::throttle::Counter;
use crate::identity::token::SessionToken;
use crate::input::Input;
use crate::principal::AccountResource;
use crate::telemetry::error_chain;

/// The longest password a sign-in accepts: beyond any password we let anyone set, and a bound on
/// what one request can make the server hash.
const MAX_SIGN_IN_PASSWORD: usize = 1024;

/// The one answer to a wrong email, a wrong password, a deleted user or an account without a
/// password: nothing tells them apart.
pub(super) fn bad_credentials() -> AppError {
    AppError::invalid("email", "These credentials do not match our records.")
}

/// The throttle counters of a sign-in for `email` from `client`.
pub(super) fn counters(state: &AppState, email: &str, client: &Client) -> (Counter, Counter) {
    let identity = state.identity();
    (
        Counter::new(
            "signin-account",
            &email.to_lowercase(),
            identity.account_limit(),
        ),
        Counter::new("signin-ip", client.address_key(), identity.address_limit()),
    )
}

/// `POST /login`: `{"email", "password"}` → a new session.
///
/// # Errors
/// [`AppError::Invalid`] for missing fields or wrong credentials (on `email`, the same for an
/// unknown email and a wrong password); [`AppError::Throttled`] after repeated failures for the
/// account or from the address; the database.
pub async fn sign_in_with_password(
    state: &AppState,
    body: &Json,
    client: &Client,
) -> Result<SignedIn, AppError> {
    let mut input = Input::new(body)?;
    let email = input.required_str("email", MAX_EMAIL_LEN);
    let password = input.required_str("password", MAX_SIGN_IN_PASSWORD);
    input.finish()?;
    let (Some(email), Some(password)) = (email, password) else {
        return Err(bad_credentials());
    };
    let (account, address) = counters(state, email, client);
    let identity = state.identity();
    identity
        .throttle
        .attempt(&[account.clone(), address.clone()])
        .await
        .map_err(|retry_after| AppError::Throttled { retry_after })?;
    // A malformed email is looked up like any unknown one: same answer, same cost.
    let credentials = match EmailAddress::parse(email) {
        Ok(email) => accounts::credentials_by_email(state.db(), email.as_str()).await?,
        Err(_) => None,
    };
    let usable = credentials.as_ref().filter(|c| !c.deleted);
    let hash = usable.and_then(|c| c.password_hash.as_deref());
    let matched = identity.hasher.verify(password, hash).await?;
    let Some(user_id) = usable.filter(|_| matched).map(|c| c.user_id) else {
        return Err(bad_credentials());
    };
    identity.throttle.succeeded(&account, &address).await;
    start_session(state, user_id, client, "password").await
}

/// Starts a session for `user_id` (signed in by `method`): a new token, stored hashed.
///
/// # Errors
/// [`AppError::Invalid`] (as a wrong password) when the user is gone or deleted; the session
/// store or the database failing.
pub async fn start_session(
    state: &AppState,
    user_id: i64,
    client: &Client,
    method: &str,
) -> Result<SignedIn, AppError> {
    let identity = state.identity();
    let Some(account) = accounts::account(state.db(), user_id).await? else {
        return Err(bad_credentials());
    };
    if account.deleted_at.is_some() {
        return Err(bad_credentials());
    }
    if let Some(previous) = &client.previous_session
        && identity.sessions.get(&previous.id()).await?.is_some()
    {
        super::end_session(state, &previous.id()).await?;
    }
    let token = SessionToken::generate()?;
    let now = OffsetDateTime::now_utc();
    let session = SessionRow {
        id: token.id(),
        user_id,
        created_at: now,
        last_seen_at: now,
        expires_at: now + identity.config.session_lifetime,
        ip: client.ip.clone(),
        user_agent: user_agent(client),
    };
    identity
        .sessions
        .create(&session, identity.config.session_idle)
        .await?;
    // Expired sessions are cleared as new ones arrive (at most once a minute), so the store
    // does not grow with time.
    if identity.purge_due() {
        let sessions = std::sync::Arc::clone(&identity.sessions);
        let idle = identity.config.session_idle;
        tokio::spawn(async move {
            if let Err(err) = sessions.purge(now, idle).await {
                tracing::warn!(error = %error_chain(&err), "could not purge expired sessions");
            }
        });
    }
    activity::record(
        state,
        Some(user_id),
        Change::new("auth", "signed_in")
            .subject("user", user_id)
            .extra(serde_json::json!({ "method": method })),
    )
    .await;
    let access = crate::principal::AccountAccess::new(account);
    Ok(SignedIn {
        token,
        account: AccountResource::of(&access),
    })
}
