//! The filter dialect shared by the query `filter` parameter, the role's `item_filter` and the
//! admin items list: `filter[f][_op]=v` (or `{"f": {"_op": v}}` in JSON), a plain value meaning
//! `_contains`, all conditions AND-ed.
//!
//! One AST serves two evaluators that must agree: [`Filter::matches`] here (for "does the item I
//! am about to write still fall inside the role's filter?", relation expansion and previews) and
//! the SQL compiler in `vellum-storage` (lists, counts, show). A disagreement is a filter bypass
//! (an item hidden from a list but expanded through a relation), so every operator has exactly
//! one definition, below, and every definition is one that both SQL backends express exactly:
//! the operand readers ([`FilterOp::number_operand`], [`FilterOp::text_operand`],
//! [`FilterOp::bool_operand`], [`FilterOp::instant_operand`]) and the character sets
//! ([`FilterOp::BLANK`]) are shared with the compiler rather than written twice.
//!
//! | op | matches when |
//! |---|---|
//! | `_contains` (plain form too) | the value's text contains the operand, ignoring ASCII case only (`É` does not match `é`, the Kelvin sign does not match `k`); for a list, any element does. A string is its own text, a boolean `true` / `false`, an integer of magnitude below 2^53 ([`FilterOp::MAX_TEXT_INTEGER`]) its decimal digits; other numbers (fractions, larger values) have no text and never match, because JSON, SQLite and PostgreSQL spell them differently. `%`, `_` and `\` are plain characters |
//! | `_eq` | equal by the stored value's JSON type: a number numerically (`42` = `"42.0"`), a boolean by truth (`true`, `1`), text exactly; for a list, any element is equal |
//! | `_neq` | not `_eq`; a null or missing value is "not equal" |
//! | `_in` | `_eq` to any of the comma-separated operands |
//! | `_gt` `_gte` `_lt` `_lte` | a stored number numerically (a non-numeric operand never matches), stored text as text in byte order (normalized dates are ISO 8601 and order correctly as text); null, missing, booleans, lists and objects never match |
//! | `_null` | null, missing, blank text or an empty list (`_null=0`/`false` means `_nnull`). Blank means empty after trimming space, tab, CR and LF only ([`FilterOp::BLANK`]); any other character, Unicode whitespace such as U+00A0 or U+3000 included, is content |
//! | `_nnull` | the opposite of `_null` |
//!
//! Numbers compare as 64-bit floats on every side (an integer beyond 2^53 equals the float
//! nearest to it): PostgreSQL's `jsonb` stores a float written `1.152921504606847e18` as the
//! integer `1152921504606847000`, so "exact when both are integers" is not something both
//! backends can decide. A numeric operand is a JSON number, or text that parses as a finite
//! float after trimming [`FilterOp::BLANK`]; the text of a JSON number operand is its JSON
//! spelling (`1.0` is the text `"1.0"`).
//!
//! System keys: `id` is a number. `created_at` and `updated_at` are instants: an operand that
//! is an RFC 3339 date-time (any offset, any precision; compared exactly with the stored
//! microseconds) or a `YYYY-MM-DD` date (midnight UTC) compares in time order, any other
//! operand never matches (so `_neq` always does), and `_contains` never matches.
//!
//! The evaluator reads `data` as the read path returns it (translatable values flattened to the
//! compared locale with fallback to the default locale; a value stored before its field became
//! translatable as itself; fields no longer in the schema absent): the compiler reads the stored
//! JSON the same way.

use std::fmt;

use serde_json::{Map, Value};
use time::format_description::well_known::Rfc3339;
use time::macros::format_description;
use time::{Date, OffsetDateTime, UtcOffset};
use vellum_domain::FieldName;

use crate::PolicyError;

/// More conditions than any real filter needs; a request with thousands of keys is refused
/// before any work is done for it.
pub const MAX_CONDITIONS: usize = 32;

/// The longest operand, in characters, a request's filter may compare with (each value of an
/// `_in` list counts alone). No title or slug a reader searches for comes near it, while an
/// unbounded operand let every anonymous request carry 64 KB of filter into the server's list
/// memos and cache keys (security review R3). Only the query form is capped: the JSON form is
/// written by operators (a role's item filter), and a stored role must keep loading.
pub const MAX_OPERAND_CHARS: usize = 1024;

/// The most values an `_in` list may hold.
pub const MAX_IN_VALUES: usize = 100;

/// What a condition reads: a system key of the item or a field of its `data`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FilterField {
    Id,
    CreatedAt,
    UpdatedAt,
    Data(FieldName),
}

impl FilterField {
    /// System keys win over a data field of the same name: `id`, `created_at`, `updated_at`.
    ///
    /// # Errors
    /// When `raw` is neither a system key nor a valid field name.
    pub fn parse(raw: &str) -> Result<Self, String> {
        match raw {
            "id" => Ok(Self::Id),
            "created_at" => Ok(Self::CreatedAt),
            "updated_at" => Ok(Self::UpdatedAt),
            other => FieldName::parse(other)
                .map(Self::Data)
                .map_err(|_| format!("\"{other}\" is not a valid field name")),
        }
    }

