use serde_json::Value;

/// Whether a settings flag is set. The spec counts boolean `true`, `1`, `'1'`, `'true'` and `'on'`
/// as set, because settings arrive from HTML forms, YAML-ish manifests and JSON alike; everything
/// else (including `"yes"` and `"TRUE"`) is unset so the rule stays small and predictable.
#[must_use]
pub fn is_truthy(value: &Value) -> bool {
    match value {
        Value::Bool(b) => *b,
        Value::Number(n) => {
            n.as_i64() == Some(1) || n.as_u64() == Some(1) || n.as_f64() == Some(1.0)
        }
        Value::String(s) => matches!(s.as_str(), "1" | "true" | "on"),
        Value::Null | Value::Array(_) | Value::Object(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn truthy_values_follow_the_spec_list() {
        for v in [
            json!(true),
            json!(1),
            json!("1"),
            json!("true"),
            json!("on"),
            json!(1.0),
        ] {
            assert!(is_truthy(&v), "{v} should be truthy");
        }
        for v in [
            json!(false),
            json!(0),
            json!(2),
            json!("0"),
            json!("false"),
            json!("off"),
            json!("yes"),
            json!("TRUE"),
            json!(""),
            json!(null),
            json!([1]),
            json!({"a": 1}),
        ] {
            assert!(!is_truthy(&v), "{v} should not be truthy");
        }
    }
}
