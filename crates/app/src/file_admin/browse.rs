//! `GET /files` and `GET /files/{file}`: the file manager's folder view, search, tag, MIME
//! family and favorites filters, sort, the trash, and one row whatever its state.
//!
//! Where a list looks: `parent_id` names a folder (absent, empty or `null`: the top level);
//! when `parent_id` is absent and a filter is given (`search`, `tag`, `mime`, `favorites`) the
//! whole tree is searched. In the trash (`trashed=only`), the top level is what was deleted on
//! its own or with its folder as one (see [`Place::TrashTop`]), and `parent_id` opens a deleted
//! folder.

use serde::Serialize;
use serde_json::Value;
use vellum_domain::ValidationErrors;
use vellum_storage::files::ParentFilter;
use vellum_storage::files::browse::{BrowseFiles, BrowseSort, MimeFamily, Place, browse_files};

use super::open;
use super::resource::{admin_file, render_files};
use super::tags::normalize_tag;
use crate::context::AppState;
use crate::error::AppError;
use crate::items::{PageMeta, parse_id};
use crate::principal::Principal;
use crate::query::{first, pairs, parse_page};

/// Longest `search` accepted (the spec's Limits table).
const MAX_SEARCH: usize = 255;

/// A page of the file manager: `{"data": [...], "meta": {...}}`.
#[derive(Debug, Serialize)]
pub struct AdminFilePage {
    pub data: Vec<Value>,
    pub meta: PageMeta,
}

/// One page for `query` (the raw query string).
///
/// # Errors
/// 403 without `can-show-files`, 422 naming each bad parameter, the database.
pub async fn list(
    state: &AppState,
    principal: &Principal,
    query: &str,
) -> Result<AdminFilePage, AppError> {
    open(state, principal, "can-show-files").await?;
    let pairs = pairs(query);
    let mut errors = ValidationErrors::new();
    crate::nul::refuse_in_query(&pairs, &mut errors);
    let (page, per_page) = parse_page(&pairs, &mut errors);
    let search = first(&pairs, "search").filter(|s| !s.is_empty());
    if search.is_some_and(|s| s.chars().count() > MAX_SEARCH) {
        errors.add(
            "search",
            format!("The search field must not be longer than {MAX_SEARCH} characters."),
        );
    }
    let tag = match first(&pairs, "tag") {
        None | Some("") => None,
        Some(raw) => match normalize_tag(raw) {
            Ok(tag) => Some(tag),
            Err(message) => {
                errors.add("tag", message);
                None
            }
        },
    };
    let mime = match first(&pairs, "mime").filter(|s| !s.is_empty()) {
        None => None,
        Some(raw) => {
            let family = MimeFamily::parse(raw);
            if family.is_none() {
                errors.add(
                    "mime",
                    "The mime field must be one of image, video, audio, document, archive, other.",
                );
            }
            family
        }
    };
    let sort = match first(&pairs, "sort").filter(|s| !s.is_empty()) {
        None => BrowseSort::Name,
        Some(raw) => BrowseSort::parse(raw).unwrap_or_else(|| {
            errors.add(
                "sort",
                "The sort field must be one of name, size, date, type.",
            );
            BrowseSort::Name
        }),
    };
    let descending = match first(&pairs, "direction").filter(|s| !s.is_empty()) {
        None | Some("asc") => false,
        Some("desc") => true,
        Some(_) => {
            errors.add("direction", "The direction field must be asc or desc.");
            false
        }
    };
    let trashed = flag(&pairs, "trashed", &["only", "1", "true"], &mut errors);
    let favorites = flag(&pairs, "favorites", &["1", "true"], &mut errors);
    let filtered = search.is_some() || tag.is_some() || mime.is_some() || favorites;
    let place = match first(&pairs, "parent_id") {
        None if filtered => Place::Parent(ParentFilter::Any),
        None if trashed => Place::TrashTop,
        None | Some("" | "null") => Place::Parent(ParentFilter::Root),
        Some(raw) => match raw.parse::<i64>() {
            Ok(id) if id > 0 => Place::Parent(ParentFilter::Folder(id)),
            _ => {
                errors.add(
                    "parent_id",
                    "The parent_id field must be a folder id or null.",
                );
                Place::Parent(ParentFilter::Root)
            }
        },
    };
    errors.into_result(()).map_err(AppError::Invalid)?;
    let found = browse_files(
        state.db(),
        BrowseFiles {
            place,
            search,
            tag: tag.as_deref(),
            mime,
            sort,
            descending,
            trashed,
            favorites_of: favorites.then(|| principal.user_id()),
            page,
            per_page,
        },
    )
    .await?;
    Ok(AdminFilePage {
        data: render_files(state, principal, &found.items).await?,
        meta: PageMeta {
            current_page: found.current_page,
            last_page: found.last_page,
            per_page: found.per_page,
            total: found.total,
        },
    })
}

/// One file or folder, live or in the trash.
///
/// # Errors
/// 403 without `can-show-files`, 404, the database.
pub async fn show(state: &AppState, principal: &Principal, id: &str) -> Result<Value, AppError> {
    open(state, principal, "can-show-files").await?;
    let id = parse_id(id)?;
    admin_file(state, principal, id).await
}

/// A yes/no parameter: one of `yes` is true; absent, empty, `0` or `false` false.
fn flag(
    pairs: &[(String, String)],
    key: &str,
    yes: &[&str],
    errors: &mut ValidationErrors,
) -> bool {
    match first(pairs, key) {
        None | Some("" | "0" | "false") => false,
        Some(raw) if yes.contains(&raw) => true,
        Some(_) => {
            errors.add(
                key,
                format!(
                    "The {key} field must be one of {}, 0, false.",
                    yes.join(", ")
                ),
            );
            false
        }
    }
}