    #[must_use]
    pub fn as_str(&self) -> &str {
        match self {
            Self::Id => "id",
            Self::CreatedAt => "created_at",
            Self::UpdatedAt => "updated_at",
            Self::Data(name) => name.as_str(),
        }
    }
}

impl fmt::Display for FilterField {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A filter operator with its operand, already typed.
#[derive(Debug, Clone, PartialEq)]
pub enum FilterOp {
    Contains(String),
    Eq(Value),
    Neq(Value),
    In(Vec<Value>),
    Gt(Value),
    Gte(Value),
    Lt(Value),
    Lte(Value),
    Null,
    NotNull,
}

impl FilterOp {
    /// The operator's name in the dialect (`_eq`, …).
    #[must_use]
    pub fn name(&self) -> &'static str {
        match self {
            Self::Contains(_) => "_contains",
            Self::Eq(_) => "_eq",
            Self::Neq(_) => "_neq",
            Self::In(_) => "_in",
            Self::Gt(_) => "_gt",
            Self::Gte(_) => "_gte",
            Self::Lt(_) => "_lt",
            Self::Lte(_) => "_lte",
            Self::Null => "_null",
            Self::NotNull => "_nnull",
        }
    }

    /// The characters trimmed before text counts as blank for `_null`: exactly these four, the
    /// set both SQL backends trim (`trim(x, char(32, 9, 10, 13))`, `btrim(x, …)`); everything
    /// else, Unicode whitespace included, is content.
    pub const BLANK: [char; 4] = [' ', '\t', '\r', '\n'];

    /// Integers of a smaller magnitude have a text for `_contains` (their decimal digits); no
    /// other number has one. Below 2^53 a JSON integer, a float and PostgreSQL's `numeric` are
    /// the same value with the same digits; above it PostgreSQL spells a float such as `1e16` as
    /// an integer, so the digits would depend on the backend.
    pub const MAX_TEXT_INTEGER: i64 = 1 << 53;

    /// An operand as a number: a JSON number, or text that parses as a finite float once
    /// [`Self::BLANK`] characters are trimmed (`" 42"`, `"42.0"`, `"1e3"`, `"-0"`).
    #[must_use]
    pub fn number_operand(operand: &Value) -> Option<f64> {
        match operand {
            Value::Number(n) => n.as_f64(),
            Value::String(s) => s
                .trim_matches(Self::BLANK)
                .parse::<f64>()
                .ok()
                .filter(|f| f.is_finite()),
            _ => None,
        }
    }

    /// An operand as text: a string itself, a JSON number as it is spelled in JSON, a boolean as
    /// `true` / `false`.
    #[must_use]
    pub fn text_operand(operand: &Value) -> Option<String> {
        match operand {
            Value::String(s) => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            Value::Bool(b) => Some(b.to_string()),
            _ => None,
        }
    }

    /// An operand as a boolean: `true` / `false`, the texts `"true"` / `"1"` / `"false"` /
    /// `"0"` exactly, and the numbers 1 and 0.
    #[must_use]
    pub fn bool_operand(operand: &Value) -> Option<bool> {
        match operand {
            Value::Bool(b) => Some(*b),
            Value::String(s) => match s.as_str() {
                "true" | "1" => Some(true),
                "false" | "0" => Some(false),
                _ => None,
            },
            Value::Number(n) if n.as_f64() == Some(1.0) => Some(true),
            Value::Number(n) if n.as_f64() == Some(0.0) => Some(false),
            _ => None,
        }
    }

    /// An operand as an instant in UTC, for `created_at` / `updated_at`: its text as RFC 3339
    /// (any offset and precision) or as a `YYYY-MM-DD` date (midnight UTC). `None` for anything
    /// else, and for an instant that is not representable in UTC (late on 9999-12-31 with a
    /// negative offset).
    #[must_use]
    pub fn instant_operand(operand: &Value) -> Option<OffsetDateTime> {
        let raw = Self::text_operand(operand)?;
        if let Ok(t) = OffsetDateTime::parse(&raw, &Rfc3339) {
            // Checked: `to_offset` panics past the end of the representable range.
            return t.checked_to_offset(UtcOffset::UTC);
        }
        let date = Date::parse(&raw, format_description!("[year]-[month]-[day]")).ok()?;
        Some(date.midnight().assume_utc())
    }

    /// The booleans whose text (`true` / `false`) contains `needle`, ignoring ASCII case.
    #[must_use]
    pub fn bools_containing(needle: &str) -> Vec<bool> {
        let needle = needle.to_ascii_lowercase();
        [true, false]
            .into_iter()
            .filter(|b| b.to_string().contains(&needle))
            .collect()
    }
}

/// One `field op operand` condition.
#[derive(Debug, Clone, PartialEq)]
pub struct Condition {
    pub field: FilterField,
    pub op: FilterOp,
}

/// A conjunction of conditions. The empty filter matches everything.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Filter {
    conditions: Vec<Condition>,
}

/// What a filter is evaluated against: the system keys (when known; timestamps as the RFC 3339
/// text of the stored instant) and the item's `data` as the read path returns it, translatable
/// values already flattened to the locale the caller compares in.
#[derive(Debug, Clone, Copy)]
pub struct ItemRef<'a> {
    pub id: Option<i64>,
    pub created_at: Option<&'a str>,
    pub updated_at: Option<&'a str>,
    pub data: &'a Map<String, Value>,
}

