//! Tags (`can-tag-files` to change them, `can-show-files` to list them): short lower-case labels,
//! added many at a time and removed one at a time. A tag is trimmed and lower-cased before it is
//! stored or looked up, so `Summer ` and `summer` are one tag.

use serde::Serialize;
use serde_json::{Value, json};
use vellum_domain::ValidationErrors;
use vellum_storage::files::tags::{
    add_tags as store_tags, remove_tags as unstore_tags, tag_counts,
};

use super::resource::admin_file;
use super::{log, open};
use crate::cache::Scope;
use crate::context::AppState;
use crate::error::AppError;
use crate::items::parse_id;
use crate::principal::Principal;

/// The most tags one request adds.
pub const MAX_TAGS_PER_REQUEST: usize = 50;
/// The longest tag, in characters.
pub const MAX_TAG_CHARS: usize = 64;

/// A tag with how many live files carry it.
#[derive(Debug, Clone, Serialize)]
pub struct TagResource {
    pub tag: String,
    pub files: u64,
}

/// `raw` trimmed and lower-cased, or why it is not a tag.
///
/// # Errors
/// The 422 message: empty, longer than [`MAX_TAG_CHARS`], or holding control characters.
pub fn normalize_tag(raw: &str) -> Result<String, String> {
    let tag = raw.trim().to_lowercase();
    if tag.is_empty() {
        return Err("A tag must not be empty.".to_owned());
    }
    if tag.chars().count() > MAX_TAG_CHARS {
        return Err(format!(
            "A tag must not be longer than {MAX_TAG_CHARS} characters."
        ));
    }
    if tag.chars().any(char::is_control) {
        return Err("A tag must not contain control characters.".to_owned());
    }
    Ok(tag)
}

/// Every tag carried by a live file, with its count, by tag (at most 1,000).
///
/// # Errors
/// 403 without `can-show-files`, the database.
pub async fn list_tags(
    state: &AppState,
    principal: &Principal,
) -> Result<Vec<TagResource>, AppError> {
    open(state, principal, "can-show-files").await?;
    Ok(tag_counts(state.db())
        .await?
        .into_iter()
        .map(|t| TagResource {
            tag: t.tag,
            files: t.files,
        })
        .collect())
}

/// Adds `{"tags": [...]}` to the live file `id`; answers the file.
///
/// # Errors
/// 403 without `can-tag-files`, 404 (a missing or trashed file), 422 for a bad body or more
/// than 100 tags on the file, the database.
pub async fn add_tags(
    state: &AppState,
    principal: &Principal,
    id: &str,
    body: &Value,
) -> Result<Value, AppError> {
    open(state, principal, "can-tag-files").await?;
    let id = parse_id(id)?;
    let tags = parse_tags(body)?;
    let all = store_tags(state.db(), id, &tags).await?;
    state.content_changed(Scope::Files).await;
    log(
        state,
        principal,
        "tagged",
        id,
        vec!["tags".to_owned()],
        json!({ "added": tags, "tags": all }),
    )
    .await;
    admin_file(state, principal, id).await
}

/// Removes one tag from the live file `id`.
///
/// # Errors
/// 403 without `can-tag-files`, 404 (a missing or trashed file, or a tag it does not carry),
/// the database.
pub async fn remove_tag(
    state: &AppState,
    principal: &Principal,
    id: &str,
    tag: &str,
) -> Result<(), AppError> {
    open(state, principal, "can-tag-files").await?;
    let id = parse_id(id)?;
    let tag = normalize_tag(tag).map_err(|_| AppError::NotFound)?;
    if unstore_tags(state.db(), id, std::slice::from_ref(&tag))
        .await?
        .is_empty()
    {
        return Err(AppError::NotFound);
    }
    state.content_changed(Scope::Files).await;
    log(
        state,
        principal,
        "untagged",
        id,
        vec!["tags".to_owned()],
        json!({ "removed": tag }),
    )
    .await;
    Ok(())
}

/// `{"tags": [..]}`: 1 to 50 strings, each normalized; repeats collapse.
pub(crate) fn parse_tags(body: &Value) -> Result<Vec<String>, AppError> {
    let Some(Value::Array(raw)) = body.get("tags") else {
        return Err(AppError::invalid(
            "tags",
            "The tags field must be a list of strings.",
        ));
    };
    if raw.is_empty() || raw.len() > MAX_TAGS_PER_REQUEST {
        return Err(AppError::invalid(
            "tags",
            format!("The tags field must hold 1 to {MAX_TAGS_PER_REQUEST} tags."),
        ));
    }
    let mut errors = ValidationErrors::new();
    let mut tags: Vec<String> = Vec::with_capacity(raw.len());
    for (i, value) in raw.iter().enumerate() {
        match value.as_str().map(normalize_tag) {
            Some(Ok(tag)) => {
                if !tags.contains(&tag) {
                    tags.push(tag);
                }
            }
            Some(Err(message)) => errors.add(format!("tags.{i}"), message),
            None => errors.add(format!("tags.{i}"), "A tag must be a string."),
        }
    }
    errors.into_result(tags).map_err(AppError::Invalid)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_are_trimmed_lower_cased_and_bounded() {
        assert_eq!(normalize_tag("  Summer ").unwrap(), "summer");
        assert_eq!(normalize_tag("ÉTÉ").unwrap(), "été");
        assert!(normalize_tag("   ").is_err());
        assert!(normalize_tag("a\u{0}b").is_err());
        assert!(normalize_tag(&"x".repeat(65)).is_err());
        assert!(normalize_tag(&"x".repeat(64)).is_ok());
    }
}
