//! Sign-in by a mailed one-time code: 6 digits, valid 10 minutes, single use, stored as an HMAC
//! under the project's secret key (a leaked table cannot be checked against the 10^6 codes
//! without it), void after 5 wrong tries.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value as Json;
use time::OffsetDateTime;
use vellum_domain::{EmailAddress, MAX_EMAIL_LEN};
use vellum_storage::accounts;

use super::signin::{counters, start_session};
use super::{Client, SignedIn};
use crate::context::AppState;
use crate::error::AppError;
use crate::identity::mail::Mail;
use crate::identity::throttle::{CODE_MAIL_LIMIT, Counter};
use crate::input::Input;
use crate::telemetry::error_chain;

/// How long a code is valid.
pub const CODE_LIFETIME: Duration = Duration::from_secs(10 * 60);
/// Wrong tries that void a code.
pub const CODE_MAX_ATTEMPTS: i32 = 5;

fn code_hash(state_key: &vellum_domain::HashKey, user_id: i64, code: &str) -> String {
    state_key.fingerprint(&format!("vellum login code\u{0}{user_id}\u{0}{code}"))
}

/// A uniformly random 6-digit code.
fn new_code() -> Result<String, AppError> {
    // Rejection sampling: 2^32 is not a multiple of 10^6.
    const LIMIT: u32 = u32::MAX - (u32::MAX % 1_000_000);
    loop {
        let mut bytes = [0_u8; 4];
        getrandom::fill(&mut bytes)
            .map_err(|e| AppError::Internal(format!("no randomness for a code: {e}").into()))?;
        let n = u32::from_le_bytes(bytes);
        if n < LIMIT {
            return Ok(format!("{:06}", n % 1_000_000));
        }
    }
}

/// `POST /login/code`: `{"email"}`. Answers the same (202) whether or not the account exists:
/// the lookup, the code and the mail happen after the answer, in the background, so neither the
/// body nor the timing tells.
///
/// # Errors
/// [`AppError::Invalid`] for a missing or malformed email; [`AppError::Throttled`] after too
/// many codes asked for that email or from that address.
pub async fn request_code(state: &AppState, body: &Json, client: &Client) -> Result<(), AppError> {
    let mut input = Input::new(body)?;
    let email = input.required_str("email", MAX_EMAIL_LEN);
    input.finish()?;
    let Some(email) = email else {
        return Err(AppError::invalid("email", "The email field is required."));
    };
    let email =
        EmailAddress::parse(email).map_err(|e| AppError::invalid("email", e.to_string()))?;
    state
        .identity()
        .throttle
        .attempt(&[
            Counter::new("code-mail", &email.normalized(), CODE_MAIL_LIMIT),
            Counter::new(
                "code-mail-ip",
                client.ip.as_deref().unwrap_or("unknown"),
                state.identity().address_limit(),
            ),
        ])
        .await
        .map_err(|retry_after| AppError::Throttled { retry_after })?;
    let Ok(job) = Arc::clone(&state.identity().code_jobs).try_acquire_owned() else {
        return Err(AppError::Throttled { retry_after: 60 });
    };
    let state = state.clone();
    tokio::spawn(async move {
        let _job = job;
        if let Err(err) = mail_code(&state, &email).await {
            tracing::warn!(error = %error_chain(&err), "could not send a sign-in code");
        }
    });
    Ok(())
}

async fn mail_code(state: &AppState, email: &EmailAddress) -> Result<(), AppError> {
    let Some(credentials) = accounts::credentials_by_email(state.db(), email.as_str()).await?
    else {
        return Ok(());
    };
    if credentials.deleted {
        return Ok(());
    }
    let snapshot = state.snapshot().await?;
    let code = new_code()?;
    let expires_at = OffsetDateTime::now_utc() + CODE_LIFETIME;
    let hash = code_hash(&snapshot.hash_key, credentials.user_id, &code);
    accounts::put_login_code(state.db(), credentials.user_id, &hash, expires_at).await?;
    state
        .identity()
        .mailer
        .send(Mail {
            to: email.as_str().to_owned(),
            subject: "Your Vellum sign-in code".to_owned(),
            body: format!(
                "Your sign-in code is {code}.\r\n\r\nIt is valid for 10 minutes and can be used once. \
                 If you did not ask for it, ignore this mail.\r\n"
            ),
        })
        .await
}

/// `POST /login/code/verify`: `{"email", "code"}` → a new session, as `POST /login`.
///
/// # Errors
/// [`AppError::Invalid`] on `code` for a wrong, used, expired or voided code or an unknown
/// email (one message for all); [`AppError::Throttled`] as for passwords; the database.
pub async fn sign_in_with_code(
    state: &AppState,
    body: &Json,
    client: &Client,
) -> Result<SignedIn, AppError> {
    let mut input = Input::new(body)?;
    let email = input.required_str("email", MAX_EMAIL_LEN);
    let code = input.required_str("code", 16);
    input.finish()?;
    let (Some(email), Some(code)) = (email, code) else {
        return Err(bad_code());
    };
    let (account, address) = counters(state, email, client);
    state
        .identity()
        .throttle
        .attempt(&[account.clone(), address.clone()])
        .await
        .map_err(|retry_after| AppError::Throttled { retry_after })?;
    let code = code.trim();
    let well_formed = code.len() == 6 && code.bytes().all(|b| b.is_ascii_digit());
    let credentials = match EmailAddress::parse(email) {
        Ok(email) => accounts::credentials_by_email(state.db(), email.as_str()).await?,
        Err(_) => None,
    };
    let Some(credentials) = credentials.filter(|c| !c.deleted) else {
        return Err(bad_code());
    };
    let snapshot = state.snapshot().await?;
    let hash = code_hash(&snapshot.hash_key, credentials.user_id, code);
    let now = OffsetDateTime::now_utc();
    let used = well_formed
        && accounts::consume_login_code(
            state.db(),
            credentials.user_id,
            &hash,
            now,
            CODE_MAX_ATTEMPTS,
        )
        .await?;
    if !used {
        accounts::fail_login_code(state.db(), credentials.user_id, CODE_MAX_ATTEMPTS).await?;
        return Err(bad_code());
    }
    state
        .identity()
        .throttle
        .succeeded(&account, &address)
        .await;
    // The code came through the mailbox: the address is proven.
    accounts::mark_email_verified(state.db(), credentials.user_id, now).await?;
    state.forget_account(credentials.user_id);
    start_session(state, credentials.user_id, client, "code").await
}

fn bad_code() -> AppError {
    AppError::invalid("code", "The code is invalid or has expired.")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_six_digits_and_vary() {
        let codes: Vec<String> = (0..50).map(|_| new_code().unwrap()).collect();
        assert!(
            codes
                .iter()
                .all(|c| c.len() == 6 && c.bytes().all(|b| b.is_ascii_digit()))
        );
        let mut distinct = codes.clone();
        distinct.sort();
        distinct.dedup();
        assert!(distinct.len() > 40);
        let key = vellum_domain::HashKey::new(b"k".to_vec());
        assert_ne!(code_hash(&key, 1, "123456"), code_hash(&key, 2, "123456"));
        assert!(!code_hash(&key, 1, "123456").contains("123456"));
    }
}
