//! The web UI's side of the groups: the create and edit forms (a new group posted as a form, a
//! change put with htmx, a refusal shown again as typed). The JSON routes in [`super::groups`]
//! call these for a browser.

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse};
use serde_json::Value;
use vellum_app::principal::Principal;
use vellum_app::{AppState, groups};
use vellum_web::forms::FieldErrors;
use vellum_web::pages::group::{GroupPage, group_body};
use vellum_web::pages::render;

use crate::error::ApiError;
use crate::html::{self, FormRefusal};

/// The form of group `id`, or of a new group.
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
) -> Result<GroupPage, ApiError> {
    Ok(match id {
        Some(id) => {
            let edit = groups::edit_form(state, principal, id).await?;
            let group = Some(&edit.group);
            GroupPage::new(
                principal,
                group,
                &edit.roles,
                &edit.users,
                posted,
                errors,
                saved,
            )
        }
        None => {
            let form = groups::create_form(state, principal).await?;
            GroupPage::new(
                principal,
                None,
                &form.roles,
                &form.users,
                posted,
                errors,
                saved,
            )
        }
    })
}

/// The form posted (a new group) or put by htmx (group `id`).
pub(super) async fn save(
    state: &AppState,
    principal: &Principal,
    id: Option<&str>,
    form: &[(String, String)],
) -> Result<HttpResponse, ApiError> {
    let body = group_body(form);
    let written = match id {
        Some(id) => groups::update(state, principal, id, &body).await,
        None => groups::create(state, principal, &body).await,
    };
    match written {
        Ok(group) => Ok(html::saved(
            id.is_some(),
            &format!("/groups/{}/edit?saved=1", group.id),
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