impl<'a> ItemRef<'a> {
    /// An item known only by its data (a write not yet stored).
    #[must_use]
    pub fn data(data: &'a Map<String, Value>) -> Self {
        Self {
            id: None,
            created_at: None,
            updated_at: None,
            data,
        }
    }

    fn get(&self, field: &FilterField) -> Option<Value> {
        match field {
            FilterField::Id => self.id.map(Value::from),
            FilterField::CreatedAt => self.created_at.map(Value::from),
            FilterField::UpdatedAt => self.updated_at.map(Value::from),
            FilterField::Data(name) => self.data.get(name.as_str()).cloned(),
        }
    }
}

impl Filter {
    #[must_use]
    pub fn new(conditions: Vec<Condition>) -> Self {
        Self { conditions }
    }

    #[must_use]
    pub fn conditions(&self) -> &[Condition] {
        &self.conditions
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.conditions.is_empty()
    }

    /// The fields the filter reads, for checking them against the schema and the role's field
    /// rules (filtering on an unreadable field must be refused, never answered).
    pub fn fields(&self) -> impl Iterator<Item = &FilterField> {
        self.conditions.iter().map(|c| &c.field)
    }

    /// Both filters at once: the request's `filter` AND the role's item filter.
    #[must_use]
    pub fn and(mut self, other: &Self) -> Self {
        self.conditions.extend(other.conditions.iter().cloned());
        self
    }

    /// Parses the JSON form `{"field": {"_op": value}, "field2": "plain"}` (item filters in
    /// manifests and grants). Error paths are written in the query form, prefixed by `root`.
    ///
    /// # Errors
    /// An unknown operator, a malformed operand, a bad field name, or too many conditions.
    pub fn from_json(root: &str, raw: &Value) -> Result<Self, PolicyError> {
        let obj = match raw {
            Value::Null => return Ok(Self::default()),
            Value::Object(obj) => obj,
            _ => {
                return Err(PolicyError::InvalidFilter {
                    param: root.to_owned(),
                    message: "must be an object of field to condition".into(),
                });
            }
        };
        let mut conditions = Vec::new();
        for (field_raw, spec) in obj {
            let at = format!("{root}[{field_raw}]");
            let field =
                FilterField::parse(field_raw).map_err(|message| PolicyError::InvalidFilter {
                    param: at.clone(),
                    message,
                })?;
            match spec {
                Value::Object(ops) if !ops.is_empty() => {
                    for (op, operand) in ops {
                        let param = format!("{at}[{op}]");
                        let op = parse_op(op, json_operand(operand), &param)?;
                        conditions.push(Condition {
                            field: field.clone(),
                            op,
                        });
                    }
                }
                plain => conditions.push(Condition {
                    field,
                    op: parse_op("_contains", json_operand(plain), &at)?,
                }),
            }
            check_count(conditions.len(), root)?;
        }
        Ok(Self { conditions })
    }

    /// Parses the deep-object query form from decoded `(key, value)` pairs, ignoring every key
    /// that does not start with `filter[`.
    ///
    /// # Errors
    /// A malformed key (`filter[a`, `filter[a][_eq][x]`), an unknown operator, a malformed
    /// operand, or more than [`MAX_CONDITIONS`] conditions; the error names the parameter.
    pub fn from_query<'a>(
        pairs: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<Self, PolicyError> {
        let mut conditions = Vec::new();
        for (key, value) in pairs {
            let Some(rest) = key.strip_prefix("filter") else {
                continue;
            };
            if rest.is_empty() || !rest.starts_with('[') {
                if rest.is_empty() {
                    return Err(PolicyError::InvalidFilter {
                        param: key.to_owned(),
                        message: "use filter[field]=value or filter[field][_op]=value".into(),
                    });
                }
                continue; // `filters=…` or `filtered=…` are other parameters
            }
            let parts = bracket_parts(rest).ok_or_else(|| PolicyError::InvalidFilter {
                param: key.to_owned(),
                message: "malformed brackets; use filter[field][_op]=value".into(),
            })?;
            let (field_raw, op) = match parts.as_slice() {
                [field] => (*field, "_contains"),
                [field, op] => (*field, *op),
                _ => {
                    return Err(PolicyError::InvalidFilter {
                        param: key.to_owned(),
                        message: "nests too deeply; use filter[field][_op]=value".into(),
                    });
                }
            };
            let field =
                FilterField::parse(field_raw).map_err(|message| PolicyError::InvalidFilter {
                    param: key.to_owned(),
                    message,
                })?;
            let op = parse_op(op, Operand::Text(value), key)?;
            check_operand_length(&op, key)?;
            conditions.push(Condition { field, op });
            check_count(conditions.len(), "filter")?;
        }
        Ok(Self { conditions })
    }

    /// Evaluates the filter in memory, with the semantics in the module documentation.
    #[must_use]
    pub fn matches(&self, item: &ItemRef<'_>) -> bool {
        self.conditions.iter().all(|c| condition_matches(c, item))
    }
}

