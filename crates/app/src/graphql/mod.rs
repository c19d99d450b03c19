//! The GraphQL surface (`/api/graphql`, issue 24): a read-only schema generated per role from the
//! collections ([`schema`]), whose resolvers call the items use cases REST calls, with REST's
//! query string ([`args`]). The same data, the same policy and the same errors as REST follow
//! from that, rather than from a second implementation.
//!
//! Schemas are built when a role first asks and remembered in [`Schemas`] for as long as the
//! role and the collections they were built from are current (by identity, so a content write,
//! which keeps both, does not rebuild them), for at most [`MAX_SCHEMAS`] of them.
//!
//! Queries are bounded before they run ([`Limits`]): depth, complexity, and the number of
//! collection fields (each one a use case call) a request may ask for. A query may be sent by its
//! hash once the server knows it ([`crate::persisted_queries`]: automatic persisted queries, one
//! store per process).

mod args;
pub mod schema;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use async_graphql::dynamic::Schema;
use async_graphql::{ErrorExtensions, Variables};
use vellum_policy::Role;
use vellum_storage::model::Collection;

pub use self::args::ReadArgs;
use crate::actor::Actor;
use crate::context::AppState;
use crate::error::AppError;
use crate::persisted_queries::Lookup;

/// How many role schemas one [`Schemas`] remembers; the least recently used goes first.
pub const MAX_SCHEMAS: usize = 32;

/// What a query may ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Nesting of selections. A content query needs 4 (`articles { data { data { title } } }`);
    /// the standard introspection query of GraphiQL and code generators needs 13.
    pub depth: usize,
    /// Selected fields, fragments expanded, counted once each (a list counts as one).
    pub complexity: usize,
    /// Collection fields (list or by id) answered per request: each runs a use case, and
    /// aliases could otherwise repeat one at no cost in depth.
    pub calls: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            depth: 15,
            complexity: 500,
            calls: 16,
        }
    }
}

/// The schemas built so far, by the role and collections they were built from.
pub struct Schemas {
    limits: Limits,
    entries: Mutex<Vec<Entry>>,
}

struct Entry {
    role: Arc<Role>,
    collections: Vec<Arc<Collection>>,
    schema: Schema,
}

impl std::fmt::Debug for Schemas {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let entries = self.lock().len();
        f.debug_struct("Schemas")
            .field("limits", &self.limits)
            .field("entries", &entries)
            .finish()
    }
}

impl Default for Schemas {
    fn default() -> Self {
        Self::new(Limits::default())
    }
}

