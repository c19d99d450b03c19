//! Automatic persisted queries (Apollo's protocol, issue 24's "persisted queries optional"): a
//! client sends `extensions.persistedQuery.sha256Hash` instead of the query text; the first time
//! the server answers `PERSISTED_QUERY_NOT_FOUND`, the client sends the text with its hash once,
//! and from then on the hash alone. A GET of a short hash is what a CDN can cache.
//!
//! One store per process (the state holds it), shared by every HTTP worker. Bounded: the
//! queries are kept in a cache weighed by their length, [`MAX_BYTES`] in all, the
//! least recently used evicted first (an evicted query costs its client one more round trip, never
//! an error it cannot recover from). A query is stored only once its hash is checked, so no one
//! can plant a text under another query's hash. Storing does not parse or run anything; the
//! query then goes through the same limits as any other.

use std::sync::Arc;

use sha2::{Digest, Sha256};

/// The most bytes of query text kept in all.
pub const MAX_BYTES: u64 = 8 * 1024 * 1024;

/// What a request's `persistedQuery` extension asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lookup {
    /// No extension: the request carries its query as usual.
    Plain,
    /// The query of this hash: stored, or now stored from the request's text.
    Found,
    /// A hash without text that is not stored (the client sends the text next).
    NotFound,
    /// The extension is malformed, or the text does not hash to the hash given.
    Invalid(&'static str),
}

/// The persisted queries of one process.
pub struct Persisted {
    queries: moka::sync::Cache<[u8; 32], Arc<str>>,
}

impl std::fmt::Debug for Persisted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Persisted")
            .field("entries", &self.queries.entry_count())
            .finish()
    }
}

impl Default for Persisted {
    fn default() -> Self {
        Self::new(MAX_BYTES)
    }
}

impl Persisted {
    #[must_use]
    pub fn new(max_bytes: u64) -> Self {
        let queries = moka::sync::Cache::builder()
            .weigher(|_: &[u8; 32], query: &Arc<str>| {
                u32::try_from(query.len().saturating_add(64)).unwrap_or(u32::MAX)
            })
            .max_capacity(max_bytes)
            .build();
        Self { queries }
    }

    /// Resolves the request's `persistedQuery` extension: fills in `request.query` from the
    /// store, or stores the request's query under its checked hash.
    pub fn resolve(&self, request: &mut async_graphql::Request) -> Lookup {
        let Some(extension) = request.extensions.0.get("persistedQuery") else {
            return Lookup::Plain;
        };
        let Some(hash) = hash_of(&extension.clone().into_json().unwrap_or_default()) else {
            return Lookup::Invalid(
                "persistedQuery must be {\"version\": 1, \"sha256Hash\": \"<64 hex digits>\"}.",
            );
        };
        if request.query.trim().is_empty() {
            return match self.queries.get(&hash) {
                Some(query) => {
                    request.query = query.to_string();
                    Lookup::Found
                }
                None => Lookup::NotFound,
            };
        }
        let actual: [u8; 32] = Sha256::digest(request.query.as_bytes()).into();
        if actual != hash {
            return Lookup::Invalid("The query does not match its sha256Hash.");
        }
        self.queries.insert(hash, Arc::from(request.query.as_str()));
        Lookup::Found
    }
}

/// The hash of a `{"version": 1, "sha256Hash": "<hex>"}` extension.
fn hash_of(extension: &serde_json::Value) -> Option<[u8; 32]> {
    if extension.get("version").and_then(serde_json::Value::as_u64) != Some(1) {
        return None;
    }
    let hex_text = extension.get("sha256Hash")?.as_str()?;
    let mut hash = [0_u8; 32];
    hex::decode_to_slice(hex_text, &mut hash).ok()?;
    Some(hash)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(query: &str, extension: serde_json::Value) -> async_graphql::Request {
        let mut request = async_graphql::Request::new(query);
        request.extensions.0.insert(
            "persistedQuery".to_owned(),
            async_graphql::Value::from_json(extension).unwrap(),
        );
        request
    }

    fn sha(text: &str) -> String {
        hex::encode(Sha256::digest(text.as_bytes()))
    }

    #[test]
    fn a_hash_is_not_found_until_its_text_was_sent_once() {
        let store = Persisted::default();
        let query = "{ articles { meta { total } } }";
        let ext = serde_json::json!({"version": 1, "sha256Hash": sha(query)});
        assert_eq!(
            store.resolve(&mut request("", ext.clone())),
            Lookup::NotFound
        );
        assert_eq!(
            store.resolve(&mut request(query, ext.clone())),
            Lookup::Found
        );
        let mut by_hash = request("", ext);
        assert_eq!(store.resolve(&mut by_hash), Lookup::Found);
        assert_eq!(by_hash.query, query);
        assert_eq!(
            store.resolve(&mut async_graphql::Request::new(query)),
            Lookup::Plain
        );
    }

    #[test]
    fn a_text_is_stored_only_under_its_own_hash() {
        let store = Persisted::default();
        let planted = serde_json::json!({"version": 1, "sha256Hash": sha("{ a }")});
        assert!(matches!(
            store.resolve(&mut request("{ b }", planted.clone())),
            Lookup::Invalid(_)
        ));
        assert_eq!(store.resolve(&mut request("", planted)), Lookup::NotFound);
        for bad in [
            serde_json::json!({"version": 2, "sha256Hash": sha("{ a }")}),
            serde_json::json!({"version": 1, "sha256Hash": "xyz"}),
            serde_json::json!({"version": 1}),
            serde_json::json!("nope"),
        ] {
            assert!(
                matches!(
                    store.resolve(&mut request("", bad.clone())),
                    Lookup::Invalid(_)
                ),
                "{bad}"
            );
        }
    }

    #[test]
    fn the_store_is_bounded_by_bytes() {
        let store = Persisted::new(64 * 1024);
        for i in 0..200 {
            let query = format!(
                "{{ articles {{ meta {{ total }} }} }} # {i} {}",
                "x".repeat(1000)
            );
            let ext = serde_json::json!({"version": 1, "sha256Hash": sha(&query)});
            assert_eq!(store.resolve(&mut request(&query, ext)), Lookup::Found);
        }
        store.queries.run_pending_tasks();
        assert!(store.queries.weighted_size() <= 64 * 1024);
        assert!(store.queries.entry_count() < 200);
    }
}
