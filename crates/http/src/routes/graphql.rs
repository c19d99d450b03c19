//! `POST /api/graphql` and `GET /api/graphql?query=…`: the GraphQL surface of
//! [`vellum_app::graphql`], behind the same origin gate, API keys, CORS and timeouts as
//! `/api/v1`. The body is read up to the JSON limit, as an item write's is.
//!
//! Not `async-graphql-actix-web`: it needs actix-web's default features (HTTP/2) and its own
//! request types, while the application layer takes the body as bytes and answers JSON.

use actix_web::http::header::ContentType;
use actix_web::{HttpRequest, HttpResponse, web};
use vellum_app::graphql::{self, Schemas};
use vellum_app::{Actor, AppState};

use crate::body::read_body;
use crate::error::ApiError;

/// A GraphQL request as a JSON body: `{"query", "variables", "operationName", "extensions"}`
/// (`extensions.persistedQuery`: a query sent by its hash).
pub async fn post(
    state: web::Data<AppState>,
    actor: web::ReqData<Actor>,
    schemas: web::Data<Schemas>,
    req: HttpRequest,
    body: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let body = read_body(body, state.config().json_limit, &req).await?;
    let answer = graphql::execute(&state, &actor, &schemas, &body).await?;
    Ok(HttpResponse::Ok()
        .content_type(ContentType::json())
        .body(answer))
}

/// A GraphQL request in the query string: `query`, `variables` (JSON), `operationName`,
/// `extensions` (JSON: a persisted query's hash).
pub async fn get(
    state: web::Data<AppState>,
    actor: web::ReqData<Actor>,
    schemas: web::Data<Schemas>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let answer = graphql::execute_get(&state, &actor, &schemas, req.query_string()).await?;
    Ok(HttpResponse::Ok()
        .content_type(ContentType::json())
        .body(answer))
}
