//! Passkeys: `POST /account/passkeys/options`, `POST|GET /account/passkeys`,
//! `DELETE /account/passkeys/{id}`, `POST /login/passkey/options`, `POST /login/passkey`. Each
//! handler is its extractors and one call of [`vellum_app::accounts::passkeys`]; the web UI
//! drives them from `passkeys.js` (WebAuthn needs the browser's API, so these are JSON only).

use actix_web::{HttpRequest, HttpResponse, delete, get, post, web};
use serde_json::json;
use vellum_app::AppState;
use vellum_app::accounts::passkeys;

use super::account::signed_in;
use crate::body::{SIGN_IN_BODY_LIMIT, read_json};
use crate::error::ApiError;
use crate::session::{AdminEdge, SignedIn, client};

/// A registration carries an attestation (a few KiB with certificates): more room than a
/// sign-in, for a signed-in user only.
const REGISTRATION_BODY_LIMIT: usize = 64 * 1024;

pub fn register(cfg: &mut web::ServiceConfig) {
    cfg.service(registration_options)
        .service(store)
        .service(list)
        .service(remove)
        .service(sign_in_options)
        .service(sign_in);
}

#[utoipa::path(
    operation_id = "passkeyRegistrationOptions",
    tag = "admin: account",
    security(("session" = [])),
    responses(
        (status = 200, description = "A registration ceremony: creation options for a discoverable credential", content_type = "application/json", body = crate::schemas::admin::CeremonyEnvelope),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 422, response = crate::schemas::Invalid),
        (status = 429, response = crate::schemas::admin::TooManyRequests),
    )
)]
#[post("/account/passkeys/options")]
pub async fn registration_options(
    state: web::Data<AppState>,
    user: SignedIn,
) -> Result<HttpResponse, ApiError> {
    let ceremony = passkeys::registration_options(&state, &user.0).await?;
    Ok(HttpResponse::Ok().json(json!({ "data": ceremony })))
}

#[utoipa::path(
    operation_id = "createPasskey",
    tag = "admin: account",
    security(("session" = [])),
    request_body(content_type = "application/json", content = crate::schemas::admin::PasskeyRegistration),
    responses(
        (status = 201, description = "The passkey is stored", content_type = "application/json", body = crate::schemas::admin::PasskeyEnvelope),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 413, response = crate::schemas::TooLarge),
        (status = 422, response = crate::schemas::Invalid),
    )
)]
#[post("/account/passkeys")]
pub async fn store(
    state: web::Data<AppState>,
    user: SignedIn,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let body = read_json(payload, REGISTRATION_BODY_LIMIT, &req).await?;
    let passkey = passkeys::register(&state, &user.0, &body).await?;
    Ok(HttpResponse::Created().json(json!({ "data": passkey })))
}

#[utoipa::path(
    operation_id = "listPasskeys",
    tag = "admin: account",
    security(("session" = [])),
    responses(
        (status = 200, description = "The account's passkeys, oldest first", content_type = "application/json", body = crate::schemas::admin::PasskeyList),
        (status = 401, response = crate::schemas::Unauthenticated),
    )
)]
#[get("/account/passkeys")]
pub async fn list(state: web::Data<AppState>, user: SignedIn) -> Result<HttpResponse, ApiError> {
    let list = passkeys::list(&state, &user.0).await?;
    Ok(HttpResponse::Ok().json(json!({ "data": list })))
}

#[utoipa::path(
    operation_id = "deletePasskey",
    tag = "admin: account",
    security(("session" = [])),
    params(("passkey" = String, Path, description = "The passkey's id")),
    responses(
        (status = 204, description = "The passkey is removed"),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 404, response = crate::schemas::NotFound),
    )
)]
#[delete("/account/passkeys/{passkey}")]
pub async fn remove(
    state: web::Data<AppState>,
    user: SignedIn,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    passkeys::delete(&state, &user.0, &path).await?;
    Ok(HttpResponse::NoContent().finish())
}

#[utoipa::path(
    operation_id = "passkeySignInOptions",
    tag = "admin: account",
    responses(
        (status = 200, description = "A sign-in ceremony: request options for a discoverable credential (no username)", content_type = "application/json", body = crate::schemas::admin::CeremonyEnvelope),
        (status = 422, response = crate::schemas::Invalid),
        (status = 429, response = crate::schemas::admin::TooManyRequests),
    )
)]
#[post("/login/passkey/options")]
pub async fn sign_in_options(
    state: web::Data<AppState>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let ceremony = passkeys::sign_in_options(&state, &client(&req, &state)).await?;
    Ok(HttpResponse::Ok().json(json!({ "data": ceremony })))
}

#[utoipa::path(
    operation_id = "signInWithPasskey",
    tag = "admin: account",
    request_body(content_type = "application/json", content = crate::schemas::admin::PasskeySignIn),
    responses(
        (status = 200, description = "Signed in; the session cookie is set", content_type = "application/json", body = crate::schemas::admin::AccountEnvelope),
        (status = 413, response = crate::schemas::TooLarge),
        (status = 422, response = crate::schemas::Invalid),
        (status = 429, response = crate::schemas::admin::TooManyRequests),
    )
)]
#[post("/login/passkey")]
pub async fn sign_in(
    state: web::Data<AppState>,
    edge: web::Data<AdminEdge>,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let body = read_json(payload, SIGN_IN_BODY_LIMIT, &req).await?;
    let session = passkeys::sign_in(&state, &body, &client(&req, &state)).await?;
    Ok(signed_in(&edge, session, &req))
}
