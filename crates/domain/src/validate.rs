//! Field-level validation of normalized values: `required` (with `conditions`) and the
//! `validation_rules` operators. `unique` needs the database, so it is returned as a
//! [`UniqueCheck`] for the storage layer to run inside the write transaction.

use serde_json::{Map, Value};

use crate::value::{is_empty, loosely_equal};
use crate::write_context::{UniqueCheck, WriteContext};
use crate::{FieldDef, LocaleCode, RuleOperator, ValidationErrors, ValidationRule};

/// The value of a field as conditions and `required` see it: translatable values flattened to the
/// request locale with fallback to the default locale.
pub(crate) fn flattened<'a>(
    field: &FieldDef,
    value: Option<&'a Value>,
    ctx: &WriteContext<'_>,
) -> Option<&'a Value> {
    match value {
        Some(Value::Object(map)) if field.translatable => ctx.locales.pick(map, ctx.locale),
        other => other,
    }
}

/// A sibling view for condition rules: every field of the object, flattened.
pub(crate) fn condition_view(
    fields: &[FieldDef],
    data: &Map<String, Value>,
    ctx: &WriteContext<'_>,
) -> Map<String, Value> {
    let mut view = Map::new();
    for field in fields {
        if let Some(v) = flattened(field, data.get(field.name.as_str()), ctx) {
            view.insert(field.name.to_string(), v.clone());
        }
    }
    view
}

/// Validates one field's stored value, recording problems under `path`.
pub(crate) fn validate_field(
    field: &FieldDef,
    value: Option<&Value>,
    siblings: &Map<String, Value>,
    ctx: &WriteContext<'_>,
    path: &str,
    errors: &mut ValidationErrors,
    unique: Option<&mut Vec<UniqueCheck>>,
) {
    let settings = &field.settings;
    let custom = settings
        .validation_message
        .as_ref()
        .and_then(|m| m.resolve(ctx.locale, ctx.locales))
        .map(str::to_owned);
    let report = |errors: &mut ValidationErrors, default: String| {
        errors.add(path, custom.clone().unwrap_or(default));
    };

    let mut required = settings.required || settings.has_rule(RuleOperator::Required);
    if let Some(conditions) = &settings.conditions
        && let Some(over) = conditions.required
        && conditions.matches(|k| siblings.get(k))
    {
        required = over;
    }
    // Required means the fallback translation exists: the default locale's value.
    let required_view = match value {
        Some(Value::Object(map)) if field.translatable => {
            map.get(ctx.locales.default_locale().as_str())
        }
        other => other,
    };
    if required && required_view.is_none_or(is_empty) {
        report(errors, format!("The {} field is required.", field.name));
        return;
    }

    let values: Vec<(Option<LocaleCode>, &Value)> = match value {
        None | Some(Value::Null) => return,
        Some(Value::Object(map)) if field.translatable => map
            .iter()
            .filter_map(|(k, v)| LocaleCode::parse(k).ok().map(|code| (Some(code), v)))
            .collect(),
        Some(v) => vec![(None, v)],
    };
    let mut unique = unique;
    for (locale, v) in values {
        if is_empty(v) {
            continue;
        }
        let label = match &locale {
            Some(code) => format!("{} field ({code})", field.name),
            None => format!("{} field", field.name),
        };
        for rule in &settings.validation_rules {
            if let Some(problem) = check_rule(rule, v) {
                report(errors, format!("The {label} {problem}"));
            }
            if rule.operator == RuleOperator::Unique
                && let Some(checks) = unique.as_deref_mut()
            {
                checks.push(UniqueCheck {
                    field: field.name.clone(),
                    locale: locale.clone(),
                    value: v.clone(),
                });
            }
        }
    }
}