fn check_count(n: usize, root: &str) -> Result<(), PolicyError> {
    if n > MAX_CONDITIONS {
        Err(PolicyError::InvalidFilter {
            param: root.to_owned(),
            message: format!("has more than {MAX_CONDITIONS} conditions"),
        })
    } else {
        Ok(())
    }
}

/// Refuses an operand longer than [`MAX_OPERAND_CHARS`] (any value of an `_in` list).
fn check_operand_length(op: &FilterOp, param: &str) -> Result<(), PolicyError> {
    // Bytes bound characters from above: only a long text is counted.
    let long = |s: &str| s.len() > MAX_OPERAND_CHARS && s.chars().count() > MAX_OPERAND_CHARS;
    let long_value = |v: &Value| matches!(v, Value::String(s) if long(s));
    let message = match op {
        FilterOp::Contains(needle) if long(needle) => {
            format!("must not be longer than {MAX_OPERAND_CHARS} characters")
        }
        FilterOp::Eq(v)
        | FilterOp::Neq(v)
        | FilterOp::Gt(v)
        | FilterOp::Gte(v)
        | FilterOp::Lt(v)
        | FilterOp::Lte(v)
            if long_value(v) =>
        {
            format!("must not be longer than {MAX_OPERAND_CHARS} characters")
        }
        FilterOp::In(list) if list.iter().any(long_value) => {
            format!("must not list a value longer than {MAX_OPERAND_CHARS} characters")
        }
        _ => return Ok(()),
    };
    Err(PolicyError::InvalidFilter {
        param: param.to_owned(),
        message,
    })
}

/// `[a][b]` -> `["a", "b"]`; `None` for anything else.
fn bracket_parts(mut rest: &str) -> Option<Vec<&str>> {
    let mut parts = Vec::new();
    while !rest.is_empty() {
        let inner = rest.strip_prefix('[')?;
        let end = inner.find(']')?;
        let (part, tail) = inner.split_at(end);
        if part.is_empty() || part.contains('[') {
            return None;
        }
        parts.push(part);
        rest = tail.strip_prefix(']')?;
    }
    Some(parts)
}

/// An operand before the operator gives it a type: query values are always text, JSON values
/// keep their type.
enum Operand<'a> {
    Text(&'a str),
    Json(&'a Value),
}

fn json_operand(v: &Value) -> Operand<'_> {
    Operand::Json(v)
}

fn scalar(operand: &Operand<'_>, param: &str) -> Result<Value, PolicyError> {
    match operand {
        Operand::Text(s) => Ok(Value::String((*s).to_owned())),
        Operand::Json(v @ (Value::String(_) | Value::Number(_) | Value::Bool(_))) => {
            Ok((*v).clone())
        }
        Operand::Json(_) => Err(PolicyError::InvalidFilter {
            param: param.to_owned(),
            message: "must be a string, number or boolean".into(),
        }),
    }
}

fn flag(operand: &Operand<'_>, param: &str) -> Result<bool, PolicyError> {
    let truthy = match operand {
        Operand::Text(s) => match *s {
            "1" | "true" | "" => Some(true),
            "0" | "false" => Some(false),
            _ => None,
        },
        Operand::Json(Value::Bool(b)) => Some(*b),
        Operand::Json(Value::Number(n)) if n.as_f64() == Some(1.0) => Some(true),
        Operand::Json(Value::Number(n)) if n.as_f64() == Some(0.0) => Some(false),
        Operand::Json(Value::String(s)) => match s.as_str() {
            "1" | "true" => Some(true),
            "0" | "false" => Some(false),
            _ => None,
        },
        Operand::Json(_) => None,
    };
    truthy.ok_or_else(|| PolicyError::InvalidFilter {
        param: param.to_owned(),
        message: "must be 1 or 0".into(),
    })
}

fn parse_op(op: &str, operand: Operand<'_>, param: &str) -> Result<FilterOp, PolicyError> {
    Ok(match op {
        "_contains" => FilterOp::Contains(match scalar(&operand, param)? {
            Value::String(s) => s,
            other => other.to_string(),
        }),
        "_eq" => FilterOp::Eq(scalar(&operand, param)?),
        "_neq" => FilterOp::Neq(scalar(&operand, param)?),
        "_gt" => FilterOp::Gt(scalar(&operand, param)?),
        "_gte" => FilterOp::Gte(scalar(&operand, param)?),
        "_lt" => FilterOp::Lt(scalar(&operand, param)?),
        "_lte" => FilterOp::Lte(scalar(&operand, param)?),
        "_in" => {
            let too_many = || PolicyError::InvalidFilter {
                param: param.to_owned(),
                message: format!("lists more than {MAX_IN_VALUES} values"),
            };
            let list: Vec<Value> = match operand {
                // Counted before anything is copied: 30,000 commas must not become 30,000 values.
                Operand::Text(s) if s.split(',').nth(MAX_IN_VALUES).is_some() => {
                    return Err(too_many());
                }
                Operand::Text(s) => s
                    .split(',')
                    .map(|p| Value::String(p.trim().to_owned()))
                    .collect(),
                Operand::Json(Value::Array(items)) => items
                    .iter()
                    .map(|i| scalar(&Operand::Json(i), param))
                    .collect::<Result<_, _>>()?,
                Operand::Json(Value::String(s)) => s
                    .split(',')
                    .map(|p| Value::String(p.trim().to_owned()))
                    .collect(),
                Operand::Json(other) => vec![scalar(&Operand::Json(other), param)?],
            };
            if list.len() > MAX_IN_VALUES {
                return Err(too_many());
            }
            FilterOp::In(list)
        }
        "_null" => {
            if flag(&operand, param)? {
                FilterOp::Null
            } else {
                FilterOp::NotNull
            }
        }
        "_nnull" => {
            if flag(&operand, param)? {
                FilterOp::NotNull
            } else {
                FilterOp::Null
            }
        }
        other => {
            return Err(PolicyError::InvalidFilter {
                param: param.to_owned(),
                message: format!(
                    "unknown operator \"{other}\"; use _contains, _eq, _neq, _in, _gt, _gte, _lt, _lte, _null or _nnull"
                ),
            });
        }
    })
}

