//! Everything `vellum-server` can fail with before or while it serves; `main` reports it through
//! [`vellum_app::telemetry::report`].

use std::net::SocketAddr;

#[derive(Debug, thiserror::Error)]
pub(crate) enum ServerError {
    #[error("invalid VELLUM_REDIS_URL")]
    Redis(#[source] vellum_http::cache::redis::RedisConfigError),
    #[error("invalid CORS origin")]
    CorsOrigin(#[source] vellum_policy::PolicyError),
    #[error("invalid transform URL settings: {0}")]
    TransformUrls(String),
    #[error("could not listen on {listen}")]
    Bind {
        listen: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("the HTTP server stopped with an error")]
    Serve(#[source] std::io::Error),
    #[error(transparent)]
    Storage(#[from] vellum_storage::StorageError),
    #[error("the demo manifest could not be applied")]
    Demo(#[from] vellum_manifest::ManifestError),
    #[error("the demo manifest is not valid JSON")]
    DemoJson(#[source] serde_json::Error),
    #[error("the demo admin could not be created")]
    DemoAdmin(#[source] vellum_app::AppError),
    #[error("could not write to stdout")]
    Output(#[source] std::io::Error),
}
