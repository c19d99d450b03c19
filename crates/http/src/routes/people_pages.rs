//! The web UI's side of users and groups: their create and edit forms (a new one posted as a
//! form, a change put with htmx, a refusal shown again as typed with each problem next to its
//! field). The JSON routes in [`super::users`] and [`super::groups`] call these for a browser.

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse};
use serde_json::Value;
use vellum_app::principal::Principal;
use vellum_app::{AppState, groups, users};
use vellum_web::WebError;
use vellum_web::forms::FieldErrors;
use vellum_web::pages::group::{GroupPage, group_body};
use vellum_web::pages::render;
use vellum_web::pages::user::{UserPage, user_body};

use crate::error::ApiError;
use crate::html::{self, FormRefusal};

/// Whose form: a user's or a group's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum People {
    User,
    Group,
}

impl People {
    fn path(self) -> &'static str {
        match self {
            Self::User => "/users",
            Self::Group => "/groups",
        }
    }
}

/// The form of `id`, or of a new one.
pub(super) async fn form_page(
    state: &AppState,
    principal: &Principal,
    who: People,
    id: Option<&str>,
    req: &HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let saved = vellum_web::paging::param(req.query_string(), "saved").is_some();
    let page = (who, id, None);
    let rendered = view(state, principal, page, FieldErrors::default(), saved).await?;
    html::page(StatusCode::OK, rendered)
}

/// The form rendered for `(who, id, the body a refusal posted)` with `errors`.
async fn view(
    state: &AppState,
    principal: &Principal,
    (who, id, posted): (People, Option<&str>, Option<&Value>),
    errors: FieldErrors,
    saved: bool,
) -> Result<Result<String, WebError>, ApiError> {
    Ok(match (who, id) {
        (People::User, Some(id)) => {
            let e = users::edit_form(state, principal, id).await?;
            let user = Some(&e.user);
            render(&UserPage::new(
                principal, user, &e.roles, &e.groups, posted, errors, saved,
            ))
        }
        (People::User, None) => {
            let f = users::create_form(state, principal).await?;
            render(&UserPage::new(
                principal, None, &f.roles, &f.groups, posted, errors, saved,
            ))
        }
        (People::Group, Some(id)) => {
            let e = groups::edit_form(state, principal, id).await?;
            let group = Some(&e.group);
            render(&GroupPage::new(
                principal, group, &e.roles, &e.users, posted, errors, saved,
            ))
        }
        (People::Group, None) => {
            let f = groups::create_form(state, principal).await?;
            render(&GroupPage::new(
                principal, None, &f.roles, &f.users, posted, errors, saved,
            ))
        }
    })
}

/// The form posted (a new one) or put by htmx (`id`): on to its form, or the form again with
/// its problems.
pub(super) async fn save(
    state: &AppState,
    principal: &Principal,
    who: People,
    id: Option<&str>,
    form: &[(String, String)],
) -> Result<HttpResponse, ApiError> {
    let body = match who {
        People::User => user_body(form),
        People::Group => group_body(form),
    };
    let written = match (who, id) {
        (People::User, Some(id)) => users::update(state, principal, id, &body)
            .await
            .map(|u| u.id),
        (People::User, None) => users::create(state, principal, &body).await.map(|u| u.id),
        (People::Group, Some(id)) => groups::update(state, principal, id, &body)
            .await
            .map(|g| g.id),
        (People::Group, None) => groups::create(state, principal, &body).await.map(|g| g.id),
    };
    match written {
        Ok(saved) => {
            let to = format!("{}/{saved}/edit?saved=1", who.path());
            Ok(html::saved(id.is_some(), &to))
        }
        Err(err) => {
            let refusal = FormRefusal::of(err.into())?;
            let page = (who, id, Some(&body));
            let rendered = view(state, principal, page, refusal.errors.clone(), false).await?;
            refusal.page(rendered)
        }
    }
}