impl Schemas {
    #[must_use]
    pub fn new(limits: Limits) -> Self {
        Self {
            limits,
            entries: Mutex::new(Vec::new()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Entry>> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The actor's schema: remembered, or built now. The entry holds the role and collections
    /// it was built from, so their addresses cannot be reused while it is kept.
    fn schema_for(&self, actor: &Actor) -> Result<Schema, AppError> {
        let collections = &actor.snapshot.collections;
        let same = |entry: &Entry| {
            Arc::ptr_eq(&entry.role, &actor.role)
                && entry.collections.len() == collections.len()
                && entry
                    .collections
                    .iter()
                    .zip(collections)
                    .all(|(a, b)| Arc::ptr_eq(a, b))
        };
        {
            let mut entries = self.lock();
            if let Some(at) = entries.iter().position(same) {
                let entry = entries.remove(at);
                let schema = entry.schema.clone();
                entries.push(entry);
                return Ok(schema);
            }
        }
        let schema =
            schema::build(&actor.role, collections, self.limits).map_err(AppError::internal)?;
        let mut entries = self.lock();
        if entries.len() >= MAX_SCHEMAS {
            entries.remove(0);
        }
        entries.push(Entry {
            role: Arc::clone(&actor.role),
            collections: collections.clone(),
            schema: schema.clone(),
        });
        Ok(schema)
    }
}

/// What a request's resolvers share: who acts, how many collection fields ran, and the first
/// outage one of them met.
struct Run {
    state: AppState,
    actor: Actor,
    limit: usize,
    calls: AtomicUsize,
    failure: Mutex<Option<AppError>>,
}

impl Run {
    /// Counts a collection field; past the limit it is an error.
    fn count_call(&self) -> async_graphql::Result<()> {
        if self.calls.fetch_add(1, Ordering::Relaxed) < self.limit {
            Ok(())
        } else {
            Err(async_graphql::Error::new(format!(
                "A query may ask for at most {} collection fields.",
                self.limit
            ))
            .extend_with(|_, e| e.set("code", "LIMIT")))
        }
    }

    /// A use case's error as a GraphQL error. An outage or a bug is remembered: the request then
    /// fails as a whole, as REST's would (503 or 500, and the readiness check hears of it).
    fn error(&self, err: AppError) -> async_graphql::Error {
        let (message, code) = match &err {
            AppError::NotFound => ("Not found.", "NOT_FOUND"),
            AppError::Unauthenticated => ("Unauthenticated.", "UNAUTHENTICATED"),
            AppError::Throttled { .. } | AppError::QuotaReached { .. } => {
                ("Too many requests.", "THROTTLED")
            }
            AppError::NotConfigured(message) => (*message, "NOT_CONFIGURED"),
            AppError::Forbidden(_) | AppError::Rejected(_) => ("Forbidden.", "FORBIDDEN"),
            AppError::InvalidSignature => ("Invalid signature.", "FORBIDDEN"),
            AppError::Invalid(errors) => {
                let errors = serde_json::to_value(errors)
                    .ok()
                    .and_then(|v| async_graphql::Value::from_json(v).ok())
                    .unwrap_or_default();
                return async_graphql::Error::new("The given data was invalid.").extend_with(
                    |_, e| {
                        e.set("code", "INVALID");
                        e.set("errors", errors);
                    },
                );
            }
            AppError::Busy { .. } => ("Service unavailable.", "UNAVAILABLE"),
            AppError::Unavailable(_) | AppError::Internal(_) => {
                let mut failure = self.failure.lock().unwrap_or_else(PoisonError::into_inner);
                failure.get_or_insert(err);
                return async_graphql::Error::new("Service unavailable.")
                    .extend_with(|_, e| e.set("code", "UNAVAILABLE"));
            }
        };
        async_graphql::Error::new(message).extend_with(|_, e| e.set("code", code))
    }
}

/// A JSON value as a GraphQL value (object member order kept).
fn gql_value(value: serde_json::Value) -> async_graphql::Result<async_graphql::Value> {
    async_graphql::Value::from_json(value).map_err(|e| async_graphql::Error::new(e.to_string()))
}

const NOT_A_REQUEST: &str = "The request must be a JSON object with a query string, and optionally \
     variables (an object) and operationName.";

/// Answers a `POST /api/graphql` body (`{"query", "variables", "operationName"}`) for the actor:
/// the GraphQL response as JSON (`data`, `errors`). Errors of the query itself (syntax, unknown
/// fields, over the limits, a 422 of a use case) are in `errors`.
///
/// # Errors
/// 422 on `query` when the body is not a GraphQL request; an outage or a bug met by any
/// resolver (the request fails as a whole).
pub async fn execute(
    state: &AppState,
    actor: &Actor,
    schemas: &Schemas,
    body: &[u8],
) -> Result<Vec<u8>, AppError> {
    let request: async_graphql::Request =
        serde_json::from_slice(body).map_err(|_| AppError::invalid("query", NOT_A_REQUEST))?;
    run(state, actor, schemas, request).await
}

/// Answers `GET /api/graphql?query=…&variables=…&operationName=…` as [`execute`] does.
///
/// # Errors
/// As [`execute`]; `variables` must be a JSON object.
pub async fn execute_get(
    state: &AppState,
    actor: &Actor,
    schemas: &Schemas,
    query: &str,
) -> Result<Vec<u8>, AppError> {
    let pairs = crate::query::pairs(query);
    let text = crate::query::first(&pairs, "query").unwrap_or_default();
    let mut request = async_graphql::Request::new(text);
    if let Some(name) = crate::query::first(&pairs, "operationName").filter(|n| !n.is_empty()) {
        request = request.operation_name(name);
    }
    if let Some(raw) = crate::query::first(&pairs, "variables").filter(|v| !v.is_empty()) {
        let value: serde_json::Value = serde_json::from_str(raw)
            .ok()
            .filter(serde_json::Value::is_object)
            .ok_or_else(|| {
                AppError::invalid("variables", "The variables must be a JSON object.")
            })?;
        request = request.variables(Variables::from_json(value));
    }
    if let Some(raw) = crate::query::first(&pairs, "extensions").filter(|v| !v.is_empty()) {
        let value: serde_json::Value = serde_json::from_str(raw)
            .ok()
            .filter(serde_json::Value::is_object)
            .ok_or_else(|| {
                AppError::invalid("extensions", "The extensions must be a JSON object.")
            })?;
        if let Some(Ok(persisted)) = value
            .get("persistedQuery")
            .map(|v| async_graphql::Value::from_json(v.clone()))
        {
            request
                .extensions
                .0
                .insert("persistedQuery".to_owned(), persisted);
        }
    }
    run(state, actor, schemas, request).await
}

async fn run(
    state: &AppState,
    actor: &Actor,
    schemas: &Schemas,
    mut request: async_graphql::Request,
) -> Result<Vec<u8>, AppError> {
    match state.persisted_queries().resolve(&mut request) {
        Lookup::Plain | Lookup::Found => {}
        // Apollo's clients read exactly this error and send the query text next.
        Lookup::NotFound => {
            let body = serde_json::json!({"errors": [{
                "message": "PersistedQueryNotFound",
                "extensions": {"code": "PERSISTED_QUERY_NOT_FOUND"},
            }]});
            return serde_json::to_vec(&body).map_err(AppError::internal);
        }
        Lookup::Invalid(message) => {
            return Err(AppError::invalid("extensions", message));
        }
    }
    if request.query.trim().is_empty() {
        return Err(AppError::invalid("query", NOT_A_REQUEST));
    }
    let schema = schemas.schema_for(actor)?;
    let run = Arc::new(Run {
        state: state.clone(),
        actor: actor.clone(),
        limit: schemas.limits.calls,
        calls: AtomicUsize::new(0),
        failure: Mutex::new(None),
    });
    let response = schema.execute(request.data(Arc::clone(&run))).await;
    let failure = run
        .failure
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .take();
    if let Some(err) = failure {
        return Err(err);
    }
    serde_json::to_vec(&response).map_err(AppError::internal)
}
