//! The rules of a file's metadata: names (no directories, no control characters), lengths,
//! focal points; UpdateFileRequest parsed into a storage patch.

use serde_json::{Map, Value};
use vellum_domain::ValidationErrors;
use vellum_storage::files::FilePatch;

use super::MAX_NAME;
use crate::error::AppError;

/// UpdateFileRequest: every property optional; unknown ones are ignored.
pub(super) fn parse_patch(body: &[u8]) -> Result<FilePatch, AppError> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|_| AppError::invalid("body", "The request body must be a JSON object."))?;
    let Value::Object(obj) = value else {
        return Err(AppError::invalid(
            "body",
            "The request body must be a JSON object.",
        ));
    };
    // PostgreSQL cannot store U+0000 (see `crate::nul`): named per property, like other errors.
    let mut nul = ValidationErrors::new();
    for (key, value) in &obj {
        if key.contains('\0') || crate::nul::in_json(value) {
            let name = key.replace('\0', "");
            nul.add(
                name.clone(),
                format!("The {name} field must not contain NUL characters."),
            );
        }
    }
    nul.into_result(()).map_err(AppError::Invalid)?;
    let mut errors = ValidationErrors::new();
    let mut patch = FilePatch {
        title: optional_text(&obj, "title", 65_535, &mut errors),
        description: optional_text(&obj, "description", 65_535, &mut errors),
        location: optional_text(&obj, "location", 65_535, &mut errors),
        download_name: optional_text(&obj, "download_name", MAX_NAME, &mut errors),
        ..FilePatch::default()
    };
    if let Some(Some(name)) = &patch.download_name
        && clean_filename(name) != *name
    {
        errors.add(
            "download_name",
            "The download_name must be a plain file name (no directories or control characters).",
        );
    }
    patch.focal_point_x = focal(&obj, "focal_point_x", &mut errors);
    patch.focal_point_y = focal(&obj, "focal_point_y", &mut errors);
    match obj.get("name") {
        None => {}
        Some(Value::String(name)) => {
            let cleaned = clean_filename(name);
            if cleaned.is_empty() || cleaned != *name {
                errors.add(
                    "name",
                    "The name must be a non-empty file name (no directories or control characters).",
                );
            } else if name.chars().count() > MAX_NAME {
                errors.add(
                    "name",
                    format!("The name must not be longer than {MAX_NAME} characters."),
                );
            } else {
                patch.filename = Some(cleaned);
            }
        }
        Some(_) => errors.add("name", "The name field must be a string."),
    }
    errors.into_result(patch).map_err(AppError::Invalid)
}

pub(crate) fn optional_text(
    obj: &Map<String, Value>,
    key: &str,
    max: usize,
    errors: &mut ValidationErrors,
) -> Option<Option<String>> {
    match obj.get(key) {
        None => None,
        Some(Value::Null) => Some(None),
        Some(Value::String(s)) if s.chars().count() <= max => Some(Some(s.clone())),
        Some(Value::String(_)) => {
            errors.add(
                key,
                format!("The {key} field must not be longer than {max} characters."),
            );
            None
        }
        Some(_) => {
            errors.add(key, format!("The {key} field must be a string or null."));
            None
        }
    }
}

pub(crate) fn focal(
    obj: &Map<String, Value>,
    key: &str,
    errors: &mut ValidationErrors,
) -> Option<Option<f64>> {
    match obj.get(key) {
        None => None,
        Some(Value::Null) => Some(None),
        Some(Value::Number(n)) => match n.as_f64() {
            Some(v) if (0.0..=1.0).contains(&v) => Some(Some(v)),
            _ => {
                errors.add(key, format!("The {key} field must be between 0 and 1."));
                None
            }
        },
        Some(_) => {
            errors.add(
                key,
                format!("The {key} field must be a number between 0 and 1 or null."),
            );
            None
        }
    }
}

/// A client's file name without any directory part or control characters.
pub(crate) fn clean_filename(raw: &str) -> String {
    let base = raw.rsplit(['/', '\\']).next().unwrap_or_default();
    let cleaned: String = base.chars().filter(|c| !c.is_control()).collect();
    let cleaned = cleaned.trim();
    if cleaned == "." || cleaned == ".." {
        String::new()
    } else {
        cleaned.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filenames_lose_directories_and_control_characters() {
        assert_eq!(clean_filename("../../etc/passwd"), "passwd");
        assert_eq!(clean_filename("C:\\Users\\me\\photo.jpg"), "photo.jpg");
        assert_eq!(clean_filename("a\u{0}b\nc.txt"), "abc.txt");
        assert_eq!(clean_filename(".."), "");
        assert_eq!(clean_filename("dir/"), "");
    }
}