fn condition_matches(c: &Condition, item: &ItemRef<'_>) -> bool {
    match &c.field {
        FilterField::CreatedAt => return instant_matches(item.created_at, &c.op),
        FilterField::UpdatedAt => return instant_matches(item.updated_at, &c.op),
        FilterField::Id | FilterField::Data(_) => {}
    }
    let value = item.get(&c.field);
    let value = value.as_ref().unwrap_or(&Value::Null);
    match &c.op {
        FilterOp::Null => is_blank(value),
        FilterOp::NotNull => !is_blank(value),
        FilterOp::Contains(needle) => any_element(value, |v| text_contains(v, needle)),
        FilterOp::Eq(operand) => any_element(value, |v| equal(v, operand)),
        FilterOp::Neq(operand) => !any_element(value, |v| equal(v, operand)),
        FilterOp::In(list) => any_element(value, |v| list.iter().any(|o| equal(v, o))),
        FilterOp::Gt(o) => compare(value, o).is_some_and(std::cmp::Ordering::is_gt),
        FilterOp::Gte(o) => compare(value, o).is_some_and(std::cmp::Ordering::is_ge),
        FilterOp::Lt(o) => compare(value, o).is_some_and(std::cmp::Ordering::is_lt),
        FilterOp::Lte(o) => compare(value, o).is_some_and(std::cmp::Ordering::is_le),
    }
}

/// `created_at` / `updated_at`: instants compared as instants (the stored text is the RFC 3339
/// the storage layer formats), never as text.
fn instant_matches(stored: Option<&str>, op: &FilterOp) -> bool {
    let at = stored.and_then(|s| OffsetDateTime::parse(s, &Rfc3339).ok());
    let cmp = |o: &Value| Some(at?.cmp(&FilterOp::instant_operand(o)?));
    match op {
        FilterOp::Null => at.is_none(),
        FilterOp::NotNull => at.is_some(),
        FilterOp::Contains(_) => false,
        FilterOp::Eq(o) => cmp(o).is_some_and(std::cmp::Ordering::is_eq),
        FilterOp::Neq(o) => !cmp(o).is_some_and(std::cmp::Ordering::is_eq),
        FilterOp::In(list) => list
            .iter()
            .any(|o| cmp(o).is_some_and(std::cmp::Ordering::is_eq)),
        FilterOp::Gt(o) => cmp(o).is_some_and(std::cmp::Ordering::is_gt),
        FilterOp::Gte(o) => cmp(o).is_some_and(std::cmp::Ordering::is_ge),
        FilterOp::Lt(o) => cmp(o).is_some_and(std::cmp::Ordering::is_lt),
        FilterOp::Lte(o) => cmp(o).is_some_and(std::cmp::Ordering::is_le),
    }
}

fn is_blank(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::String(s) => s.trim_matches(FilterOp::BLANK).is_empty(),
        Value::Array(a) => a.is_empty(),
        _ => false,
    }
}

fn any_element(v: &Value, pred: impl Fn(&Value) -> bool) -> bool {
    match v {
        Value::Array(items) => items.iter().any(pred),
        other => pred(other),
    }
}

