//! The file manager (`GET /files`): a folder's files as a grid of thumbnails or a list, with
//! search, the MIME family, favorites and trash views and sort kept in the URL; a new folder
//! form; and upload by drag and drop or the file picker with a progress bar (`upload.js`; the
//! plain form posts the same multipart body without script).

use askama::Template;
use serde_json::Value;
use vellum_app::file_admin::AdminFilePage;
use vellum_app::principal::Principal;

use crate::chrome::Chrome;
use crate::forms::FieldErrors;
use crate::links::{changed, href};
use crate::paging::{Pager, param};

#[derive(Debug, Clone, Template)]
#[template(path = "files.html")]
pub struct FilesPage {
    pub chrome: Chrome,
    /// The folder shown: `(id, name, its parent's id)`; none at the top level.
    pub folder: Option<(i64, String, Option<i64>)>,
    pub rows: Vec<FileCard>,
    pub total: u64,
    pub grid: bool,
    pub search: String,
    pub trashed: bool,
    pub favorites: bool,
    pub mime: String,
    pub sort: String,
    /// The other view's URL (grid ↔ list).
    pub view_href: String,
    pub trash_href: String,
    pub favorites_href: String,
    pub pager: Pager,
    pub can_create: bool,
    /// A refused new folder's problems.
    pub errors: FieldErrors,
    pub folder_name: String,
}

/// One row of the page.
#[derive(Debug, Clone)]
pub struct FileCard {
    pub id: i64,
    pub name: String,
    pub folder: bool,
    pub href: String,
    /// The thumbnail's URL (a public image's `thumbnail` transform).
    pub thumb: Option<String>,
    pub kind: String,
    pub size: String,
    pub access: String,
    pub favorite: bool,
    pub tags: String,
}

impl FilesPage {
    /// The page for `list`, answered for the raw `query`; `folder` is the folder it shows.
    #[must_use]
    pub fn new(
        principal: &Principal,
        list: AdminFilePage,
        folder: Option<&Value>,
        query: &str,
    ) -> Self {
        let text = |key| param(query, key).unwrap_or_default();
        let grid = param(query, "view").as_deref() != Some("list");
        let trashed = matches!(text("trashed").as_str(), "only" | "1" | "true");
        let favorites = matches!(text("favorites").as_str(), "1" | "true");
        let toggle = |key: &str, on: bool, value: &str| {
            let set: &[(&str, &str)] = if on { &[] } else { &[(key, value)] };
            href("/files", &changed(query, &[key], set))
        };
        Self {
            chrome: Chrome::new(principal, "files"),
            folder: folder.map(|f| {
                (
                    f.get("id").and_then(Value::as_i64).unwrap_or_default(),
                    f.get("filename")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                    f.get("parent_id").and_then(Value::as_i64),
                )
            }),
            rows: list.data.iter().map(card).collect(),
            total: list.meta.total,
            grid,
            search: text("search"),
            mime: text("mime"),
            sort: text("sort"),
            view_href: href(
                "/files",
                &changed(
                    query,
                    &["view"],
                    &[("view", if grid { "list" } else { "grid" })],
                ),
            ),
            trash_href: toggle("trashed", trashed, "only"),
            favorites_href: toggle("favorites", favorites, "1"),
            trashed,
            favorites,
            pager: Pager::new("/files", query, list.meta.current_page, list.meta.last_page),
            can_create: principal.may("can-create-files"),
            errors: FieldErrors::default(),
            folder_name: String::new(),
        }
    }

    /// The page after a refused new folder: its name as typed and the problem next to it.
    #[must_use]
    pub fn with_folder_refusal(mut self, name: String, errors: FieldErrors) -> Self {
        self.folder_name = name;
        self.errors = errors;
        self
    }

    /// The shown folder's id as the forms send it (empty at the top level).
    #[must_use]
    pub fn parent_value(&self) -> String {
        self.folder
            .as_ref()
            .map(|(id, _, _)| id.to_string())
            .unwrap_or_default()
    }

