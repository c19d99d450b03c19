//! Vellum's HTTP edge: the actix-web app, its extractors, middleware and error envelopes.
//!
//! One app builder, [`app`], is used by `vellum-server` and by every test. A middleware resolves
//! the request's [`Actor`](actor::Actor) once (origin gate, API key, IP allowlist, role); each
//! handler is its extractors, one use case of `vellum-app`, and a response; [`ApiError`] maps
//! every application error, with an exhaustive `match`, to a status code and the contract's JSON
//! envelope.
//!
//! This is the only crate that knows HTTP status codes. It keeps extractors, status mapping,
//! streaming and headers; it never decides access (`vellum-policy`), runs a use case
//! (`vellum-app`), builds SQL (`vellum-storage`) or normalizes values (`vellum-domain`); 5xx
//! bodies never carry internal details.

pub mod actor;
mod body;
/// The response cache and its epoch live in the application layer; re-exported under the path
/// the server and the tests have always used.
pub use vellum_app::cache;
mod download;
mod error;
mod html;
pub mod metrics;
pub mod middleware;
mod multipart;
mod routes;
pub mod schemas;
pub mod server;
pub mod session;
mod sse;
pub mod surrogate;
mod websocket;

/// The OpenAPI 3.1 description of `/api/v1` (served at `GET /api/v1/openapi.json`).
pub mod openapi {
    pub use crate::routes::openapi::{ApiDoc, document, serve};
}

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceFactory, ServiceRequest, ServiceResponse};
use actix_web::middleware::from_fn;
use actix_web::{App, HttpResponse, web};
use serde_json::json;

pub use error::ApiError;
pub use vellum_app::realtime;
pub use vellum_app::transforms;
/// The application layer's state and configuration, under the names the server and the tests
/// have always used.
pub use vellum_app::{
    AiConfig, AppConfig as HttpConfig, AppState, Backends, DEFAULT_TRANSFORM_MEMORY, JobsConfig,
    Snapshot, cores,
};

/// The whole application: health probes at the root, the public API under `/api/v1`, the admin
/// app's routes at the root behind the session middleware.
pub fn app(
    state: AppState,
) -> App<
    impl ServiceFactory<
        ServiceRequest,
        Config = (),
        Response = ServiceResponse<impl MessageBody>,
        Error = actix_web::Error,
        InitError = (),
    >,
> {
    let json_limit = state.config().json_limit;
    let edge = session::AdminEdge::new(&state);
    App::new()
        .app_data(web::Data::new(state))
        .app_data(web::Data::new(edge))
        // GraphQL schemas per role, built on first use (`vellum_app::graphql`).
        .app_data(web::Data::new(vellum_app::graphql::Schemas::default()))
        .app_data(web::PayloadConfig::new(json_limit))
        .wrap(from_fn(middleware::trace_request))
        // Outermost: counts every answer, the request id's and timing headers' work included.
        .wrap(from_fn(metrics::record))
        .service(routes::health::up)
        .service(routes::health::live)
        .service(routes::health::ready)
        .route("/app/{key}", web::get().to(routes::realtime::socket))
        // GraphQL: the same gate, keys, CORS and timeouts as `/api/v1` (not its response cache).
        .service(
            web::resource("/api/graphql")
                .wrap(from_fn(middleware::watch_storage))
                .wrap(from_fn(actor::resolve_actor))
                .wrap(from_fn(middleware::request_timeout))
                .wrap(from_fn(middleware::cors))
                .route(web::post().to(routes::graphql::post))
                .route(web::get().to(routes::graphql::get)),
        )
        .service(
            web::scope("/api/v1")
                .wrap(from_fn(middleware::response_cache))
                // Outside the cache: a hit is tagged as its miss was.
                .wrap(from_fn(surrogate::tag))
                .wrap(from_fn(middleware::watch_storage))
                .wrap(from_fn(actor::resolve_actor))
                .wrap(from_fn(middleware::request_timeout))
                .wrap(from_fn(middleware::cors))
                .service(routes::openapi::serve)
                .service(routes::collections::list)
                .service(routes::collections::show)
                .service(routes::items::list)
                .service(routes::items::create)
                .service(routes::items::show)
                .service(routes::items::update)
                .service(routes::items::destroy)
                .service(routes::files::list)
                .service(routes::files::upload)
                .service(routes::files::show)
                .service(routes::files::update)
                .service(routes::files::destroy)
                .service(routes::files::content)
                .service(routes::files::transform)
                .default_service(web::to(not_found)),
        )
        // The web UI's static files: public, outside the session middleware.
        .service(html::asset)
        .service(
            web::scope("")
                .wrap(from_fn(session::admin_session))
                .wrap(from_fn(middleware::watch_storage))
                .wrap(from_fn(middleware::request_timeout))
                // JSON and HTML compress when the client asks; images, video, 206 and
                // 204 pass untouched, and so does the AI stream (`Content-Encoding: identity`).
                .wrap(actix_web::middleware::Compress::default())
                .service(routes::account::login_page)
                .service(routes::account::login)
                .service(routes::account::login_code)
                .service(routes::account::login_code_verify)
                .service(routes::account::logout)
                .service(routes::account::show)
                .service(routes::account::sessions)
                .service(routes::account::revoke_sessions)
                .service(routes::realtime::authorize)
                .configure(routes::passkeys::register)
                .service(routes::dashboard::show)
                .service(routes::activity::list)
                // Literal paths before `{param}` paths of the same prefix.
                .service(routes::roles::list)
                .service(routes::roles::create_page)
                .service(routes::roles::store)
                .service(routes::roles::bulk)
                .service(routes::roles::duplicate)
                .service(routes::roles::edit)
                .service(routes::roles::update)
                .service(routes::roles::destroy)
                .service(routes::permissions::list)
                .service(routes::permissions::store)
                .service(routes::permissions::sync)
                .service(routes::permissions::update)
                .service(routes::permissions::destroy)
                .service(routes::api_keys::list)
                .service(routes::api_keys::store)
                .service(routes::api_keys::revoke)
                .service(routes::settings::show)
                .service(routes::settings::update)
                .configure(routes::webhooks::register)
                .configure(routes::jobs::register)
                // `/users/create` before `/users/{user}` (literal paths first), as for groups.
                .service(routes::users::list)
                .service(routes::users::create_form)
                .service(routes::users::create)
                .service(routes::users::show)
                .service(routes::users::edit_form)
                .service(routes::users::update)
                .service(routes::users::delete)
                .service(routes::users::restore)
                .service(routes::users::force_delete)
                .service(routes::groups::list)
                .service(routes::groups::create_form)
                .service(routes::groups::create)
                .service(routes::groups::show)
                .service(routes::groups::edit_form)
                .service(routes::groups::update)
                .service(routes::groups::delete)
                .service(routes::groups::restore)
                .service(routes::groups::force_delete)
                .configure(routes::chat::register)
                .configure(routes::ai::register)
                .configure(routes::schema::register)
                // Before the admin items routes: `/items/options` is not `/items/{item}`.
                .configure(routes::presentation::register)
                .configure(routes::admin_items::register)
                .configure(routes::file_admin::register)
                .default_service(web::to(not_found)),
        )
        .default_service(web::to(not_found))
}

async fn not_found() -> HttpResponse {
    HttpResponse::NotFound().json(json!({"message": "Not found."}))
}
