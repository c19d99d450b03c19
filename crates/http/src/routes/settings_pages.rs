//! The web UI's side of the settings area: the API keys page, its create form (the new key's
//! secret is shown in the answer to the post, never put in a URL) and revocation with htmx; the
//! project settings page and its form (put with htmx).

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse};
use serde_json::{Value, json};
use vellum_app::AppState;
use vellum_app::principal::Principal;
use vellum_app::{api_keys, project_settings};
use vellum_web::forms::FieldErrors;
use vellum_web::pages::api_keys::{ApiKeysPage, KeyForm};
use vellum_web::pages::project::{ProjectForm, ProjectPage};
use vellum_web::pages::render;

use crate::error::ApiError;
use crate::html::{self, FormRefusal};

/// The API keys page.
pub(super) async fn keys_page(
    state: &AppState,
    principal: &Principal,
    req: &HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let screen = api_keys::screen(state, principal, req.query_string()).await?;
    let view = ApiKeysPage::new(principal, screen, req.query_string());
    html::page(StatusCode::OK, render(&view))
}

/// The create form posted: the page with the new key's secret (200: a redirect would have to
/// carry the secret), or the form again with its problems (422).
pub(super) async fn create_key(
    state: &AppState,
    principal: &Principal,
    form: &[(String, String)],
) -> Result<HttpResponse, ApiError> {
    let posted = key_form(form);
    let body = key_body(&posted);
    let created = api_keys::create(state, principal, &body).await;
    let screen = api_keys::screen(state, principal, "").await?;
    let page = ApiKeysPage::new(principal, screen, "");
    match created {
        Ok(created) => html::page(
            StatusCode::OK,
            render(&page.with_created(created.key.name, created.secret)),
        ),
        Err(err) => {
            let refusal = FormRefusal::of(err.into())?;
            let page = page.with_refusal(posted, refusal.errors.clone());
            refusal.page(render(&page))
        }
    }
}

/// The project settings page, with "Saved." after `?saved=1`.
pub(super) async fn project_page(
    state: &AppState,
    principal: &Principal,
    req: &HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let settings = project_settings::show(state, principal).await?;
    let saved = vellum_web::paging::param(req.query_string(), "saved").is_some();
    let view = ProjectPage::new(
        principal,
        ProjectForm::of(&settings),
        FieldErrors::default(),
        saved,
    );
    html::page(StatusCode::OK, render(&view))
}

/// The settings form put by htmx: the page again (`HX-Redirect`), or the form with its problems.
pub(super) async fn save_project(
    state: &AppState,
    principal: &Principal,
    form: &[(String, String)],
) -> Result<HttpResponse, ApiError> {
    let posted = ProjectForm::posted(form);
    match project_settings::update(state, principal, &posted.to_json()).await {
        Ok(_) => Ok(html::htmx_redirect("/settings/project?saved=1")),
        Err(err) => {
            let refusal = FormRefusal::of(err.into())?;
            let view = ProjectPage::new(principal, posted, refusal.errors.clone(), false);
            refusal.page(render(&view))
        }
    }
}

fn key_form(form: &[(String, String)]) -> KeyForm {
    let get = |name: &str| {
        form.iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
            .unwrap_or_default()
    };
    KeyForm {
        name: get("name"),
        role: get("role"),
        ip_allowlist: get("ip_allowlist"),
        expires_on: get("expires_on"),
    }
}

/// The JSON the use case takes: one allowlist entry a line, the expiry date at 00:00 UTC.
fn key_body(form: &KeyForm) -> Value {
    let ips: Vec<&str> = form
        .ip_allowlist
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let expires = form.expires_on.trim();
    json!({
        "name": form.name,
        "role": form.role,
        "ip_allowlist": ips,
        "expires_at": if expires.is_empty() { Value::Null } else { Value::String(format!("{expires}T00:00:00Z")) },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_form_becomes_the_json_the_use_case_takes() {
        let form = KeyForm {
            name: "site".to_owned(),
            role: "public".to_owned(),
            ip_allowlist: " 10.0.0.0/8\n\n192.0.2.1 \n".to_owned(),
            expires_on: "2027-01-31".to_owned(),
        };
        assert_eq!(
            key_body(&form),
            json!({"name": "site", "role": "public", "ip_allowlist": ["10.0.0.0/8", "192.0.2.1"], "expires_at": "2027-01-31T00:00:00Z"})
        );
        let none = KeyForm::default();
        assert_eq!(key_body(&none)["expires_at"], Value::Null);
    }
}