/// A stored value's text for `_contains` (see the module documentation).
fn stored_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => n
            .as_i64()
            .filter(|i| i.unsigned_abs() < FilterOp::MAX_TEXT_INTEGER.unsigned_abs())
            .map(|i| i.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

fn text_contains(v: &Value, needle: &str) -> bool {
    stored_text(v).is_some_and(|t| {
        t.to_ascii_lowercase()
            .contains(&needle.to_ascii_lowercase())
    })
}

/// Equality by the stored value's JSON type, so SQL can mirror it (`json_type` / `jsonb_typeof`):
/// numbers numerically, booleans by truth value, text exactly (case-sensitive).
fn equal(v: &Value, operand: &Value) -> bool {
    match v {
        Value::Null | Value::Object(_) | Value::Array(_) => false,
        Value::Bool(b) => FilterOp::bool_operand(operand) == Some(*b),
        Value::Number(n) => n
            .as_f64()
            .zip(FilterOp::number_operand(operand))
            .is_some_and(|(a, b)| a == b),
        Value::String(s) => FilterOp::text_operand(operand).is_some_and(|o| *s == o),
    }
}

/// Ordering by the stored value's JSON type: numbers numerically (a non-numeric operand never
/// matches), text as text (normalized dates are ISO 8601, so they order correctly).
fn compare(v: &Value, operand: &Value) -> Option<std::cmp::Ordering> {
    match v {
        Value::Number(n) => n.as_f64()?.partial_cmp(&FilterOp::number_operand(operand)?),
        Value::String(s) => Some(s.as_str().cmp(FilterOp::text_operand(operand)?.as_str())),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn q(pairs: &[(&str, &str)]) -> Result<Filter, PolicyError> {
        Filter::from_query(pairs.iter().copied())
    }

    fn item(data: &Value) -> ItemRef<'_> {
        ItemRef::data(data.as_object().unwrap())
    }

    #[test]
    fn query_and_json_forms_build_the_same_ast() {
        let from_query = q(&[
            ("filter[status][_eq]", "published"),
            ("filter[title]", "hello"),
            ("filter[views][_gt]", "10"),
            ("page", "2"),
        ])
        .unwrap();
        let from_json = Filter::from_json(
            "filter",
            &json!({"status": {"_eq": "published"}, "title": "hello", "views": {"_gt": "10"}}),
        )
        .unwrap();
        assert_eq!(from_query, from_json);
        assert_eq!(from_query.conditions().len(), 3);
        assert_eq!(
            from_query.conditions()[1].op,
            FilterOp::Contains("hello".into())
        );
    }

    #[test]
    fn every_operator_parses() {
        let cases: &[(&str, &str, FilterOp)] = &[
            ("filter[f][_contains]", "x", FilterOp::Contains("x".into())),
            ("filter[f][_eq]", "x", FilterOp::Eq(json!("x"))),
            ("filter[f][_neq]", "x", FilterOp::Neq(json!("x"))),
            (
                "filter[f][_in]",
                "a, b,c",
                FilterOp::In(vec![json!("a"), json!("b"), json!("c")]),
            ),
            ("filter[f][_gt]", "1", FilterOp::Gt(json!("1"))),
            ("filter[f][_gte]", "1", FilterOp::Gte(json!("1"))),
            ("filter[f][_lt]", "1", FilterOp::Lt(json!("1"))),
            ("filter[f][_lte]", "1", FilterOp::Lte(json!("1"))),
            ("filter[f][_null]", "1", FilterOp::Null),
            ("filter[f][_null]", "0", FilterOp::NotNull),
            ("filter[f][_nnull]", "1", FilterOp::NotNull),
            ("filter[f][_nnull]", "false", FilterOp::Null),
        ];
        for (key, value, op) in cases {
            let f = q(&[(key, value)]).unwrap();
            assert_eq!(&f.conditions()[0].op, op, "{key}={value}");
        }
    }

    #[test]
    fn malformed_filters_name_the_parameter() {
        let cases: &[(&str, &str)] = &[
            ("filter[f][_like]", "x"),
            ("filter[f", "x"),
            ("filter[f][_eq][x]", "1"),
            ("filter[][_eq]", "1"),
            ("filter[a-b][_eq]", "1"),
            ("filter[f][_null]", "maybe"),
            ("filter", "x"),
        ];
        for (key, value) in cases {
            match q(&[(key, value)]) {
                Err(PolicyError::InvalidFilter { param, .. }) => assert_eq!(param, *key),
                other => panic!("{key}: {other:?}"),
            }
        }
        assert!(Filter::from_json("item_filter", &json!([1])).is_err());
        assert!(Filter::from_json("item_filter", &json!({"f": {"_eq": [1]}})).is_err());
        let err = Filter::from_json("item_filter", &json!({"f": {"_foo": 1}})).unwrap_err();
        assert_eq!(
            err.to_string().split(':').next().unwrap(),
            "item_filter[f][_foo]"
        );
    }

    #[test]
    fn too_many_conditions_are_refused() {
        let keys: Vec<String> = (0..=MAX_CONDITIONS)
            .map(|i| format!("filter[f{i}][_eq]"))
            .collect();
        let pairs: Vec<(&str, &str)> = keys.iter().map(|k| (k.as_str(), "1")).collect();
        assert!(Filter::from_query(pairs.iter().copied()).is_err());
        assert!(Filter::from_query(pairs.iter().take(MAX_CONDITIONS).copied()).is_ok());
    }

    /// Every operator with an operand is capped, counting characters (not bytes), each `_in`
    /// value alone; the JSON form (a stored role's item filter) is not.
    #[test]
    fn query_operands_are_capped_in_characters() {
        let at = "é".repeat(MAX_OPERAND_CHARS);
        let over = "x".repeat(MAX_OPERAND_CHARS + 1);
        for op in [
            "_contains",
            "_eq",
            "_neq",
            "_gt",
            "_gte",
            "_lt",
            "_lte",
            "_in",
        ] {
            let key = format!("filter[title][{op}]");
            assert!(q(&[(&key, &at)]).is_ok(), "{op} at the cap");
            match q(&[(&key, &over)]) {
                Err(PolicyError::InvalidFilter { param, message }) => {
                    assert_eq!(param, key);
                    assert!(message.contains("1024 characters"), "{message}");
                }
                other => panic!("{op}: {other:?}"),
            }
        }
        match q(&[("filter[title]", &over)]) {
            Err(PolicyError::InvalidFilter { param, .. }) => assert_eq!(param, "filter[title]"),
            other => panic!("plain form: {other:?}"),
        }
        let in_list = format!("a,{over},b");
        match q(&[("filter[title][_in]", &in_list)]) {
            Err(PolicyError::InvalidFilter { param, message }) => {
                assert_eq!(param, "filter[title][_in]");
                assert!(message.contains("value longer than"), "{message}");
            }
            other => panic!("_in: {other:?}"),
        }
        // 100 values of the longest kind are one list; 101 short ones are refused.
        let hundred = vec!["y".repeat(MAX_OPERAND_CHARS); MAX_IN_VALUES].join(",");
        assert!(q(&[("filter[title][_in]", &hundred)]).is_ok());
        let too_many = vec!["y"; MAX_IN_VALUES + 1].join(",");
        assert!(q(&[("filter[title][_in]", &too_many)]).is_err());
        // `_null` takes a flag, never a long operand.
        assert!(q(&[("filter[title][_null]", &over)]).is_err());
        assert!(Filter::from_json("item_filter", &json!({"title": {"_eq": over}})).is_ok());
    }

    #[test]
    fn other_parameters_are_ignored() {
        let f = q(&[("filters", "x"), ("page", "1"), ("sort", "-id")]).unwrap();
        assert!(f.is_empty());
    }

    /// Semantics table: (query, item data, expected).
    #[test]
    fn evaluation_semantics() {
        let data = json!({
            "title": "Hello World", "views": 42, "price": 9.5, "flag": true, "tags": ["a", "b"],
            "empty": "", "none": null, "when": "2024-05-01T10:00:00Z", "code": "42",
            "nbsp": "\u{a0}", "ideographic": "\u{3000}", "ascii_ws": " \t\r\n ",
            "zero_width": "\u{200b}", "big": 9_007_199_254_740_993_i64, "ratio": 2.5,
            "accent": "Émile", "kelvin": "\u{212a}elvin"
        });
        let rows: &[(&str, &str, bool)] = &[
            ("filter[title]", "world", true),
            ("filter[title][_contains]", "WORLD", true),
            ("filter[title][_contains]", "planet", false),
            ("filter[tags][_contains]", "a", true),
            ("filter[views][_contains]", "4", true),
            ("filter[title][_eq]", "Hello World", true),
            ("filter[title][_eq]", "hello world", false),
            ("filter[views][_eq]", "42", true),
            ("filter[views][_eq]", "42.0", true),
            ("filter[flag][_eq]", "true", true),
            ("filter[flag][_eq]", "1", true),
            ("filter[flag][_eq]", "false", false),
            ("filter[tags][_eq]", "b", true),
            ("filter[title][_neq]", "x", true),
            ("filter[none][_neq]", "x", true),
            ("filter[missing][_neq]", "x", true),
            ("filter[views][_neq]", "42", false),
            ("filter[views][_in]", "1,42,3", true),
            ("filter[views][_in]", "1,2", false),
            ("filter[tags][_in]", "x,b", true),
            ("filter[views][_gt]", "10", true),
            ("filter[views][_gt]", "42", false),
            ("filter[views][_gte]", "42", true),
            ("filter[views][_lt]", "100", true),
            ("filter[views][_lt]", "9", false),
            ("filter[price][_lte]", "9.5", true),
            // Text compares as text even when it looks numeric: "42" < "5".
            ("filter[code][_gt]", "5", false),
            ("filter[code][_eq]", "42", true),
            ("filter[views][_gt]", "abc", false),
            ("filter[when][_gt]", "2024-01-01", true),
            ("filter[when][_lt]", "2024-01-01", false),
            ("filter[none][_gt]", "0", false),
            ("filter[missing][_lt]", "0", false),
            ("filter[none][_null]", "1", true),
            ("filter[missing][_null]", "1", true),
            ("filter[empty][_null]", "1", true),
            ("filter[title][_null]", "1", false),
            ("filter[title][_nnull]", "1", true),
            ("filter[none][_nnull]", "1", false),
            // Blank is space, tab, CR and LF only (A6): other Unicode whitespace is content.
            ("filter[ascii_ws][_null]", "1", true),
            ("filter[nbsp][_null]", "1", false),
            ("filter[nbsp][_nnull]", "1", true),
            ("filter[ideographic][_null]", "1", false),
            ("filter[zero_width][_null]", "1", false),
            // Numbers are 64-bit floats: 2^53 + 1 equals 2^53.
            ("filter[big][_eq]", "9007199254740992", true),
            ("filter[big][_gt]", "9007199254740992", false),
            ("filter[views][_eq]", " 42", true),
            ("filter[views][_eq]", "\u{a0}42", false),
            // Only integers below 2^53 have a text for `_contains`.
            ("filter[big][_contains]", "9", false),
            ("filter[ratio][_contains]", "2", false),
            ("filter[price][_contains]", "9", false),
            // ASCII case only.
            ("filter[accent][_contains]", "ÉMILE", true),
            ("filter[accent][_contains]", "émile", false),
            ("filter[kelvin][_contains]", "kelvin", false),
            ("filter[kelvin][_contains]", "ELVIN", true),
        ];
        for (key, value, expected) in rows {
            let f = q(&[(key, value)]).unwrap();
            assert_eq!(f.matches(&item(&data)), *expected, "{key}={value}");
        }
    }

    #[test]
    fn conditions_are_anded_and_system_keys_read_the_item() {
        let data = json!({"status": "published", "views": 5});
        let f = q(&[
            ("filter[status][_eq]", "published"),
            ("filter[views][_gt]", "10"),
        ])
        .unwrap();
        assert!(!f.matches(&item(&data)));
        let f = q(&[
            ("filter[id][_gt]", "5"),
            ("filter[created_at][_gte]", "2024-01-01"),
        ])
        .unwrap();
        let map = data.as_object().unwrap();
        let with_keys = ItemRef {
            id: Some(7),
            created_at: Some("2024-02-01T00:00:00Z"),
            updated_at: None,
            data: map,
        };
        assert!(f.matches(&with_keys));
        assert!(!f.matches(&ItemRef {
            id: Some(3),
            ..with_keys
        }));
        assert_eq!(f.conditions()[0].field, FilterField::Id);
    }

    /// `created_at` / `updated_at` compare as instants, like the SQL compiler: the same instant
    /// written with another offset is equal, an operand that is no instant never matches, and
    /// a substring of a timestamp means nothing.
    #[test]
    fn timestamps_compare_as_instants() {
        let data = json!({});
        let at = ItemRef {
            id: Some(1),
            created_at: Some("2024-02-01T00:00:00.5Z"),
            updated_at: Some("2024-02-01T00:00:00Z"),
            data: data.as_object().unwrap(),
        };
        let rows: &[(&str, &str, bool)] = &[
            (
                "filter[created_at][_eq]",
                "2024-02-01T01:00:00.5+01:00",
                true,
            ),
            ("filter[created_at][_gt]", "2024-02-01T00:00:00Z", true),
            (
                "filter[created_at][_gt]",
                "2024-02-01T00:00:00.4999999Z",
                true,
            ),
            (
                "filter[created_at][_gte]",
                "2024-02-01T00:00:00.5000001Z",
                false,
            ),
            ("filter[created_at][_lt]", "2024-02-02", true),
            ("filter[created_at][_gte]", "2024-02-01", true),
            ("filter[created_at][_lt]", "A", false),
            ("filter[created_at][_gt]", "A", false),
            ("filter[created_at][_neq]", "A", true),
            ("filter[created_at][_contains]", "2024", false),
            (
                "filter[created_at][_in]",
                "x,2024-02-01T00:00:00.500Z",
                true,
            ),
            ("filter[updated_at][_eq]", "2024-02-01", true),
            ("filter[updated_at][_null]", "1", false),
        ];
        for (key, value, expected) in rows {
            let f = q(&[(key, value)]).unwrap();
            assert_eq!(f.matches(&at), *expected, "{key}={value}");
        }
        let unknown = ItemRef::data(data.as_object().unwrap());
        assert!(
            q(&[("filter[created_at][_null]", "1")])
                .unwrap()
                .matches(&unknown)
        );
    }

    #[test]
    fn operands_are_read_one_way() {
        assert_eq!(FilterOp::number_operand(&json!(" 42\t")), Some(42.0));
        assert_eq!(FilterOp::number_operand(&json!("\u{a0}42")), None);
        assert_eq!(FilterOp::number_operand(&json!("1e400")), None);
        assert_eq!(FilterOp::number_operand(&json!("NaN")), None);
        assert_eq!(FilterOp::number_operand(&json!(true)), None);
        assert_eq!(FilterOp::text_operand(&json!(1.0)).as_deref(), Some("1.0"));
        assert_eq!(FilterOp::bool_operand(&json!("TRUE")), None);
        assert_eq!(FilterOp::bool_operand(&json!(0)), Some(false));
        assert!(FilterOp::instant_operand(&json!("2026-01-02T03:04:05Z")).is_some());
        assert_eq!(
            FilterOp::instant_operand(&json!("2026-01-02")),
            FilterOp::instant_operand(&json!("2026-01-02T00:00:00Z"))
        );
        assert!(FilterOp::instant_operand(&json!("yesterday")).is_none());
        assert!(FilterOp::instant_operand(&json!(2026)).is_none());
        // Past the end of the representable range in UTC: no instant, and no panic.
        assert!(FilterOp::instant_operand(&json!("9999-12-31T23:00:00-02:00")).is_none());
        assert!(FilterOp::instant_operand(&json!("0000-01-01T00:30:00+01:00")).is_some());
        assert_eq!(FilterOp::bools_containing("RU"), vec![true]);
        assert_eq!(FilterOp::bools_containing(""), vec![true, false]);
    }

    #[test]
    fn and_combines_request_and_role_filters() {
        let request = q(&[("filter[views][_gt]", "1")]).unwrap();
        let role =
            Filter::from_json("item_filter", &json!({"status": {"_eq": "published"}})).unwrap();
        let both = request.and(&role);
        assert_eq!(both.conditions().len(), 2);
        assert!(both.matches(&item(&json!({"views": 2, "status": "published"}))));
        assert!(!both.matches(&item(&json!({"views": 2, "status": "draft"}))));
        assert!(Filter::default().matches(&item(&json!({}))));
    }
}
