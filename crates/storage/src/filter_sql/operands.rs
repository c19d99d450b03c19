//! Operands, typed as the evaluator types them. One definition: the policy crate's readers, so
//! an operand cannot mean one thing here and another in `Filter::matches`; plus the few SQL
//! fragments every operator family shares (blank characters, integer text, case folding).

use super::*;

pub(super) fn number_of(v: &Json) -> Option<f64> {
    FilterOp::number_operand(v)
}

pub(super) fn text_of(v: &Json) -> Option<String> {
    FilterOp::text_operand(v)
}

pub(super) fn bool_of(v: &Json) -> Option<bool> {
    FilterOp::bool_operand(v)
}

pub(super) fn bools_containing(needle: &str) -> Vec<bool> {
    FilterOp::bools_containing(needle)
}

/// The characters of [`FilterOp::BLANK`] as an SQL string expression, for `trim` / `btrim`.
pub(super) fn blank_chars(pg: bool) -> String {
    let codes: Vec<String> = FilterOp::BLANK
        .iter()
        .map(|c| u32::from(*c).to_string())
        .collect();
    if pg {
        let chrs: Vec<String> = codes.iter().map(|c| format!("chr({c})")).collect();
        format!("({})", chrs.join(" || "))
    } else {
        format!("char({})", codes.join(", "))
    }
}

/// 2^53 as an SQL literal: below it, an integer and its float are the same number.
pub(super) const TWO_POW_53: &str = "9007199254740992";

/// SQLite only: `expr` ready to be compared with the float `operand` as floats. SQLite compares
/// an INTEGER with a REAL exactly, the evaluator (and PostgreSQL's `float8`) as floats; the two
/// differ only when the operand is at least 2^53 in magnitude (below, an integer is either
/// exact as a float or farther from zero than the operand), so only then is the stored value
/// cast, and the indexed expression otherwise stays as it is (an index seek, not a scan).
pub(super) fn lite_as_float(expr: &str, operand: f64) -> String {
    if operand.abs() < 9_007_199_254_740_992.0 {
        expr.to_owned()
    } else {
        format!("CAST({expr} AS REAL)")
    }
}

/// SQLite: the text `_contains` reads from a JSON number (`ty` its `json_type`, `val` its
/// value): the digits of an integer below 2^53 in magnitude, else NULL (see
/// [`FilterOp::MAX_TEXT_INTEGER`]). `val` is compared before it is cast, so a REAL never gets a
/// text (its `%!.15g` spelling is neither JSON's nor PostgreSQL's).
pub(super) fn lite_integer_text(ty: &str, val: &str) -> String {
    format!(
        "(CASE WHEN {ty} = 'integer' AND {val} > -{TWO_POW_53} AND {val} < {TWO_POW_53} THEN CAST({val} AS TEXT) END)"
    )
}

/// PostgreSQL: the same for a `jsonb` value `j`. `numeric` prints no exponent, so an integer
/// is a text without `.`; a float of 1e16 or more is spelled as an integer there but is beyond
/// 2^53. One WHEN per test: they run in order, so nothing but a number is ever cast.
pub(super) fn pg_integer_text(j: &str) -> String {
    format!(
        "(CASE WHEN jsonb_typeof({j}) IS DISTINCT FROM 'number' THEN NULL WHEN strpos({j} #>> '{{}}', '.') > 0 THEN NULL WHEN abs(({j} #>> '{{}}')::float8) < {TWO_POW_53} THEN {j} #>> '{{}}' END)"
    )
}

pub(super) fn cmp_sql(op: &FilterOp) -> Option<(&'static str, &Json)> {
    match op {
        FilterOp::Gt(o) => Some((">", o)),
        FilterOp::Gte(o) => Some((">=", o)),
        FilterOp::Lt(o) => Some(("<", o)),
        FilterOp::Lte(o) => Some(("<=", o)),
        _ => None,
    }
}

/// ASCII-only lower-casing on PostgreSQL (its `lower()` follows the locale, the evaluator folds
/// ASCII only; SQLite's `lower()` is ASCII-only already).
pub(super) fn pg_lower(expr: &str) -> String {
    format!("translate({expr}, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz')")
}

pub(super) fn push_contains_text(sql: &mut Sql, text_expr: &str, needle: &str) {
    let needle = needle.to_ascii_lowercase();
    if sql.is_postgres() {
        sql.push("strpos(")
            .push(&pg_lower(text_expr))
            .push(", ")
            .bind(needle)
            .push(") > 0");
    } else {
        sql.push("instr(lower(")
            .push(text_expr)
            .push("), ")
            .bind(needle)
            .push(") > 0");
    }
}
