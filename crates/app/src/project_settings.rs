//! The project settings over the admin app (`GET`/`PUT /settings/project`): the manifest's
//! `settings` object, read and written with the same checks as `vellum-admin settings set` and
//! `apply` (`vellum_storage::project` normalizes and validates every value; a stored value is
//! always valid).
//!
//! `PUT` takes the keys it wants to change (the others keep their values) and answers every
//! setting. A change moves the epoch, so every replica rebuilds its snapshot (locales, the origin
//! gate's allowlist, upload caps) on its next request.

use serde_json::{Map, Value as Json};
use vellum_storage::StorageError;
use vellum_storage::project::{self, CONTENT_LOCALES, DEFAULT_LOCALE, PUBLIC_API_ALLOWED_ORIGINS};

use crate::activity::{self, Change};
use crate::context::AppState;
use crate::error::AppError;
use crate::principal::Principal;

/// The most content locales a project may enable.
pub const MAX_LOCALES: usize = 100;
/// The most origins the origin gate's allowlist may hold.
pub const MAX_ORIGINS: usize = 1000;

/// Every setting: stored values, defaults for the rest.
///
/// # Errors
/// 403 without `can-manage-project-settings`, the database.
pub async fn show(state: &AppState, principal: &Principal) -> Result<Map<String, Json>, AppError> {
    principal.require("can-manage-project-settings")?;
    Ok(project::load_settings(state.db()).await?.to_json())
}

/// Sets the settings `body` names (an object of setting keys; `{}` changes nothing) and answers
/// every setting. All or nothing.
///
/// # Errors
/// 403 without `can-manage-project-settings`; 422 naming every unknown key and wrong value,
/// or `default_locale` when it would not be among the enabled locales; the database.
pub async fn update(
    state: &AppState,
    principal: &Principal,
    body: &Json,
) -> Result<Map<String, Json>, AppError> {
    principal.require("can-manage-project-settings")?;
    crate::nul::refuse_in_body(body)?;
    let Json::Object(values) = body else {
        return Err(AppError::invalid(
            "body",
            "The request body must be a JSON object.",
        ));
    };
    let mut errors = project::check_settings(values);
    for (key, max) in [
        (CONTENT_LOCALES, MAX_LOCALES),
        (PUBLIC_API_ALLOWED_ORIGINS, MAX_ORIGINS),
    ] {
        if values
            .get(key)
            .and_then(Json::as_array)
            .is_some_and(|list| list.len() > max)
        {
            errors.add(key, format!("must not have more than {max} entries"));
        }
    }
    if !errors.is_empty() {
        return Err(AppError::Invalid(errors));
    }
    let before = project::load_settings(state.db()).await?.to_json();
    project::set_settings(state.db(), values)
        .await
        .map_err(settings_error)?;
    let after = project::load_settings(state.db()).await?.to_json();
    let changed: Vec<String> = after
        .iter()
        .filter(|(key, value)| before.get(key.as_str()) != Some(value))
        .map(|(key, _)| key.clone())
        .collect();
    if !changed.is_empty() {
        activity::record(
            state,
            Some(principal.user_id()),
            Change::new("settings", "updated")
                .subject("settings", "project")
                .changed(changed),
        )
        .await;
        state.invalidate().await;
    }
    Ok(after)
}

/// The storage's refusal keyed by setting: "setting KEY: problem" by KEY, "settings: problem"
/// (the default locale is not enabled) by `default_locale`.
fn settings_error(err: StorageError) -> AppError {
    match err {
        StorageError::Conflict { message, .. } => {
            if let Some((key, problem)) = message
                .strip_prefix("setting ")
                .and_then(|rest| rest.split_once(": "))
            {
                AppError::invalid(key, problem)
            } else {
                AppError::invalid(
                    DEFAULT_LOCALE,
                    message.strip_prefix("settings: ").unwrap_or(&message),
                )
            }
        }
        other => other.into(),
    }
}
