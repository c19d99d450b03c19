//! Password hashing with Argon2id at OWASP's parameters (19 MiB, 2 passes, 1 lane), on the
//! blocking pool behind a semaphore sized to the cores: a burst of sign-ins queues for hashing
//! instead of occupying the async workers (which would stall every other request) or allocating
//! 19 MiB per concurrent attempt without bound.
//!
//! An unknown email is verified against a dummy hash made at start with the same parameters, so
//! it costs what a wrong password costs and the two answers cannot be told apart by timing.

use std::sync::Arc;

use argon2::password_hash::{PasswordHash, PasswordHasher as _, PasswordVerifier as _, SaltString};
use argon2::{Algorithm, Argon2, Params, Version};
use tokio::sync::Semaphore;

use crate::error::AppError;

/// OWASP Password Storage Cheat Sheet, Argon2id: m = 19 MiB, t = 2, p = 1.
const MEMORY_KIB: u32 = 19 * 1024;
const PASSES: u32 = 2;
const LANES: u32 = 1;

/// Hashes and verifies passwords off the async workers, at most `permits` at a time.
#[derive(Debug, Clone)]
pub struct PasswordHasher {
    permits: Arc<Semaphore>,
    /// The hash an unknown account is verified against.
    dummy: Arc<str>,
}

fn argon2() -> Result<Argon2<'static>, AppError> {
    let params = Params::new(MEMORY_KIB, PASSES, LANES, None)
        .map_err(|e| AppError::Internal(format!("argon2 parameters: {e}").into()))?;
    Ok(Argon2::new(Algorithm::Argon2id, Version::V0x13, params))
}

fn hash_now(password: &str) -> Result<String, AppError> {
    let mut salt = [0_u8; 16];
    getrandom::fill(&mut salt)
        .map_err(|e| AppError::Internal(format!("no random salt: {e}").into()))?;
    let salt = SaltString::encode_b64(&salt)
        .map_err(|e| AppError::Internal(format!("salt: {e}").into()))?;
    let hash = argon2()?
        .hash_password(password.as_bytes(), &salt)
        .map_err(|e| AppError::Internal(format!("argon2: {e}").into()))?;
    Ok(hash.to_string())
}

/// Whether `password` matches the PHC string `hash`; a malformed hash matches nothing.
fn verify_now(password: &str, hash: &str) -> bool {
    let Ok(parsed) = PasswordHash::new(hash) else {
        return false;
    };
    // The parameters come from the stored string, so hashes made with older parameters still
    // verify.
    Argon2::default()
        .verify_password(password.as_bytes(), &parsed)
        .is_ok()
}

impl PasswordHasher {
    /// A hasher running at most `concurrency` hashes at once (at least one).
    ///
    /// # Errors
    /// When the dummy hash cannot be made (no randomness).
    pub fn new(concurrency: usize) -> Result<Self, AppError> {
        let dummy = hash_now("vellum dummy password: never matches an account")?;
        Ok(Self {
            permits: Arc::new(Semaphore::new(concurrency.max(1))),
            dummy: dummy.into(),
        })
    }

    /// The PHC string (`$argon2id$v=19$m=19456,t=2,p=1$…`) of a new hash of `password`.
    ///
    /// # Errors
    /// A broken random source or a cancelled blocking task.
    pub async fn hash(&self, password: &str) -> Result<String, AppError> {
        let password = password.to_owned();
        self.run(move || hash_now(&password)).await?
    }

    /// Whether `password` matches `hash`; with `None` (no such account, no password) it is
    /// checked against the dummy hash at the same cost and answers false.
    ///
    /// # Errors
    /// A cancelled blocking task.
    pub async fn verify(&self, password: &str, hash: Option<&str>) -> Result<bool, AppError> {
        let password = password.to_owned();
        let (hash, real) = match hash {
            Some(hash) => (hash.to_owned(), true),
            None => (self.dummy.to_string(), false),
        };
        let matched = self.run(move || verify_now(&password, &hash)).await?;
        Ok(matched && real)
    }

    async fn run<T: Send + 'static>(
        &self,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, AppError> {
        let _permit = self
            .permits
            .acquire()
            .await
            .map_err(|e| AppError::Internal(Box::new(e)))?;
        tokio::task::spawn_blocking(work)
            .await
            .map_err(|e| AppError::Internal(Box::new(e)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn hashes_verify_and_the_dummy_never_matches() {
        let hasher = PasswordHasher::new(2).unwrap();
        let hash = hasher.hash("correct horse").await.unwrap();
        assert!(
            hash.starts_with("$argon2id$v=19$m=19456,t=2,p=1$"),
            "{hash}"
        );
        assert!(hasher.verify("correct horse", Some(&hash)).await.unwrap());
        assert!(!hasher.verify("wrong horse", Some(&hash)).await.unwrap());
        assert!(
            !hasher
                .verify("anything", Some("not a phc string"))
                .await
                .unwrap()
        );
        let dummy_password = "vellum dummy password: never matches an account";
        assert!(!hasher.verify(dummy_password, None).await.unwrap());
        assert_ne!(hasher.hash("correct horse").await.unwrap(), hash, "salted");
    }
}
