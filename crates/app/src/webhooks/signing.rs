//! The Standard Webhooks signature (<https://www.standardwebhooks.com>): the receiver recomputes
//! `base64(HMAC-SHA256(key, "{id}.{timestamp}.{body}"))` with the key it was given and compares
//! it with the `webhook-signature` header (`v1,<signature>`). The secret is shown as
//! `whsec_<base64 key>`, the form the Standard Webhooks libraries read.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

/// The prefix of a webhook secret.
pub const SECRET_PREFIX: &str = "whsec_";
/// Random bytes in a generated secret.
const SECRET_BYTES: usize = 32;

/// A new secret from the OS random source.
///
/// # Errors
/// When the OS has no random source.
pub fn generate_secret() -> Result<String, getrandom::Error> {
    let mut key = [0_u8; SECRET_BYTES];
    getrandom::fill(&mut key)?;
    Ok(format!("{SECRET_PREFIX}{}", STANDARD.encode(key)))
}

/// The HMAC key of a `whsec_…` secret; `None` when it is not one (fewer than 24 key bytes, or
/// not base64).
#[must_use]
pub fn secret_key(secret: &str) -> Option<Vec<u8>> {
    let key = STANDARD.decode(secret.strip_prefix(SECRET_PREFIX)?).ok()?;
    (key.len() >= 24 && key.len() <= 64).then_some(key)
}

/// The `webhook-signature` header value of one message (`None` only if HMAC refused the key,
/// which it does for no length).
#[must_use]
pub fn signature(key: &[u8], id: &str, timestamp: i64, body: &str) -> Option<String> {
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(key).ok()?;
    mac.update(id.as_bytes());
    mac.update(b".");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body.as_bytes());
    Some(format!(
        "v1,{}",
        STANDARD.encode(mac.finalize().into_bytes())
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_standard_webhooks_reference_vector() {
        // The example of the Standard Webhooks specification's reference libraries.
        let key = secret_key("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").unwrap();
        let sig = signature(
            &key,
            "msg_p5jXN8AQM9LWM0D4loKWxJek",
            1_614_265_330,
            r#"{"test": 2432232314}"#,
        );
        assert_eq!(
            sig.as_deref(),
            Some("v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
        );
    }

    #[test]
    fn generated_secrets_are_keys_and_differ() {
        let a = generate_secret().unwrap();
        let b = generate_secret().unwrap();
        assert_ne!(a, b);
        assert_eq!(secret_key(&a).unwrap().len(), SECRET_BYTES);
        assert!(secret_key("whsec_short").is_none());
        assert!(secret_key("nope").is_none());
    }
}
