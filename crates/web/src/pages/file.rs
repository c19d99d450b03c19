//! One file (`GET /files/{file}`): its preview, transform previews of a public image, the
//! metadata form with a focal-point picker (put with htmx), tags, favorite, download, replace
//! and the trash.

use askama::Template;
use serde_json::{Map, Value, json};
use vellum_app::principal::Principal;

use crate::chrome::Chrome;
use crate::forms::FieldErrors;
use crate::pages::files::bytes;

/// The metadata the form edits, in its order: (key, label, multi-line).
pub const METADATA: [(&str, &str, bool); 5] = [
    ("title", "Title", false),
    ("alt_text", "Alternative text", false),
    ("description", "Description", true),
    ("location", "Location", false),
    ("download_name", "Download name", false),
];

#[derive(Debug, Clone, Template)]
#[template(path = "file.html")]
pub struct FilePage {
    pub chrome: Chrome,
    pub id: i64,
    pub filename: String,
    pub folder_href: String,
    pub facts: Vec<(&'static str, String)>,
    /// The preview's URL when the file is an image (the admin download: private ones too).
    pub preview: Option<String>,
    /// A public image's transforms: `(key, URL)`.
    pub transforms: Vec<(String, String)>,
    /// The metadata as the form shows it: `(key, label, multi-line, value)`.
    pub fields: Vec<(&'static str, &'static str, bool, String)>,
    pub focal_x: String,
    pub focal_y: String,
    pub tags: Vec<String>,
    pub favorite: bool,
    pub deleted: bool,
    pub errors: FieldErrors,
    /// "Saved." or "Replaced." after a change.
    pub notice: Option<&'static str>,
}

impl FilePage {
    /// The page of `file` (the file manager's resource); `posted` is a refused form's values.
    #[must_use]
    pub fn new(
        principal: &Principal,
        file: &Value,
        posted: Option<&Map<String, Value>>,
        errors: FieldErrors,
        notice: Option<&'static str>,
    ) -> Self {
        let str_of = |key: &str| file.get(key).and_then(Value::as_str).unwrap_or_default();
        let id = file.get("id").and_then(Value::as_i64).unwrap_or_default();
        let value = |key: &str| {
            let v = posted.and_then(|p| p.get(key)).or_else(|| file.get(key));
            match v {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Number(n)) => n.to_string(),
                _ => String::new(),
            }
        };
        let image = str_of("mime_type").starts_with("image/");
        let public = str_of("effective_access") == "public";
        let deleted = !file.get("deleted_at").is_none_or(Value::is_null);
        let mut facts = vec![
            ("Type", str_of("mime_type").to_owned()),
            (
                "Size",
                file.get("filesize")
                    .and_then(Value::as_u64)
                    .map(bytes)
                    .unwrap_or_default(),
            ),
            (
                "Access",
                format!(
                    "{} ({})",
                    str_of("effective_access"),
                    match file.get("access") {
                        Some(Value::String(_)) => "set on the file",
                        _ => "inherited",
                    }
                ),
            ),
        ];
        if let (Some(w), Some(h)) = (
            file.get("width").and_then(Value::as_u64),
            file.get("height").and_then(Value::as_u64),
        ) {
            facts.push(("Dimensions", format!("{w} × {h} px")));
        }
        Self {
            chrome: Chrome::new(principal, "files"),
            id,
            filename: str_of("filename").to_owned(),
            folder_href: match file.get("parent_id").and_then(Value::as_i64) {
                Some(parent) => format!("/files?parent_id={parent}"),
                None => "/files".to_owned(),
            },
            facts,
            preview: (image && !deleted).then(|| format!("/files/{id}/download")),
            transforms: if image && public && !deleted {
                file.get("transforms")
                    .and_then(Value::as_object)
                    .map(|t| {
                        t.iter()
                            .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
                            .collect()
                    })
                    .unwrap_or_default()
            } else {
                Vec::new()
            },
            fields: METADATA
                .iter()
                .map(|(key, label, multi)| (*key, *label, *multi, value(key)))
                .collect(),
            focal_x: value("focal_point_x"),
            focal_y: value("focal_point_y"),
            tags: file
                .get("tags")
                .and_then(Value::as_array)
                .map(|t| {
                    t.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default(),
            favorite: file.get("favorite").and_then(Value::as_bool) == Some(true),
            deleted,
            errors,
            notice,
        }
    }

    /// Problems of no field of the form.
    #[must_use]
    pub fn other_errors(&self) -> Vec<String> {
        let mut shown: Vec<&str> = METADATA.iter().map(|(k, _, _)| *k).collect();
        shown.extend(["focal_point_x", "focal_point_y"]);
        self.errors.others(&shown)
    }
}

/// The metadata form's fields as the `PUT /files/{file}` body: text (empty is null), the focal
/// point as numbers (anything else as text, for the use case to refuse next to its field).
#[must_use]
pub fn metadata_body(form: &[(String, String)]) -> Map<String, Value> {
    let get = |name: &str| {
        form.iter()
            .rev()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.trim().to_owned())
    };
    let mut body = Map::new();
    for (key, _, _) in METADATA {
        if let Some(v) = get(key) {
            body.insert(
                key.to_owned(),
                if v.is_empty() { Value::Null } else { json!(v) },
            );
        }
    }
    for key in ["focal_point_x", "focal_point_y"] {
        if let Some(v) = get(key) {
            let value = if v.is_empty() {
                Value::Null
            } else {
                v.parse::<f64>()
                    .ok()
                    .and_then(serde_json::Number::from_f64)
                    .map_or_else(|| json!(v), Value::Number)
            };
            body.insert(key.to_owned(), value);
        }
    }
    body
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_metadata_form_is_typed() {
        let form: Vec<(String, String)> = [
            ("title", " Sunset "),
            ("alt_text", ""),
            ("focal_point_x", "0.25"),
            ("focal_point_y", "left"),
        ]
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
        assert_eq!(
            Value::Object(metadata_body(&form)),
            json!({"title": "Sunset", "alt_text": null, "focal_point_x": 0.25, "focal_point_y": "left"})
        );
    }
}