/// The problem `rule` finds with a non-empty value, if any. Rules that do not apply to the
/// value's JSON type (a `min` on a string) find nothing: settings are shared across types and a
/// schema change must not make old rules reject unrelated values.
fn check_rule(rule: &ValidationRule, value: &Value) -> Option<String> {
    let expected = rule.value.as_ref().unwrap_or(&Value::Null);
    let n = expected.as_f64();
    match rule.operator {
        RuleOperator::Required | RuleOperator::Unique => None,
        RuleOperator::MinLength => match value {
            Value::String(s) if (s.chars().count() as f64) < n.unwrap_or(0.0) => {
                Some(format!("must be at least {expected} characters."))
            }
            Value::Array(a) if (a.len() as f64) < n.unwrap_or(0.0) => {
                Some(format!("must have at least {expected} items."))
            }
            _ => None,
        },
        RuleOperator::MaxLength => match value {
            Value::String(s) if (s.chars().count() as f64) > n.unwrap_or(f64::INFINITY) => {
                Some(format!("must not be longer than {expected} characters."))
            }
            Value::Array(a) if (a.len() as f64) > n.unwrap_or(f64::INFINITY) => {
                Some(format!("must not have more than {expected} items."))
            }
            _ => None,
        },
        RuleOperator::Min => match (value.as_f64(), n) {
            (Some(v), Some(min)) if v < min => Some(format!("must be at least {expected}.")),
            _ => None,
        },
        RuleOperator::Max => match (value.as_f64(), n) {
            (Some(v), Some(max)) if v > max => {
                Some(format!("must not be greater than {expected}."))
            }
            _ => None,
        },
        RuleOperator::Regex => {
            let re = rule.regex.as_ref()?;
            let ok = match value {
                Value::String(s) => re.is_match(s),
                Value::Array(items) => items
                    .iter()
                    .all(|i| i.as_str().is_none_or(|s| re.is_match(s))),
                _ => true,
            };
            (!ok).then(|| "format is invalid.".to_owned())
        }
        RuleOperator::Contains => {
            (!contains(value, expected)).then(|| format!("must contain {}.", show(expected)))
        }
        RuleOperator::NotContains => {
            contains(value, expected).then(|| format!("must not contain {}.", show(expected)))
        }
        RuleOperator::Equals => {
            (!loosely_equal(value, expected)).then(|| format!("must be {}.", show(expected)))
        }
        RuleOperator::NotEquals => {
            loosely_equal(value, expected).then(|| format!("must not be {}.", show(expected)))
        }
    }
}

fn contains(value: &Value, needle: &Value) -> bool {
    match value {
        Value::String(s) => match needle {
            Value::String(n) => s.contains(n.as_str()),
            other => s.contains(&other.to_string()),
        },
        Value::Array(items) => items.iter().any(|i| loosely_equal(i, needle)),
        _ => false,
    }
}

fn show(v: &Value) -> String {
    match v {
        Value::String(s) => format!("\"{s}\""),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn rule(op: &str, value: Value) -> ValidationRule {
        ValidationRule::from_json(&json!({"operator": op, "value": value})).unwrap()
    }

    /// One row per validation operator: (operator, rule value, passing value, failing value).
    #[test]
    fn every_operator_passes_and_fails() {
        let rows = [
            ("min_length", json!(3), json!("abc"), json!("ab")),
            ("min_length", json!(2), json!(["a", "b"]), json!(["a"])),
            ("max_length", json!(3), json!("abc"), json!("abcd")),
            ("max_length", json!(1), json!(["a"]), json!(["a", "b"])),
            ("min", json!(10), json!(10), json!(9.5)),
            ("max", json!(10), json!(10), json!(11)),
            ("regex", json!("^[a-z]+$"), json!("abc"), json!("abc1")),
            (
                "regex",
                json!("^[a-z]+$"),
                json!(["a", "b"]),
                json!(["a", "B"]),
            ),
            ("contains", json!("@"), json!("a@b"), json!("ab")),
            ("contains", json!("x"), json!(["x", "y"]), json!(["y"])),
            ("not_contains", json!("@"), json!("ab"), json!("a@b")),
            ("equals", json!("yes"), json!("yes"), json!("no")),
            ("equals", json!(5), json!("5"), json!(6)),
            ("not_equals", json!("admin"), json!("user"), json!("admin")),
        ];
        for (op, rv, pass, fail) in rows {
            let r = rule(op, rv.clone());
            assert_eq!(check_rule(&r, &pass), None, "{op} {rv} should pass {pass}");
            assert!(
                check_rule(&r, &fail).is_some(),
                "{op} {rv} should fail {fail}"
            );
        }
    }

    #[test]
    fn non_applicable_rules_are_silent() {
        assert_eq!(check_rule(&rule("min", json!(3)), &json!("ab")), None);
        assert_eq!(check_rule(&rule("min_length", json!(3)), &json!(1)), None);
        assert_eq!(check_rule(&rule("regex", json!("^a$")), &json!(5)), None);
    }

    #[test]
    fn unicode_lengths_count_characters() {
        assert_eq!(
            check_rule(&rule("max_length", json!(3)), &json!("äöü")),
            None
        );
    }
}
