use serde_json::Value;

use crate::value::{is_empty, loosely_equal};
use crate::{DomainError, is_truthy};

/// Operators of a condition rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConditionOperator {
    Equals,
    NotEquals,
    Empty,
    NotEmpty,
}

impl ConditionOperator {
    fn parse(raw: &str) -> Option<Self> {
        match raw {
            "equals" => Some(Self::Equals),
            "not_equals" => Some(Self::NotEquals),
            "empty" => Some(Self::Empty),
            "not_empty" => Some(Self::NotEmpty),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct ConditionRule {
    /// The sibling field the rule reads: a top-level field for item fields, a key of the same block
    /// `data` for fields inside blocks.
    pub field: String,
    pub operator: ConditionOperator,
    pub value: Option<Value>,
}

/// `conditions` of a field: when every rule matches, the present override keys replace the base
/// settings for that request. Only `required` matters on the server; `hidden` and `readonly` are
/// form concerns kept for the admin app.
#[derive(Debug, Clone, PartialEq)]
pub struct Conditions {
    pub rules: Vec<ConditionRule>,
    pub hidden: Option<bool>,
    pub readonly: Option<bool>,
    pub required: Option<bool>,
}

impl Conditions {
    /// # Errors
    /// A settings error for a logic other than `and`, an unknown operator, or a rule without a field.
    pub fn from_json(raw: &Value) -> Result<Self, DomainError> {
        let obj = raw
            .as_object()
            .ok_or_else(|| DomainError::settings("", "must be an object"))?;
        match obj.get("logic") {
            None | Some(Value::Null) => {}
            Some(Value::String(s)) if s == "and" => {}
            Some(other) => {
                return Err(DomainError::settings(
                    "logic",
                    format!("only \"and\" is supported, got {other}"),
                ));
            }
        }
        let mut rules = Vec::new();
        match obj.get("rules") {
            None | Some(Value::Null) => {}
            Some(Value::Array(list)) => {
                for (i, rule) in list.iter().enumerate() {
                    rules.push(parse_rule(rule).map_err(|e| e.within(&format!("rules[{i}]")))?);
                }
            }
            Some(_) => return Err(DomainError::settings("rules", "must be an array")),
        }
        let flag = |key: &str| obj.get(key).filter(|v| !v.is_null()).map(is_truthy);
        Ok(Self {
            rules,
            hidden: flag("hidden"),
            readonly: flag("readonly"),
            required: flag("required"),
        })
    }

    /// Whether every rule matches `lookup` (which reads a sibling value, already flattened to one
    /// locale). A conditions object without rules never matches: an empty rule list is a form
    /// left half-filled, and applying its overrides everywhere would surprise its author.
    pub fn matches<'a>(&self, lookup: impl Fn(&str) -> Option<&'a Value>) -> bool {
        !self.rules.is_empty()
            && self.rules.iter().all(|rule| {
                let value = lookup(&rule.field).unwrap_or(&Value::Null);
                match rule.operator {
                    ConditionOperator::Empty => is_empty(value),
                    ConditionOperator::NotEmpty => !is_empty(value),
                    ConditionOperator::Equals => {
                        loosely_equal(value, rule.value.as_ref().unwrap_or(&Value::Null))
                    }
                    ConditionOperator::NotEquals => {
                        !loosely_equal(value, rule.value.as_ref().unwrap_or(&Value::Null))
                    }
                }
            })
    }
}

fn parse_rule(raw: &Value) -> Result<ConditionRule, DomainError> {
    let obj = raw
        .as_object()
        .ok_or_else(|| DomainError::settings("", "must be an object"))?;
    let field = obj
        .get("field")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| DomainError::settings("field", "is required"))?;
    let op = obj
        .get("operator")
        .and_then(Value::as_str)
        .ok_or_else(|| DomainError::settings("operator", "is required"))?;
    let operator = ConditionOperator::parse(op).ok_or_else(|| {
        DomainError::settings("operator", format!("unknown condition operator \"{op}\""))
    })?;
    Ok(ConditionRule {
        field: field.to_owned(),
        operator,
        value: obj.get("value").cloned(),
    })
}

#[cfg(test)]
mod tests {
    use serde_json::{Map, json};

    use super::*;

    fn cond(raw: Value) -> Conditions {
        Conditions::from_json(&raw).unwrap()
    }

    fn eval(c: &Conditions, data: &Value) -> bool {
        let map: &Map<String, Value> = data.as_object().unwrap();
        c.matches(|k| map.get(k))
    }

    #[test]
    fn each_operator() {
        let data = json!({"status": "published", "views": 5, "note": "", "tags": []});
        let table = [
            ("status", "equals", json!("published"), true),
            ("status", "equals", json!("draft"), false),
            ("status", "not_equals", json!("draft"), true),
            ("status", "not_equals", json!("published"), false),
            ("views", "equals", json!("5"), true),
            ("note", "empty", json!(null), true),
            ("tags", "empty", json!(null), true),
            ("missing", "empty", json!(null), true),
            ("status", "empty", json!(null), false),
            ("status", "not_empty", json!(null), true),
            ("note", "not_empty", json!(null), false),
        ];
        for (field, op, value, expected) in table {
            let c = cond(
                json!({"logic": "and", "rules": [{"field": field, "operator": op, "value": value}], "required": true}),
            );
            assert_eq!(eval(&c, &data), expected, "{field} {op} {value}");
        }
    }

    #[test]
    fn logic_is_and_over_all_rules() {
        let c = cond(json!({"rules": [
            {"field": "a", "operator": "equals", "value": 1},
            {"field": "b", "operator": "not_empty"}
        ], "required": "1"}));
        assert_eq!(c.required, Some(true));
        assert!(eval(&c, &json!({"a": 1, "b": "x"})));
        assert!(!eval(&c, &json!({"a": 1, "b": ""})));
        assert!(!eval(&c, &json!({"a": 2, "b": "x"})));
    }

    #[test]
    fn empty_rules_never_match() {
        let c = cond(json!({"rules": [], "required": true}));
        assert!(!eval(&c, &json!({})));
    }

    #[test]
    fn malformed_conditions() {
        for (raw, path) in [
            (json!({"logic": "or", "rules": []}), "logic"),
            (json!({"rules": {}}), "rules"),
            (json!({"rules": [{"operator": "empty"}]}), "rules[0].field"),
            (
                json!({"rules": [{"field": "a", "operator": "gt"}]}),
                "rules[0].operator",
            ),
            (json!([]), ""),
        ] {
            match Conditions::from_json(&raw) {
                Err(DomainError::InvalidSettings { path: p, .. }) => assert_eq!(p, path, "{raw}"),
                other => panic!("{raw}: {other:?}"),
            }
        }
    }
}
