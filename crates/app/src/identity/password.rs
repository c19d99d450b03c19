//! Password hashing with Argon2id at OWASP's parameters (19 MiB, 2 passes, 1 lane): about 25 to
//! 45 ms of one core per hash on this project's 2-core reference machine.
//!
//! Hashes run on a pool of their own (one thread per core), never on the async workers, which
//! would stall every other request, and at a lower scheduling priority (nice +12): when the CPU is
//! free a sign-in takes one hash's time, and when the API saturates it, sign-ins wait for CPU
//! rather than taking it from readers (20 sign-ins a second would otherwise take half of two
//! cores). The queue in front of the pool is bounded, so a burst of sign-ins waits without
//! allocating 19 MiB per attempt.
//!
//! An unknown email is verified against a dummy hash made at start with the same parameters, so
//! it costs what a wrong password costs and the two answers cannot be told apart by timing.

use std::sync::{Arc, Mutex};

use argon2::password_hash::{PasswordHash, PasswordHasher as _, PasswordVerifier as _, SaltString};
use argon2::{Algorithm, Argon2, Params, Version};
use tokio::sync::{mpsc, oneshot};

use crate::error::AppError;

/// How much lower than the server's the hashing threads' priority is (Linux `nice`): a nice-12
/// thread gets about a fifteenth (weights 70 against 1024) of a core that a nice-0 worker also
/// wants, so 20 sign-ins a second cost a saturated API less than 10 % (`bench/admin.sh`).
const HASHING_NICE: i32 = 12;
/// Hashes waiting for a thread; more callers wait to enqueue.
const QUEUE: usize = 64;

/// OWASP Password Storage Cheat Sheet, Argon2id: m = 19 MiB, t = 2, p = 1.
const MEMORY_KIB: u32 = 19 * 1024;
const PASSES: u32 = 2;
const LANES: u32 = 1;

/// Hashes and verifies passwords on its own low-priority threads.
#[derive(Debug, Clone)]
pub struct PasswordHasher {
    jobs: mpsc::Sender<Job>,
    /// The hash an unknown account is verified against.
    dummy: Arc<str>,
}

type Job = Box<dyn FnOnce() + Send>;

/// Starts `threads` hashing threads reading `jobs`; they end when every sender is gone.
fn start_pool(threads: usize) -> Result<mpsc::Sender<Job>, AppError> {
    let (tx, rx) = mpsc::channel::<Job>(QUEUE);
    let rx = Arc::new(Mutex::new(rx));
    for i in 0..threads.max(1) {
        let rx = Arc::clone(&rx);
        std::thread::Builder::new()
            .name(format!("vellum-hash-{i}"))
            .spawn(move || {
                // This thread only (on Linux a thread id names one thread); where it cannot be
                // done the pool still works, at normal priority.
                let tid = rustix::thread::gettid();
                if let Err(err) = rustix::process::setpriority_process(Some(tid), HASHING_NICE) {
                    tracing::debug!(%err, "password hashing runs at normal priority");
                }
                loop {
                    let job = {
                        let mut rx = rx.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                        rx.blocking_recv()
                    };
                    match job {
                        Some(job) => job(),
                        None => return,
                    }
                }
            })
            .map_err(|e| AppError::Internal(Box::new(e)))?;
    }
    Ok(tx)
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
    /// A hasher running at most `concurrency` hashes at once (at least one), each on a thread
    /// of its pool.
    ///
    /// # Errors
    /// When the dummy hash cannot be made (no randomness) or no thread can be started.
    pub fn new(concurrency: usize) -> Result<Self, AppError> {
        let dummy = hash_now("vellum dummy password: never matches an account")?;
        Ok(Self {
            jobs: start_pool(concurrency)?,
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
        let (done, answer) = oneshot::channel();
        let job: Job = Box::new(move || {
            // The caller may have gone (a cancelled request): nothing to answer then.
            let _ = done.send(work());
        });
        self.jobs
            .send(job)
            .await
            .map_err(|_| AppError::Internal("the password hashing threads are gone".into()))?;
        answer
            .await
            .map_err(|_| AppError::Internal("a password hashing thread failed".into()))
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
