//! GraphQL arguments turned into the query string the REST items endpoints take, so the items
//! use cases parse them (and refuse them) exactly as they parse REST's: one filter dialect, one
//! set of 422 messages, one cache of list totals.

use serde_json::Value;
use url::form_urlencoded::Serializer;
use vellum_domain::ValidationErrors;

use crate::error::AppError;

/// What a list or by-id field was given, in REST's names.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct ReadArgs {
    /// The `filter` argument as JSON (lists only).
    pub filter: Option<Value>,
    pub sort: Option<String>,
    pub page: Option<i64>,
    pub per_page: Option<i64>,
    pub locale: Option<String>,
    pub include: Option<String>,
    pub all_translations: Option<bool>,
}

impl ReadArgs {
    /// The REST query string these arguments stand for.
    ///
    /// # Errors
    /// 422 on `filter` when it is not an object of `field: value` or `field: {_op: value}`.
    pub fn query_string(&self) -> Result<String, AppError> {
        let mut out = Serializer::new(String::new());
        if let Some(filter) = &self.filter {
            for (key, value) in filter_pairs(filter)? {
                out.append_pair(&key, &value);
            }
        }
        if let Some(sort) = &self.sort {
            out.append_pair("sort", sort);
        }
        if let Some(page) = self.page {
            out.append_pair("page", &page.to_string());
        }
        if let Some(per_page) = self.per_page {
            out.append_pair("per_page", &per_page.to_string());
        }
        if let Some(locale) = &self.locale {
            out.append_pair("locale", locale);
        }
        if let Some(include) = &self.include {
            out.append_pair("include", include);
        }
        if let Some(all) = self.all_translations {
            out.append_pair(
                "include_all_translations",
                if all { "true" } else { "false" },
            );
        }
        Ok(out.finish())
    }
}

const FILTER_SHAPE: &str = "The filter argument must be an object of field: value (contains) or \
     field: {_op: value} (_eq, _neq, _in, _gt, _gte, _lt, _lte, _contains, _null, _nnull).";

/// `{"title": "hel", "views": {"_gte": 5}, "status": {"_in": ["a", "b"]}}` as REST's
/// `filter[title]=hel&filter[views][_gte]=5&filter[status][_in]=a,b`, in order. A `null` filter
/// is no filter. Field and operator names pass through untouched: REST's parser judges them.
fn filter_pairs(filter: &Value) -> Result<Vec<(String, String)>, AppError> {
    let shape = || AppError::invalid("filter", FILTER_SHAPE);
    let object = match filter {
        Value::Null => return Ok(Vec::new()),
        Value::Object(object) => object,
        _ => return Err(shape()),
    };
    let mut pairs = Vec::new();
    for (field, condition) in object {
        match condition {
            Value::Object(ops) => {
                for (op, operand) in ops {
                    let text = operand_text(operand).ok_or_else(|| {
                        let mut errors = ValidationErrors::new();
                        errors.add(
                            format!("filter[{field}][{op}]"),
                            "must be a string, a number, a boolean or a list of them",
                        );
                        AppError::Invalid(errors)
                    })?;
                    pairs.push((format!("filter[{field}][{op}]"), text));
                }
            }
            scalar => {
                let text = scalar_text(scalar).ok_or_else(shape)?;
                pairs.push((format!("filter[{field}]"), text));
            }
        }
    }
    Ok(pairs)
}

/// An operand as REST's text: a list (for `_in`) joined with commas.
fn operand_text(operand: &Value) -> Option<String> {
    match operand {
        Value::Array(values) => values
            .iter()
            .map(scalar_text)
            .collect::<Option<Vec<_>>>()
            .map(|texts| texts.join(",")),
        scalar => scalar_text(scalar),
    }
}

fn scalar_text(value: &Value) -> Option<String> {
    match value {
        Value::String(text) => Some(text.clone()),
        Value::Number(number) => Some(number.to_string()),
        Value::Bool(flag) => Some(flag.to_string()),
        Value::Null | Value::Array(_) | Value::Object(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn decoded(args: &ReadArgs) -> Vec<(String, String)> {
        crate::query::pairs(&args.query_string().unwrap())
    }

    #[test]
    fn every_argument_becomes_its_rest_parameter_in_order() {
        let args = ReadArgs {
            filter: Some(json!({
                "title": "hel&lo",
                "views": {"_gte": 5, "_lt": 10.5},
                "status": {"_in": ["a", "b,c", 3]},
                "flag": {"_null": true}
            })),
            sort: Some("-views,title".into()),
            page: Some(2),
            per_page: Some(7),
            locale: Some("de".into()),
            include: Some("author,files".into()),
            all_translations: Some(false),
        };
        let expected: Vec<(String, String)> = [
            ("filter[title]", "hel&lo"),
            ("filter[views][_gte]", "5"),
            ("filter[views][_lt]", "10.5"),
            ("filter[status][_in]", "a,b,c,3"),
            ("filter[flag][_null]", "true"),
            ("sort", "-views,title"),
            ("page", "2"),
            ("per_page", "7"),
            ("locale", "de"),
            ("include", "author,files"),
            ("include_all_translations", "false"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
        assert_eq!(decoded(&args), expected);
        assert_eq!(ReadArgs::default().query_string().unwrap(), "");
    }

    #[test]
    fn a_filter_that_is_not_the_dialect_is_refused_naming_where() {
        let refused = |filter: Value| {
            let args = ReadArgs {
                filter: Some(filter),
                ..ReadArgs::default()
            };
            match args.query_string() {
                Err(AppError::Invalid(errors)) => serde_json::to_value(&errors).unwrap(),
                other => panic!("expected 422, got {other:?}"),
            }
        };
        assert!(refused(json!([1]))["filter"].is_array());
        assert!(refused(json!("title")).get("filter").is_some());
        assert!(refused(json!({"title": null})).get("filter").is_some());
        assert!(refused(json!({"title": [1]})).get("filter").is_some());
        assert!(
            refused(json!({"views": {"_eq": {"a": 1}}}))
                .get("filter[views][_eq]")
                .is_some()
        );
        assert!(
            refused(json!({"views": {"_in": [[1]]}}))
                .get("filter[views][_in]")
                .is_some()
        );
        // A null filter is no filter.
        let none = ReadArgs {
            filter: Some(Value::Null),
            ..ReadArgs::default()
        };
        assert_eq!(none.query_string().unwrap(), "");
    }
}
