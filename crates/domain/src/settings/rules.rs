use regex::{Regex, RegexBuilder};
use serde_json::Value;

use crate::DomainError;

/// The operators of `validation_rules`, the eleven of the spec.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RuleOperator {
    Required,
    Unique,
    MinLength,
    MaxLength,
    Min,
    Max,
    Regex,
    Contains,
    NotContains,
    Equals,
    NotEquals,
}

impl RuleOperator {
    pub const ALL: [Self; 11] = [
        Self::Required,
        Self::Unique,
        Self::MinLength,
        Self::MaxLength,
        Self::Min,
        Self::Max,
        Self::Regex,
        Self::Contains,
        Self::NotContains,
        Self::Equals,
        Self::NotEquals,
    ];

    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Required => "required",
            Self::Unique => "unique",
            Self::MinLength => "min_length",
            Self::MaxLength => "max_length",
            Self::Min => "min",
            Self::Max => "max",
            Self::Regex => "regex",
            Self::Contains => "contains",
            Self::NotContains => "not_contains",
            Self::Equals => "equals",
            Self::NotEquals => "not_equals",
        }
    }

    fn parse(raw: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|op| op.as_str() == raw)
    }

    /// `required` and `unique` stand alone; every other operator compares against `value`.
    #[must_use]
    pub fn needs_value(self) -> bool {
        !matches!(self, Self::Required | Self::Unique)
    }
}

/// One parsed validation rule. Rule values are checked when the schema is saved (a `regex` that
/// does not compile, a negative `min_length`), so writes never meet a broken rule.
#[derive(Debug, Clone)]
pub struct ValidationRule {
    pub operator: RuleOperator,
    pub value: Option<Value>,
    /// Compiled once for `regex`, with a size limit so a hostile schema cannot exhaust memory.
    pub(crate) regex: Option<Regex>,
}

impl PartialEq for ValidationRule {
    fn eq(&self, other: &Self) -> bool {
        self.operator == other.operator && self.value == other.value
    }
}

/// Upper bound on a compiled rule pattern; generous for real validation patterns.
const REGEX_SIZE_LIMIT: usize = 1 << 20;

impl ValidationRule {
    /// # Errors
    /// A settings error naming `operator` or `value` when the rule is malformed.
    pub fn from_json(raw: &Value) -> Result<Self, DomainError> {
        let obj = raw
            .as_object()
            .ok_or_else(|| DomainError::settings("", "must be an object with an \"operator\""))?;
        let op_raw = obj
            .get("operator")
            .and_then(Value::as_str)
            .ok_or_else(|| DomainError::settings("operator", "is required and must be a string"))?;
        let operator = RuleOperator::parse(op_raw).ok_or_else(|| {
            DomainError::settings(
                "operator",
                format!("unknown validation operator \"{op_raw}\""),
            )
        })?;
        let value = obj.get("value").filter(|v| !v.is_null()).cloned();
        let mut regex = None;
        if operator.needs_value() {
            let v = value.as_ref().ok_or_else(|| {
                DomainError::settings("value", format!("is required for \"{op_raw}\""))
            })?;
            match operator {
                RuleOperator::MinLength | RuleOperator::MaxLength if v.as_u64().is_none() => {
                    return Err(DomainError::settings(
                        "value",
                        "must be a non-negative integer",
                    ));
                }
                RuleOperator::Min | RuleOperator::Max if v.as_f64().is_none() => {
                    return Err(DomainError::settings("value", "must be a number"));
                }
                RuleOperator::Regex => {
                    let pattern = v.as_str().ok_or_else(|| {
                        DomainError::settings("value", "must be a pattern string")
                    })?;
                    let compiled = RegexBuilder::new(pattern)
                        .size_limit(REGEX_SIZE_LIMIT)
                        .build()
                        .map_err(|e| {
                            DomainError::settings("value", format!("invalid pattern: {e}"))
                        })?;
                    regex = Some(compiled);
                }
                _ => {}
            }
        }
        Ok(Self {
            operator,
            value,
            regex,
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn all_eleven_operators_parse() {
        for op in RuleOperator::ALL {
            let value = match op {
                RuleOperator::Required | RuleOperator::Unique => json!(null),
                RuleOperator::MinLength | RuleOperator::MaxLength => json!(3),
                RuleOperator::Min | RuleOperator::Max => json!(1.5),
                RuleOperator::Regex => json!("^[a-z]+$"),
                _ => json!("x"),
            };
            let rule = ValidationRule::from_json(&json!({"operator": op.as_str(), "value": value}))
                .unwrap();
            assert_eq!(rule.operator, op);
        }
    }

    #[test]
    fn malformed_rules_name_the_problem() {
        let cases = [
            (json!("required"), ""),
            (json!({}), "operator"),
            (json!({"operator": "between"}), "operator"),
            (json!({"operator": "min_length"}), "value"),
            (json!({"operator": "min_length", "value": -1}), "value"),
            (json!({"operator": "max_length", "value": "3"}), "value"),
            (json!({"operator": "min", "value": "x"}), "value"),
            (json!({"operator": "regex", "value": "("}), "value"),
            (json!({"operator": "regex", "value": 3}), "value"),
            (json!({"operator": "equals"}), "value"),
        ];
        for (raw, path) in cases {
            match ValidationRule::from_json(&raw) {
                Err(DomainError::InvalidSettings { path: p, .. }) => assert_eq!(p, path, "{raw}"),
                other => panic!("{raw}: {other:?}"),
            }
        }
    }

    #[test]
    fn oversized_regex_is_rejected_not_compiled() {
        let huge = "(a{1000}){1000}";
        assert!(ValidationRule::from_json(&json!({"operator": "regex", "value": huge})).is_err());
    }
}
