//! Channel authorization signatures: `key:hex(HMAC-SHA256(secret, socket_id:channel[:channel_data]))`,
//! as every Pusher-protocol client and server computes them.

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

/// The app key clients connect with and the secret that signs their channel authorizations.
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    key: String,
    secret: String,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("key", &self.key)
            .finish_non_exhaustive()
    }
}

impl Credentials {
    #[must_use]
    pub fn new(key: impl Into<String>, secret: impl Into<String>) -> Self {
        Self {
            key: key.into(),
            secret: secret.into(),
        }
    }

    /// The public app key (`/app/{key}`).
    #[must_use]
    pub fn key(&self) -> &str {
        &self.key
    }

    /// `None` never happens (HMAC takes keys of any length); callers then sign nothing valid.
    fn mac(
        &self,
        socket_id: &str,
        channel: &str,
        channel_data: Option<&str>,
    ) -> Option<Hmac<Sha256>> {
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(self.secret.as_bytes()).ok()?;
        mac.update(socket_id.as_bytes());
        mac.update(b":");
        mac.update(channel.as_bytes());
        if let Some(data) = channel_data {
            mac.update(b":");
            mac.update(data.as_bytes());
        }
        Some(mac)
    }

    /// The `auth` value a client subscribes with.
    #[must_use]
    pub fn sign(&self, socket_id: &str, channel: &str, channel_data: Option<&str>) -> String {
        let digest = self
            .mac(socket_id, channel, channel_data)
            .map(|mac| hex::encode(mac.finalize().into_bytes()))
            .unwrap_or_default();
        format!("{}:{digest}", self.key)
    }

    /// Whether `auth` is this key's signature of the subscription (compared in constant time).
    #[must_use]
    pub fn verify(
        &self,
        auth: &str,
        socket_id: &str,
        channel: &str,
        channel_data: Option<&str>,
    ) -> bool {
        let Some((key, signature)) = auth.split_once(':') else {
            return false;
        };
        let Ok(signature) = hex::decode(signature) else {
            return false;
        };
        key == self.key
            && self
                .mac(socket_id, channel, channel_data)
                .is_some_and(|mac| mac.verify_slice(&signature).is_ok())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pusher's documented example (private channel authentication).
    #[test]
    fn signs_as_the_pusher_documentation_does() {
        let credentials = Credentials::new("278d425bdf160c739803", "7ad3773142a6692b25b8");
        assert_eq!(
            credentials.sign("1234.1234", "private-foobar", None),
            "278d425bdf160c739803:58df8b0c36d6982b82c3ecf6b4662e34fe8c25bba48f5369f135bf843651c3a4"
        );
    }

    #[test]
    fn verifies_its_own_signatures_only() {
        let credentials = Credentials::new("key", "secret");
        let data = r#"{"user_id":"1"}"#;
        let auth = credentials.sign("1.2", "presence-chat.1", Some(data));
        assert!(credentials.verify(&auth, "1.2", "presence-chat.1", Some(data)));
        assert!(!credentials.verify(&auth, "1.3", "presence-chat.1", Some(data)));
        assert!(!credentials.verify(&auth, "1.2", "presence-chat.2", Some(data)));
        assert!(!credentials.verify(&auth, "1.2", "presence-chat.1", Some("{}")));
        assert!(!credentials.verify(&auth, "1.2", "presence-chat.1", None));
        let other = Credentials::new("key", "other secret");
        assert!(!other.verify(&auth, "1.2", "presence-chat.1", Some(data)));
        assert!(!credentials.verify("key", "1.2", "presence-chat.1", Some(data)));
        assert!(!credentials.verify("key:zz", "1.2", "presence-chat.1", Some(data)));
        let renamed = auth.replacen("key", "yek", 1);
        assert!(!credentials.verify(&renamed, "1.2", "presence-chat.1", Some(data)));
    }
}
