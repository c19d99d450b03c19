use serde_json::{Number, Value};

/// string or null. Numbers are accepted and kept as their text (forms and CSV imports send them);
/// booleans, arrays and objects are rejected rather than guessed at.
pub(super) fn text(value: &Value) -> Result<Value, String> {
    match value {
        Value::Null => Ok(Value::Null),
        Value::String(s) => Ok(Value::String(s.clone())),
        Value::Number(n) => Ok(Value::String(n.to_string())),
        _ => Err("must be a string.".into()),
    }
}

/// A single choice: text, and one of `options` when the field lists them.
pub(super) fn choice(value: &Value, options: Option<&[String]>) -> Result<Value, String> {
    let v = text(value)?;
    if let (Value::String(s), Some(options)) = (&v, options)
        && !s.is_empty()
        && !options.iter().any(|o| o == s)
    {
        return Err("must be one of the field's options.".into());
    }
    Ok(v)
}

/// string[]: a list of strings (numbers kept as text). A single string is a one-element list and
/// null is `[]`, so a form sending one checkbox value does not fail.
pub(super) fn string_list(value: &Value) -> Result<Vec<String>, String> {
    match value {
        Value::Null => Ok(Vec::new()),
        Value::String(s) => Ok(vec![s.clone()]),
        Value::Array(items) => items
            .iter()
            .map(|item| match item {
                Value::String(s) => Ok(s.clone()),
                Value::Number(n) => Ok(n.to_string()),
                _ => Err("must be a list of strings.".to_owned()),
            })
            .collect(),
        _ => Err("must be a list of strings.".into()),
    }
}

pub(super) fn choice_list(value: &Value, options: Option<&[String]>) -> Result<Value, String> {
    let list = string_list(value)?;
    if let Some(options) = options
        && let Some(bad) = list.iter().find(|s| !options.contains(s))
    {
        return Err(format!(
            "contains \"{bad}\", which is not one of the field's options."
        ));
    }
    Ok(Value::Array(list.into_iter().map(Value::String).collect()))
}

/// Tags: trimmed, blank entries dropped, duplicates removed (first occurrence wins).
pub(super) fn tags(value: &Value) -> Result<Value, String> {
    let mut out: Vec<String> = Vec::new();
    for tag in string_list(value)? {
        let tag = tag.trim();
        if !tag.is_empty() && !out.iter().any(|t| t == tag) {
            out.push(tag.to_owned());
        }
    }
    Ok(Value::Array(out.into_iter().map(Value::String).collect()))
}

/// Hex colours (`#rgb`, `#rgba`, `#rrggbb`, `#rrggbbaa`), stored lowercase so equality filters work.
pub(super) fn color(value: &Value) -> Result<Value, String> {
    match text(value)? {
        Value::String(s) if s.is_empty() => Ok(Value::Null),
        Value::String(s) => {
            let hex = s.strip_prefix('#').unwrap_or("");
            if matches!(hex.len(), 3 | 4 | 6 | 8) && hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                Ok(Value::String(s.to_ascii_lowercase()))
            } else {
                Err("must be a hex colour such as #1a2b3c.".into())
            }
        }
        other => Ok(other),
    }
}

/// number or null. Numeric strings are parsed (HTML forms send text); integers stay integers so
/// ids and counts survive unchanged. Blank strings mean null.
pub(super) fn number(value: &Value) -> Result<Value, String> {
    const MSG: &str = "must be a number.";
    match value {
        Value::Null => Ok(Value::Null),
        Value::Number(n) => Ok(Value::Number(n.clone())),
        Value::String(s) if s.trim().is_empty() => Ok(Value::Null),
        Value::String(s) => {
            let s = s.trim();
            if let Ok(i) = s.parse::<i64>() {
                return Ok(Value::Number(i.into()));
            }
            s.parse::<f64>()
                .ok()
                .and_then(Number::from_f64)
                .map(Value::Number)
                .ok_or_else(|| MSG.to_owned())
        }
        _ => Err(MSG.into()),
    }
}

/// boolean or null, accepting the usual form encodings of a checkbox.
pub(super) fn boolean(value: &Value) -> Result<Value, String> {
    match value {
        Value::Null => Ok(Value::Null),
        Value::Bool(b) => Ok(Value::Bool(*b)),
        Value::Number(n) if n.as_f64() == Some(1.0) => Ok(Value::Bool(true)),
        Value::Number(n) if n.as_f64() == Some(0.0) => Ok(Value::Bool(false)),
        Value::String(s) => match s.as_str() {
            "true" | "1" | "on" => Ok(Value::Bool(true)),
            "false" | "0" | "off" => Ok(Value::Bool(false)),
            "" => Ok(Value::Null),
            _ => Err("must be true or false.".into()),
        },
        _ => Err("must be true or false.".into()),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn text_values() {
        assert_eq!(text(&json!("a")), Ok(json!("a")));
        assert_eq!(text(&json!(null)), Ok(json!(null)));
        assert_eq!(text(&json!(12)), Ok(json!("12")));
        assert!(text(&json!(true)).is_err());
        assert!(text(&json!(["a"])).is_err());
        assert!(text(&json!({"a": 1})).is_err());
    }

    #[test]
    fn numbers() {
        assert_eq!(number(&json!(3)), Ok(json!(3)));
        assert_eq!(number(&json!(-2.5)), Ok(json!(-2.5)));
        assert_eq!(number(&json!("42")), Ok(json!(42)));
        assert_eq!(number(&json!(" 4.5 ")), Ok(json!(4.5)));
        assert_eq!(number(&json!("")), Ok(json!(null)));
        for bad in [
            json!("abc"),
            json!("NaN"),
            json!("inf"),
            json!(true),
            json!([1]),
        ] {
            assert!(number(&bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn booleans() {
        for (input, out) in [
            (json!(true), json!(true)),
            (json!(0), json!(false)),
            (json!("on"), json!(true)),
            (json!("false"), json!(false)),
            (json!(null), json!(null)),
        ] {
            assert_eq!(boolean(&input), Ok(out), "{input}");
        }
        for bad in [json!(2), json!("yes"), json!([]), json!({})] {
            assert!(boolean(&bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn lists_and_choices() {
        assert_eq!(choice_list(&json!(["a", 1]), None), Ok(json!(["a", "1"])));
        assert_eq!(choice_list(&json!("a"), None), Ok(json!(["a"])));
        assert_eq!(choice_list(&json!(null), None), Ok(json!([])));
        assert!(choice_list(&json!([["a"]]), None).is_err());
        let opts = vec!["red".to_owned(), "blue".to_owned()];
        assert!(choice_list(&json!(["red", "green"]), Some(&opts)).is_err());
        assert_eq!(choice(&json!("red"), Some(&opts)), Ok(json!("red")));
        assert!(choice(&json!("green"), Some(&opts)).is_err());
        assert_eq!(tags(&json!([" a ", "b", "a", ""])), Ok(json!(["a", "b"])));
    }

    #[test]
    fn colors() {
        assert_eq!(color(&json!("#AABBCC")), Ok(json!("#aabbcc")));
        assert_eq!(color(&json!("#fff")), Ok(json!("#fff")));
        assert_eq!(color(&json!("")), Ok(json!(null)));
        for bad in [
            json!("red"),
            json!("#ggg"),
            json!("#12345"),
            json!("aabbcc"),
        ] {
            assert!(color(&bad).is_err(), "{bad}");
        }
    }
}
