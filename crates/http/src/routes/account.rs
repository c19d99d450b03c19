//! Sign-in, sign-out and the signed-in account: `POST /login`, `/login/code`,
//! `/login/code/verify`, `/logout`, `GET /account`, `/account/sessions`,
//! `POST /account/sessions/revoke`, and the sign-in page (`GET /login`). Each handler is its
//! extractors, one call of [`vellum_app::accounts`], and a response; the cookie is set here.
//!
//! A browser posts the sign-in forms (`application/x-www-form-urlencoded`, no script needed): it
//! is answered 303 to the dashboard when signed in, or the sign-in page again with the problem
//! next to its field (422) or the wait (429).

use actix_web::http::{StatusCode, header};
use actix_web::{HttpRequest, HttpResponse, get, post, web};
use serde::Deserialize;
use serde_json::{Value, json};
use vellum_app::AppError;
use vellum_app::AppState;
use vellum_app::accounts::{self, SignedIn as NewSession, passkeys};
use vellum_web::pages::account::AccountPage;
use vellum_web::pages::login::LoginPage;
use vellum_web::pages::render;

use crate::body::{SIGN_IN_BODY_LIMIT, read_input};
use crate::error::ApiError;
use crate::html::{self, FormRefusal};
use crate::session::{AdminEdge, SignedIn, client, wants_json};

/// The answer to a sign-in: the account and the new session's cookie (JSON), or a 303 to the
/// dashboard with the cookie (a browser's form).
pub(crate) fn signed_in(edge: &AdminEdge, session: NewSession, req: &HttpRequest) -> HttpResponse {
    let cookie = (header::SET_COOKIE, edge.cookie(&session.token));
    if !wants_json(req) {
        return html::see_other("/").insert_header(cookie).finish();
    }
    HttpResponse::Ok()
        .insert_header(cookie)
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .json(json!({ "data": session.account }))
}

/// A sign-in form's answer: JSON's as usual, or for a browser the sign-in page `page` again,
/// showing the refusal (422, 429) next to its fields; other errors go on as they are.
fn sign_in_answer(
    edge: &AdminEdge,
    req: &HttpRequest,
    outcome: Result<NewSession, AppError>,
    page: impl FnOnce() -> LoginPage,
) -> Result<HttpResponse, ApiError> {
    match outcome {
        Ok(session) => Ok(signed_in(edge, session, req)),
        Err(err) if wants_json(req) => Err(err.into()),
        Err(err) => refused_form(err.into(), page),
    }
}

/// The sign-in page `page` showing a refusal (422, 429); other errors go on as they are.
fn refused_form(err: ApiError, page: impl FnOnce() -> LoginPage) -> Result<HttpResponse, ApiError> {
    let refusal = FormRefusal::of(err)?;
    let view = LoginPage {
        errors: refusal.errors.clone(),
        notice: refusal.notice.clone(),
        ..page()
    };
    refusal.page(render(&view))
}

/// The `email` a form was posted with, to show it again.
fn typed_email(body: &Value) -> String {
    body.get("email")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .chars()
        .take(320)
        .collect()
}

/// `GET /login?method=code`: the code tab.
#[derive(Debug, Deserialize)]
pub struct LoginQuery {
    method: Option<String>,
}

#[utoipa::path(
    operation_id = "signInPage",
    tag = "admin: account",
    params(("method" = Option<String>, Query, description = "`code`: the page opens on the mailed-code tab")),
    responses(
        (status = 200, description = "The sign-in methods the server offers (the sign-in page for a client that does not prefer JSON; a signed-in browser is sent to the dashboard)", content_type = "application/json", body = crate::schemas::admin::SignInMethods),
    )
)]
#[get("/login")]
pub async fn login_page(
    state: web::Data<AppState>,
    req: HttpRequest,
    user: Option<SignedIn>,
    query: web::Query<LoginQuery>,
) -> Result<HttpResponse, ApiError> {
    let passkeys = passkeys::available(&state);
    if wants_json(&req) {
        let methods: &[&str] = if passkeys {
            &["password", "code", "passkey"]
        } else {
            &["password", "code"]
        };
        return Ok(HttpResponse::Ok().json(json!({ "data": { "methods": methods } })));
    }
    if user.is_some() {
        return Ok(html::see_other("/").finish());
    }
    let view = LoginPage::new(query.method.as_deref(), passkeys);
    html::page(StatusCode::OK, render(&view))
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
    let body = read_input(payload, SIGN_IN_BODY_LIMIT, &req).await?;
    let outcome = accounts::sign_in_with_password(&state, &body, &client(&req, &state)).await;
    sign_in_answer(&edge, &req, outcome, || LoginPage {
        email: typed_email(&body),
        ..LoginPage::new(None, passkeys::available(&state))
    })
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
    let body = read_input(payload, SIGN_IN_BODY_LIMIT, &req).await?;
    let outcome = accounts::request_code(&state, &body, &client(&req, &state)).await;
    let sent = "If an account uses this address, a sign-in code is on its way.";
    let page = |code_sent| LoginPage {
        email: typed_email(&body),
        code_method: true,
        code_sent,
        ..LoginPage::new(None, passkeys::available(&state))
    };
    match outcome {
        Ok(()) if wants_json(&req) => Ok(HttpResponse::Accepted().json(json!({ "message": sent }))),
        Ok(()) => {
            let view = LoginPage {
                notice: Some(sent.to_owned()),
                ..page(true)
            };
            html::page(StatusCode::OK, render(&view))
        }
        Err(err) if wants_json(&req) => Err(err.into()),
        Err(err) => refused_form(err.into(), || page(false)),
    }
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
    let body = read_input(payload, SIGN_IN_BODY_LIMIT, &req).await?;
    let outcome = accounts::sign_in_with_code(&state, &body, &client(&req, &state)).await;
    sign_in_answer(&edge, &req, outcome, || LoginPage {
        email: typed_email(&body),
        code_method: true,
        code_sent: true,
        ..LoginPage::new(None, passkeys::available(&state))
    })
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
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    accounts::sign_out(&state, &user.0).await?;
    let cookie = (header::SET_COOKIE, edge.cleared_cookie());
    if !wants_json(&req) {
        return Ok(html::see_other("/login").insert_header(cookie).finish());
    }
    Ok(HttpResponse::NoContent().insert_header(cookie).finish())
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
pub async fn show(
    state: web::Data<AppState>,
    user: SignedIn,
    req: HttpRequest,
    query: web::Query<AccountQuery>,
) -> Result<HttpResponse, ApiError> {
    if wants_json(&req) {
        return Ok(HttpResponse::Ok().json(json!({ "data": user.0.resource() })));
    }
    let open = accounts::sessions(&state, &user.0).await?;
    let keys = if passkeys::available(&state) {
        Some(passkeys::list(&state, &user.0).await?)
    } else {
        None
    };
    let view = AccountPage::new(&user.0, open, keys, query.ended);
    html::page(StatusCode::OK, render(&view))
}

/// `GET /account?ended=N`: the page after "sign out everywhere else" says how many ended.
#[derive(Debug, Deserialize)]
pub struct AccountQuery {
    ended: Option<u64>,
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
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let ended = accounts::revoke_other_sessions(&state, &user.0).await?;
    if !wants_json(&req) {
        return Ok(html::see_other(&format!("/account?ended={ended}")).finish());
    }
    Ok(HttpResponse::Ok().json(json!({ "data": { "revoked": ended } })))
}
