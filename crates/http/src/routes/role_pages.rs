//! The web UI's side of the roles: the list, the editor (create posted as a form, update put
//! with htmx, a refusal shown again as typed with each problem next to its part) and deletion
//! with htmx. The JSON routes in [`super::roles`] call these for a browser.

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse};
use serde_json::Value;
use vellum_app::AppState;
use vellum_app::principal::Principal;
use vellum_app::roles::{self, RoleResource};
use vellum_web::forms::FieldErrors;
use vellum_web::pages::render;
use vellum_web::pages::role::RolePage;
use vellum_web::pages::roles::RolesPage;
use vellum_web::role_input::role_body;

use crate::error::ApiError;
use crate::html::{self, FormRefusal};

/// The roles page.
pub(super) async fn list_page(
    state: &AppState,
    principal: &Principal,
    req: &HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let list = roles::list(state, principal, req.query_string()).await?;
    html::page(
        StatusCode::OK,
        render(&RolesPage::new(principal, list, req.query_string())),
    )
}

/// The editor of role `id`, or of a new role.
pub(super) async fn editor(
    state: &AppState,
    principal: &Principal,
    id: Option<&str>,
    req: &HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let saved = vellum_web::paging::param(req.query_string(), "saved").is_some();
    let view = editor_view(state, principal, id, None, FieldErrors::default(), saved).await?;
    html::page(StatusCode::OK, render(&view))
}

async fn editor_view(
    state: &AppState,
    principal: &Principal,
    id: Option<&str>,
    posted: Option<&Value>,
    errors: FieldErrors,
    saved: bool,
) -> Result<RolePage, ApiError> {
    let (role, permissions): (Option<RoleResource>, _) = match id {
        Some(id) => {
            let edit = roles::edit(state, principal, id).await?;
            (Some(edit.role), edit.permissions)
        }
        None => (
            None,
            roles::create_form(state, principal).await?.permissions,
        ),
    };
    let collections = roles::collection_fields(state, principal).await?;
    Ok(RolePage::new(
        principal,
        role.as_ref(),
        posted,
        &permissions,
        &collections,
        errors,
        saved,
    ))
}

/// The editor posted (a new role) or put by htmx (role `id`): 303 or `HX-Redirect` to the
/// role's editor, or the editor again with the problems.
pub(super) async fn save(
    state: &AppState,
    principal: &Principal,
    id: Option<&str>,
    form: &[(String, String)],
) -> Result<HttpResponse, ApiError> {
    let collections = roles::collection_fields(state, principal).await?;
    let body = role_body(form, &collections);
    let written = match id {
        Some(id) => roles::update(state, principal, id, &body).await,
        None => roles::store(state, principal, &body).await,
    };
    match written {
        Ok(role) => Ok(html::saved(
            id.is_some(),
            &format!("/settings/roles/{}/edit?saved=1", role.id),
        )),
        Err(err) => {
            let refusal = FormRefusal::of(err.into())?;
            let view = editor_view(
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
