//! The web UI's side of the file manager: the folder page (with the new folder form), the file's
//! page and its metadata form (put with htmx), and where a browser goes after an upload, a
//! replace, a restore, a favorite or the trash. The JSON routes in [`super::file_admin`] call
//! these for a browser.

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse};
use serde_json::{Value, json};
use vellum_app::principal::Principal;
use vellum_app::{AppState, file_admin};
use vellum_web::forms::FieldErrors;
use vellum_web::pages::file::{FilePage, metadata_body};
use vellum_web::pages::files::FilesPage;
use vellum_web::pages::render;
use vellum_web::paging::param;

use crate::error::ApiError;
use crate::html::{self, FormRefusal};

/// A folder's page (`parent_id`), or the top level.
pub(super) async fn files_page(
    state: &AppState,
    principal: &Principal,
    req: &HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let view = folder_view(state, principal, req.query_string()).await?;
    html::page(StatusCode::OK, render(&view))
}

async fn folder_view(
    state: &AppState,
    principal: &Principal,
    query: &str,
) -> Result<FilesPage, ApiError> {
    let list = file_admin::list(state, principal, query).await?;
    let folder = match param(query, "parent_id").filter(|p| p.parse::<i64>().is_ok()) {
        Some(id) => Some(file_admin::show(state, principal, &id).await?),
        None => None,
    };
    Ok(FilesPage::new(principal, list, folder.as_ref(), query))
}

/// The new folder form: 303 to the new folder, or the page again with the problem.
pub(super) async fn create_folder(
    state: &AppState,
    principal: &Principal,
    form: &[(String, String)],
) -> Result<HttpResponse, ApiError> {
    let get = |name: &str| {
        form.iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.trim().to_owned())
            .unwrap_or_default()
    };
    let (name, parent) = (get("name"), get("parent_id"));
    let parent_id = parent.parse::<i64>().map_or(Value::Null, Value::from);
    let body = json!({ "name": name, "parent_id": parent_id });
    match file_admin::create_folder(state, principal, &body).await {
        Ok(folder) => {
            let id = folder.get("id").and_then(Value::as_i64).unwrap_or_default();
            Ok(html::see_other(&format!("/files?parent_id={id}")).finish())
        }
        Err(err) => {
            let refusal = FormRefusal::of(err.into())?;
            let query = if parent.is_empty() {
                String::new()
            } else {
                format!("parent_id={parent}")
            };
            let view = folder_view(state, principal, &query)
                .await?
                .with_folder_refusal(name, refusal.errors.clone());
            refusal.page(render(&view))
        }
    }
}

/// Where a browser goes after its upload form was stored: the folder the files went into.
pub(super) fn uploaded(files: &[Value]) -> HttpResponse {
    let parent = files
        .first()
        .and_then(|f| f.get("parent_id"))
        .and_then(Value::as_i64);
    let to = parent.map_or_else(|| "/files".to_owned(), |p| format!("/files?parent_id={p}"));
    html::see_other(&to).finish()
}

/// A file's page, with the notice a change left in the URL.
pub(super) async fn file_page(
    state: &AppState,
    principal: &Principal,
    id: &str,
    req: &HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let file = file_admin::show(state, principal, id).await?;
    if file.get("type").and_then(Value::as_str) == Some("folder") {
        return Ok(html::see_other(&format!("/files?parent_id={id}")).finish());
    }
    let query = req.query_string();
    let notice = [
        ("saved", "Saved."),
        (
            "replaced",
            "Replaced: the file has its new bytes, with the same id and details.",
        ),
        ("restored", "Restored from the trash."),
    ]
    .into_iter()
    .find(|(key, _)| param(query, key).is_some())
    .map(|(_, text)| text);
    let view = FilePage::new(principal, &file, None, FieldErrors::default(), notice);
    html::page(StatusCode::OK, render(&view))
}

/// The metadata form put by htmx: the page again (`HX-Redirect`), or the form with its problems.
pub(super) async fn save_file(
    state: &AppState,
    principal: &Principal,
    id: &str,
    form: &[(String, String)],
) -> Result<HttpResponse, ApiError> {
    let body = metadata_body(form);
    match file_admin::update(state, principal, id, &Value::Object(body.clone())).await {
        Ok(_) => Ok(html::htmx_redirect(&format!("/files/{id}?saved=1"))),
        Err(err) => {
            let refusal = FormRefusal::of(err.into())?;
            let file = file_admin::show(state, principal, id).await?;
            let view = FilePage::new(principal, &file, Some(&body), refusal.errors.clone(), None);
            refusal.page(render(&view))
        }
    }
}

/// Where htmx goes after a file went to the trash: its folder.
pub(super) async fn trash(
    state: &AppState,
    principal: &Principal,
    id: &str,
) -> Result<HttpResponse, ApiError> {
    let file = file_admin::show(state, principal, id).await?;
    file_admin::delete(state, principal, id).await?;
    let to = match file.get("parent_id").and_then(Value::as_i64) {
        Some(parent) => format!("/files?parent_id={parent}"),
        None => "/files".to_owned(),
    };
    Ok(html::htmx_redirect(&to))
}
