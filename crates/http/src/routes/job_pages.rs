//! The web UI's side of jobs and webhooks: the jobs page (tabs per status, Retry and Cancel
//! with htmx), the webhooks page and its create form (the new webhook's signing secret is shown
//! in the answer to the post, never put in a URL; deletion with htmx) and one webhook's page
//! with its delivery log (Replay with htmx).

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse};
use vellum_app::AppState;
use vellum_app::principal::Principal;
use vellum_app::{jobs, webhooks};
use vellum_web::pages::jobs::JobsPage;
use vellum_web::pages::render;
use vellum_web::pages::webhook::WebhookPage;
use vellum_web::pages::webhooks::{WebhookForm, WebhooksPage};

use crate::error::ApiError;
use crate::html::{self, FormRefusal};

/// The jobs page.
pub(super) async fn jobs_page(
    state: &AppState,
    principal: &Principal,
    req: &HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let screen = jobs::screen(state, principal, req.query_string()).await?;
    let view = JobsPage::new(principal, screen, req.query_string());
    html::page(StatusCode::OK, render(&view))
}

/// The webhooks page.
pub(super) async fn webhooks_page(
    state: &AppState,
    principal: &Principal,
    req: &HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let screen = webhooks::screen(state, principal).await?;
    let view = WebhooksPage::new(principal, screen, req.query_string());
    html::page(StatusCode::OK, render(&view))
}

/// One webhook's page: its settings and its delivery log.
pub(super) async fn webhook_page(
    state: &AppState,
    principal: &Principal,
    id: &str,
    req: &HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let hook = webhooks::show(state, principal, id).await?;
    let log = webhooks::deliveries(state, principal, id, req.query_string()).await?;
    let view = WebhookPage::new(principal, hook, log, req.query_string());
    html::page(StatusCode::OK, render(&view))
}

/// The create form posted: the page with the new webhook's secret (200: a redirect would have
/// to carry the secret), or the form again with its problems (422).
pub(super) async fn create_webhook(
    state: &AppState,
    principal: &Principal,
    form: &[(String, String)],
) -> Result<HttpResponse, ApiError> {
    let posted = WebhookForm::posted(form);
    let created = webhooks::create(state, principal, &posted.to_json()).await;
    let screen = webhooks::screen(state, principal).await?;
    let page = WebhooksPage::new(principal, screen, "");
    match created {
        Ok(hook) => {
            let secret = hook.secret.unwrap_or_default();
            html::page(
                StatusCode::OK,
                render(&page.with_created(hook.name, secret)),
            )
        }
        Err(err) => {
            let refusal = FormRefusal::of(err.into())?;
            let page = page.with_refusal(posted, refusal.errors.clone());
            refusal.page(render(&page))
        }
    }
}
