//! Sign-in, sign-out and the signed-in account: `POST /login`, `/login/code`,
//! `/login/code/verify`, `/logout`, `GET /account`, `/account/sessions`,
//! `POST /account/sessions/revoke`. Each handler is its extractors, one call of
//! [`vellum_app::accounts`], and a response; the cookie is set here.

use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse, get, post, web};
use serde_json::json;
use vellum_app::AppState;
use vellum_app::accounts::{self, SignedIn as NewSession};

use crate::body::{SIGN_IN_BODY_LIMIT, read_json};
use crate::error::ApiError;
use crate::session::{AdminEdge, SignedIn, client};

/// The answer to a sign-in: the account, and the new session's cookie.
fn signed_in(edge: &AdminEdge, session: NewSession) -> HttpResponse {
    HttpResponse::Ok()
        .insert_header((header::SET_COOKIE, edge.cookie(&session.token)))
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .json(json!({ "data": session.account }))
}

#[utoipa::path(
    operation_id = "signIn",
    tag = "admin: account",
    request_body(content_type = "application/json", content = crate::schemas::admin::PasswordSignIn),
    responses(
        (status = 200, description = "Signed in; the session cookie is set", content_type = "application/json", body = crate::schemas::admin::AccountEnvelope),
        (status = 413, response = crate::schemas::TooLarge),
        (status = 422, response = crate::schemas::Invalid),
        (status = 429, response = crate::schemas::admin::TooManyRequests),
    )
)]
#[post("/login")]
pub async fn login(
    state: web::Data<AppState>,
    edge: web::Data<AdminEdge>,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let body = read_json(payload, SIGN_IN_BODY_LIMIT, &req).await?;
    let session = accounts::sign_in_with_password(&state, &body, &client(&req, &state)).await?;
    Ok(signed_in(&edge, session))
}

#[utoipa::path(
    operation_id = "requestSignInCode",
    tag = "admin: account",
    request_body(content_type = "application/json", content = crate::schemas::admin::CodeRequest),
    responses(
        (status = 202, description = "A code is mailed if the account exists", content_type = "application/json", body = crate::schemas::admin::Message),
        (status = 413, response = crate::schemas::TooLarge),
        (status = 422, response = crate::schemas::Invalid),
        (status = 429, response = crate::schemas::admin::TooManyRequests),
    )
)]
#[post("/login/code")]
pub async fn login_code(
    state: web::Data<AppState>,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let body = read_json(payload, SIGN_IN_BODY_LIMIT, &req).await?;
    accounts::request_code(&state, &body, &client(&req, &state)).await?;
    Ok(HttpResponse::Accepted().json(json!({
        "message": "If an account uses this address, a sign-in code is on its way."
    })))
}

#[utoipa::path(
    operation_id = "signInWithCode",
    tag = "admin: account",
    request_body(content_type = "application/json", content = crate::schemas::admin::CodeSignIn),
    responses(
        (status = 200, description = "Signed in; the session cookie is set", content_type = "application/json", body = crate::schemas::admin::AccountEnvelope),
        (status = 413, response = crate::schemas::TooLarge),
        (status = 422, response = crate::schemas::Invalid),
        (status = 429, response = crate::schemas::admin::TooManyRequests),
    )
)]
#[post("/login/code/verify")]
pub async fn login_code_verify(
    state: web::Data<AppState>,
    edge: web::Data<AdminEdge>,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let body = read_json(payload, SIGN_IN_BODY_LIMIT, &req).await?;
    let session = accounts::sign_in_with_code(&state, &body, &client(&req, &state)).await?;
    Ok(signed_in(&edge, session))
}

#[utoipa::path(
    operation_id = "signOut",
    tag = "admin: account",
    security(("session" = [])),
    responses(
        (status = 204, description = "Signed out; the session is gone server-side"),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
    )
)]
#[post("/logout")]
pub async fn logout(
    state: web::Data<AppState>,
    edge: web::Data<AdminEdge>,
    user: SignedIn,
) -> Result<HttpResponse, ApiError> {
    accounts::sign_out(&state, &user.0).await?;
    Ok(HttpResponse::NoContent()
        .insert_header((header::SET_COOKIE, edge.cleared_cookie()))
        .finish())
}

#[utoipa::path(
    operation_id = "showAccount",
    tag = "admin: account",
    security(("session" = [])),
    responses(
        (status = 200, description = "The signed-in account", content_type = "application/json", body = crate::schemas::admin::AccountEnvelope),
        (status = 401, response = crate::schemas::Unauthenticated),
    )
)]
#[get("/account")]
pub async fn show(user: SignedIn) -> HttpResponse {
    HttpResponse::Ok().json(json!({ "data": user.0.resource() }))
}

#[utoipa::path(
    operation_id = "listSessions",
    tag = "admin: account",
    security(("session" = [])),
    responses(
        (status = 200, description = "The account's sessions, newest first", content_type = "application/json", body = crate::schemas::admin::SessionList),
        (status = 401, response = crate::schemas::Unauthenticated),
    )
)]
#[get("/account/sessions")]
pub async fn sessions(
    state: web::Data<AppState>,
    user: SignedIn,
) -> Result<HttpResponse, ApiError> {
    let sessions = accounts::sessions(&state, &user.0).await?;
    Ok(HttpResponse::Ok().json(json!({ "data": sessions })))
}

#[utoipa::path(
    operation_id = "revokeOtherSessions",
    tag = "admin: account",
    security(("session" = [])),
    responses(
        (status = 200, description = "Every other session of the account ended", content_type = "application/json", body = crate::schemas::admin::Revoked),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
    )
)]
#[post("/account/sessions/revoke")]
pub async fn revoke_sessions(
    state: web::Data<AppState>,
    user: SignedIn,
) -> Result<HttpResponse, ApiError> {
    let ended = accounts::revoke_other_sessions(&state, &user.0).await?;
    Ok(HttpResponse::Ok().json(json!({ "data": { "revoked": ended } })))
}