    /// Where "Up" goes: the parent folder, or the top level.
    #[must_use]
    pub fn up_href(&self) -> String {
        match &self.folder {
            Some((_, _, Some(parent))) => format!("/files?parent_id={parent}"),
            _ => "/files".to_owned(),
        }
    }

    /// Whether a filter or the trash is shown (the empty state says so).
    #[must_use]
    pub fn filtered(&self) -> bool {
        !self.search.is_empty() || !self.mime.is_empty() || self.favorites
    }
}

fn card(file: &Value) -> FileCard {
    let str_of = |key: &str| file.get(key).and_then(Value::as_str).unwrap_or_default();
    let id = file.get("id").and_then(Value::as_i64).unwrap_or_default();
    let folder = str_of("type") == "folder";
    let public = str_of("effective_access") == "public";
    let image = str_of("mime_type").starts_with("image/");
    FileCard {
        id,
        name: str_of("filename").to_owned(),
        folder,
        href: if folder {
            format!("/files?parent_id={id}")
        } else {
            format!("/files/{id}")
        },
        thumb: (public && image)
            .then(|| {
                file.get("transforms")
                    .and_then(|t| t.get("thumbnail"))
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            })
            .flatten(),
        kind: if folder {
            "folder".to_owned()
        } else if !str_of("extension").is_empty() {
            str_of("extension").to_uppercase()
        } else {
            // No extension: the name's, else the MIME subtype.
            str_of("filename")
                .rsplit_once('.')
                .map(|(_, ext)| ext)
                .or_else(|| str_of("mime_type").split_once('/').map(|(_, sub)| sub))
                .unwrap_or("file")
                .to_uppercase()
        },
        size: file
            .get("filesize")
            .and_then(Value::as_u64)
            .map(bytes)
            .unwrap_or_default(),
        access: str_of("effective_access").to_owned(),
        favorite: file.get("favorite").and_then(Value::as_bool) == Some(true),
        tags: file
            .get("tags")
            .and_then(Value::as_array)
            .map(|t| {
                t.iter()
                    .filter_map(Value::as_str)
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .unwrap_or_default(),
    }
}

/// A size for people: `512 B`, `1.5 KB`, `3.2 MB`.
#[must_use]
pub fn bytes(n: u64) -> String {
    #[allow(clippy::cast_precision_loss)] // a size shown to one decimal
    let f = n as f64;
    match n {
        0..1024 => format!("{n} B"),
        1024..1_048_576 => format!("{:.1} KB", f / 1024.0),
        1_048_576..1_073_741_824 => format!("{:.1} MB", f / 1_048_576.0),
        _ => format!("{:.1} GB", f / 1_073_741_824.0),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn sizes_and_cards_read_for_people() {
        assert_eq!(bytes(512), "512 B");
        assert_eq!(bytes(1536), "1.5 KB");
        assert_eq!(bytes(3_355_443), "3.2 MB");
        let c = card(
            &json!({"id": 4, "type": "file", "filename": "a.png", "mime_type": "image/png",
            "extension": "png", "filesize": 2048, "effective_access": "public",
            "transforms": {"thumbnail": "http://x/api/v1/files/4/transforms/thumbnail"}}),
        );
        assert_eq!(
            c.thumb.as_deref(),
            Some("http://x/api/v1/files/4/transforms/thumbnail")
        );
        assert_eq!(
            (c.kind.as_str(), c.size.as_str(), c.href.as_str()),
            ("PNG", "2.0 KB", "/files/4")
        );
        let private = card(
            &json!({"id": 5, "type": "file", "mime_type": "image/png", "effective_access": "private",
            "transforms": {"thumbnail": "u"}}),
        );
        assert_eq!(
            private.thumb, None,
            "a private image is not loaded without a key"
        );
        let folder = card(&json!({"id": 6, "type": "folder", "filename": "Photos"}));
        assert_eq!(
            (folder.href.as_str(), folder.kind.as_str()),
            ("/files?parent_id=6", "folder")
        );
    }
}
