//! Normalization of one field value on write, per the spec's "Normalized value shapes" table.
//!
//! Every function here is total: any JSON input yields either the normalized value or a message
//! saying what is wrong; nothing panics. Normalizing a normalized value returns it unchanged, so a
//! client may send back exactly what it read.

mod date;
mod geo;
pub mod hash;
mod html;
mod links;
mod scalar;

use serde_json::Value;

use crate::{FieldSettings, FieldType, TypeSettings};

pub use html::sanitize_html;

/// Normalizes `value` for a field of `field_type` whose settings are `settings`, for every type
/// that needs no project context: all but `hash` (needs the project's key) and `blocks` (needs
/// locales and recursion), which [`crate::prepare_write`] handles. Null stays null for single
/// values and becomes `[]` for array shapes.
///
/// # Errors
/// A message fragment such as `"must be a number."`, to be prefixed with the field's name.
pub fn normalize_plain(
    field_type: FieldType,
    settings: &FieldSettings,
    value: &Value,
) -> Result<Value, String> {
    use FieldType as T;
    match field_type {
        T::String | T::Autocomplete | T::ApiAutocomplete | T::Textarea | T::Markdown | T::Code => {
            scalar::text(value)
        }
        T::Wysiwyg => scalar::text(value).map(|v| match v {
            Value::String(s) => Value::String(sanitize_html(&s)),
            other => other,
        }),
        T::Select | T::RadioGroup => scalar::choice(value, options(settings)),
        T::Multiselect | T::CheckboxGroup | T::CheckboxGroupTree => {
            scalar::choice_list(value, options(settings))
        }
        T::Tag => scalar::tags(value),
        T::Color => scalar::color(value),
        T::Number | T::Slider => scalar::number(value),
        T::Boolean => scalar::boolean(value),
        T::Date => date::normalize(
            value,
            match settings.kind {
                TypeSettings::Date { mode } => mode,
                _ => crate::DateMode::default(),
            },
        ),
        T::Map => geo::normalize(
            value,
            match settings.kind {
                TypeSettings::Map { mode } => mode,
                _ => crate::GeometryMode::default(),
            },
        ),
        T::Image | T::Files if field_type.value_shape(settings.allow_multiple()).is_array() => {
            links::id_list(value, false, cap(settings, "file"))
        }
        T::Image | T::File | T::Files | T::Relation | T::ManyToOne | T::RelationTree => {
            links::single_id(value)
        }
        T::OneToMany | T::RelationMany => links::id_list(
            value,
            relation_allows_duplicates(settings),
            cap(settings, "link"),
        ),
        T::ManyToMany => match &settings.kind {
            TypeSettings::ManyToMany {
                relation,
                junction_fields,
            } => links::junction_links(
                value,
                junction_fields,
                relation.allow_duplicates,
                cap(settings, "link"),
            ),
            _ => links::junction_links(value, &[], false, cap(settings, "link")),
        },
        T::M2a => match &settings.kind {
            TypeSettings::M2a {
                allowed_collection_ids,
                allow_duplicates,
                ..
            } => links::collection_links(
                value,
                allowed_collection_ids,
                *allow_duplicates,
                cap(settings, "link"),
            ),
            _ => links::collection_links(value, &[], false, cap(settings, "link")),
        },
        T::Hash | T::Blocks => Err("cannot be normalized without the project context.".into()),
    }
}

/// The field's `max_links` (see [`FieldSettings::max_links`]).
fn cap(settings: &FieldSettings, noun: &'static str) -> links::Cap {
    links::Cap {
        max: settings.max_links(),
        noun,
    }
}

fn options(settings: &FieldSettings) -> Option<&[String]> {
    match &settings.kind {
        TypeSettings::Choice { options } => options.as_deref(),
        _ => None,
    }
}

fn relation_allows_duplicates(settings: &FieldSettings) -> bool {
    matches!(&settings.kind, TypeSettings::Relation(r) if r.allow_duplicates)
}

/// Whether a value counts as empty for `required`, conditions and defaults: null, a blank
/// string, an empty array or an empty object.
#[must_use]
pub fn is_empty(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::String(s) => s.trim().is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        Value::Bool(_) | Value::Number(_) => false,
    }
}

/// Equality as people mean it in conditions and `equals` rules: `5` equals `"5"`, `true` equals
/// `"true"` and `"1"`; otherwise plain JSON equality.
#[must_use]
pub fn loosely_equal(a: &Value, b: &Value) -> bool {
    if a == b {
        return true;
    }
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Number(n), Value::String(s)) | (Value::String(s), Value::Number(n)) => {
            s.trim().parse::<f64>().ok() == n.as_f64()
        }
        (Value::Bool(flag), Value::String(s)) | (Value::String(s), Value::Bool(flag)) => {
            match s.as_str() {
                "true" | "1" | "on" => *flag,
                "false" | "0" | "off" => !*flag,
                _ => false,
            }
        }
        (Value::Bool(flag), Value::Number(n)) | (Value::Number(n), Value::Bool(flag)) => {
            n.as_f64() == Some(if *flag { 1.0 } else { 0.0 })
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn emptiness() {
        for v in [json!(null), json!(""), json!("  "), json!([]), json!({})] {
            assert!(is_empty(&v), "{v}");
        }
        for v in [
            json!(0),
            json!(false),
            json!("a"),
            json!([null]),
            json!({"a": null}),
        ] {
            assert!(!is_empty(&v), "{v}");
        }
    }

    #[test]
    fn loose_equality() {
        assert!(loosely_equal(&json!(5), &json!("5")));
        assert!(loosely_equal(&json!(5.0), &json!(5)));
        assert!(loosely_equal(&json!(true), &json!("true")));
        assert!(loosely_equal(&json!(false), &json!("0")));
        assert!(loosely_equal(&json!(true), &json!(1)));
        assert!(!loosely_equal(&json!("a"), &json!("b")));
        assert!(!loosely_equal(&json!(true), &json!("yes")));
        assert!(!loosely_equal(&json!(null), &json!("")));
    }
}
