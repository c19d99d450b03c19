//! Telling running servers that the project changed.
//!
//! Servers keep a snapshot of the project (settings, schema, roles) and cached responses, both
//! keyed by an epoch. A change made here is in the database already; with Redis configured the
//! shared epoch is bumped so every replica rebuilds on its next request. Without Redis each server
//! notices by itself within its snapshot TTL (5 s), so a failed bump is a warning, not an error:
//! the change itself succeeded.

use std::io::Write;

use vellum_app::cache::RedisBackend;
use vellum_app::config::RedisArgs;

/// Bumps the servers' shared epoch when `--redis-url` is set; reports a failure on `stderr`.
pub(crate) async fn changed(redis: &RedisArgs, stderr: &mut impl Write) {
    let Some(url) = redis.url() else {
        return;
    };
    let outcome = match RedisBackend::new(url, 1) {
        Ok(redis) => redis
            .try_bump()
            .await
            .map(drop)
            .map_err(|err| vellum_app::error_chain(&err)),
        Err(err) => Err(err.to_string()),
    };
    if let Err(error) = outcome {
        let _ = writeln!(
            stderr,
            "warning: the change is saved, but Redis could not be told ({error}); servers will \
             serve it within 5 s"
        );
    }
}
