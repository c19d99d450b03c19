//! NUL characters in request input. PostgreSQL's `text` and `jsonb` cannot hold U+0000, so a NUL
//! that reached SQL would fail the statement (a 500) on PostgreSQL and be stored on SQLite: the
//! two backends would disagree. Input is checked here, at the edge, and refused with 422 naming
//! the parameter or field.

use serde_json::Value;
use vellum_domain::ValidationErrors;

/// The query parameters whose values reach SQL as text (`filter[…]`, `sort`, `locale`,
/// `include`, `search`); the others are parsed as numbers or booleans and refuse a NUL anyway.
const TEXT_PARAMETERS: [&str; 5] = ["filter", "sort", "locale", "include", "search"];

/// Adds a 422 entry for every text parameter holding a NUL in its name or value.
pub(crate) fn refuse_in_query(pairs: &[(String, String)], errors: &mut ValidationErrors) {
    for (key, value) in pairs {
        if !TEXT_PARAMETERS.iter().any(|p| key.starts_with(p)) {
            continue;
        }
        if key.contains('\0') || value.contains('\0') {
            let name = key.replace('\0', "");
            errors.add(
                name.clone(),
                format!("The {name} field must not contain NUL characters."),
            );
        }
    }
}

/// Whether any string or object key in `value` holds a NUL.
pub(crate) fn in_json(value: &Value) -> bool {
    match value {
        Value::String(s) => s.contains('\0'),
        Value::Array(items) => items.iter().any(in_json),
        Value::Object(map) => map.iter().any(|(k, v)| k.contains('\0') || in_json(v)),
        Value::Null | Value::Bool(_) | Value::Number(_) => false,
    }
}

/// 422 naming every top-level field of an admin request body that holds a NUL (in a string or
/// an object key at any depth), before any of it reaches SQL.
pub(crate) fn refuse_in_body(body: &Value) -> Result<(), crate::AppError> {
    let Value::Object(fields) = body else {
        return Ok(());
    };
    let mut errors = ValidationErrors::new();
    for (key, value) in fields {
        if key.contains('\0') || in_json(value) {
            let name = key.replace('\0', "");
            errors.add(
                name.clone(),
                format!("The {name} field must not contain NUL characters."),
            );
        }
    }
    errors.into_result(()).map_err(crate::AppError::Invalid)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn nul_is_found_anywhere_in_json() {
        assert!(!in_json(&json!({"a": [1, "b", {"c": null}]})));
        assert!(in_json(&json!({"a": [1, "b", {"c": "x\u{0}"}]})));
        assert!(in_json(&json!({"a\u{0}": 1})));
        assert!(in_json(&json!(["\u{0}"])));
    }

    #[test]
    fn only_text_parameters_are_checked() {
        let pairs = vec![
            ("filter[title][_eq]".to_owned(), "a\0".to_owned()),
            ("other".to_owned(), "\0".to_owned()),
            ("sort".to_owned(), "title".to_owned()),
        ];
        let mut errors = ValidationErrors::new();
        refuse_in_query(&pairs, &mut errors);
        let map = errors.into_map();
        assert_eq!(map.keys().collect::<Vec<_>>(), ["filter[title][_eq]"]);
    }
}
