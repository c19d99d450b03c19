//! JSON shapes of the spec's resources that do not depend on a request: timestamps, users, file
//! URLs and the expanded file field. Item rendering with expansion lives in [`crate::render`].

use serde_json::{Map, Value, json};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use vellum_policy::FieldPolicy;
use vellum_storage::files::{FileKind, StoredFile};
use vellum_storage::model::Collection;
use vellum_storage::users::MiniUser;

use crate::transform_urls::FileUrls;

/// The image presets every image file advertises in `transforms` (the operator contract's
/// "Files and transforms").
pub const PRESETS: [&str; 4] = ["thumbnail", "small", "medium", "large"];

/// RFC 3339 in UTC, or null.
#[must_use]
pub fn timestamp(at: Option<OffsetDateTime>) -> Value {
    at.and_then(|t| t.format(&Rfc3339).ok())
        .map_or(Value::Null, Value::String)
}

#[must_use]
pub fn mini_user(user: &MiniUser) -> Value {
    json!({"id": user.id, "name": user.name, "email": user.email})
}

/// Whether the stored file is an image the transform presets apply to.
#[must_use]
pub fn is_transformable(file: &StoredFile) -> bool {
    file.kind == FileKind::File
        && matches!(
            file.mime_type.as_deref(),
            Some("image/jpeg" | "image/png" | "image/webp" | "image/gif")
        )
}

/// `url` (null for folders) and `transforms` (empty unless a transformable image): the presets,
/// then the configured extra sizes, each signed when signing is on (see
/// [`crate::transform_urls`]).
#[must_use]
pub fn file_urls(urls: &FileUrls<'_>, file: &StoredFile) -> (Value, Value) {
    if file.kind == FileKind::Folder {
        return (Value::Null, Value::Object(Map::new()));
    }
    let base = format!("{}/api/v1/files/{}", urls.base_url(), file.id);
    let transforms: Map<String, Value> = if is_transformable(file) {
        PRESETS
            .iter()
            .map(|key| (*key).to_owned())
            .chain(urls.extra_keys())
            .map(|key| {
                let url = format!("{base}/transforms/{key}{}", urls.query(file, &key));
                (key, Value::String(url))
            })
            .collect()
    } else {
        Map::new()
    };
    (
        Value::String(format!("{base}/content")),
        Value::Object(transforms),
    )
}

/// The spec's ExpandedFileField.
#[must_use]
pub fn expanded_file(urls: &FileUrls<'_>, file: &StoredFile) -> Value {
    let (url, transforms) = file_urls(urls, file);
    json!({
        "id": file.id,
        "filename": file.filename,
        "title": file.title,
        "mime_type": file.mime_type,
        "width": file.width,
        "height": file.height,
        "filesize": file.filesize,
        "url": url,
        "transforms": transforms,
    })
}

/// The spec's CollectionSummary.
#[must_use]
pub fn collection_summary(collection: &Collection) -> Value {
    json!({
        "id": collection.id,
        "name": collection.name,
        "slug": collection.slug.as_str(),
        "is_singleton": collection.is_singleton,
    })
}

/// The spec's CollectionResource: the summary plus the CollectionFieldSummary of every field the
/// role may read (a field hidden by the role's rules is not even named).
#[must_use]
pub fn collection_resource(collection: &Collection, fields: &FieldPolicy) -> Value {
    let mut out = collection_summary(collection);
    let fields: Vec<Value> = collection
        .fields
        .iter()
        .filter(|f| fields.can_read(f.def.name.as_str()))
        .map(|f| {
            let def = f.def.to_json();
            json!({
                "id": f.id,
                "name": f.def.name.as_str(),
                "type": f.def.field_type.as_str(),
                "translatable": f.def.translatable,
                "settings": def.get("settings").cloned().unwrap_or(Value::Null),
            })
        })
        .collect();
    if let Value::Object(map) = &mut out {
        map.insert("fields".into(), Value::Array(fields));
    }
    out
}

/// The spec's FileResource: all eighteen keys. `access` is the effective visibility (the stored
/// value may be null, meaning "inherit").
#[must_use]
pub fn file_resource(urls: &FileUrls<'_>, file: &StoredFile) -> Value {
    let (url, transforms) = file_urls(urls, file);
    json!({
        "id": file.id,
        "parent_id": file.parent_id,
        "type": file.kind.as_str(),
        "access": file.effective.as_str(),
        "filename": file.filename,
        "title": file.title,
        "description": file.description,
        "mime_type": file.mime_type,
        "extension": file.extension,
        "filesize": file.filesize,
        "width": file.width,
        "height": file.height,
        "focal_point_x": file.focal_point_x,
        "focal_point_y": file.focal_point_y,
        "url": url,
        "transforms": transforms,
        "created_at": timestamp(file.created_at),
        "updated_at": timestamp(file.updated_at),
    })
}
