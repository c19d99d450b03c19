//! The web UI's side of the users: the create and edit forms (a new user posted as a form, a
//! change put with htmx, a refusal shown again as typed) and where a browser goes after a
//! deletion, a restore or a deletion for good. The JSON routes in [`super::users`] call these.

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse};
use serde_json::Value;
use vellum_app::principal::Principal;
use vellum_app::{AppState, users};
use vellum_web::forms::FieldErrors;
use vellum_web::pages::render;
use vellum_web::pages::user::{UserPage, user_body};

use crate::error::ApiError;
use crate::html::{self, FormRefusal};

/// The form of user `id`, or of a new user.
pub(super) async fn form_page(
    state: &AppState,
    principal: &Principal,
    id: Option<&str>,
    req: &HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let saved = vellum_web::paging::param(req.query_string(), "saved").is_some();
    let view = view(state, principal, id, None, FieldErrors::default(), saved).await?;
    html::page(StatusCode::OK, render(&view))
}

async fn view(
    state: &AppState,
    principal: &Principal,
    id: Option<&str>,
    posted: Option<&Value>,
    errors: FieldErrors,
    saved: bool,
) -> Result<UserPage, ApiError> {
    Ok(match id {
        Some(id) => {
            let edit = users::edit_form(state, principal, id).await?;
            let user = Some(&edit.user);
            UserPage::new(
                principal,
                user,
                &edit.roles,
                &edit.groups,
                posted,
                errors,
                saved,
            )
        }
        None => {
            let form = users::create_form(state, principal).await?;
            UserPage::new(
                principal,
                None,
                &form.roles,
                &form.groups,
                posted,
                errors,
                saved,
            )
        }
    })
}

/// The form posted (a new user) or put by htmx (user `id`): 303 or `HX-Redirect` to the
/// user's form, or the form again with its problems.
pub(super) async fn save(
    state: &AppState,
    principal: &Principal,
    id: Option<&str>,
    form: &[(String, String)],
) -> Result<HttpResponse, ApiError> {
    let body = user_body(form);
    let written = match id {
        Some(id) => users::update(state, principal, id, &body).await,
        None => users::create(state, principal, &body).await,
    };
    match written {
        Ok(user) => Ok(html::saved(
            id.is_some(),
            &format!("/users/{}/edit?saved=1", user.id),
        )),
        Err(err) => {
            let refusal = FormRefusal::of(err.into())?;
            let view = view(
                state,
                principal,
                id,
                Some(&body),
                refusal.errors.clone(),
                false,
            )
            .await?;
            refusal.page(render(&view))
        }
    }
}
