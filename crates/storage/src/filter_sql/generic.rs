//! Filters on everything else (lists, links, fields of unknown shape): the value's JSON type is
//! checked at run time and lists match when any element does, exactly like the evaluator.

use super::operands::*;
use super::*;

/// A predicate over one JSON element (`ty`, `val`: SQLite's `json_each` columns; `ev`: a
/// PostgreSQL `jsonb` element) for `_eq` with `operand`, NULL-free.
pub(super) fn element_eq(sql: &mut Sql, elem: &Elem<'_>, operand: &Json) {
    let mut parts = 0;
    sql.push("(");
    if let Some(n) = number_of(operand) {
        match elem {
            Elem::Lite { ty, val } => {
                let v = lite_as_float(val, n);
                sql.push(&format!("({ty} IN ('integer', 'real') AND {v} = "))
                    .bind(n)
                    .push(")");
            }
            Elem::Pg(ev) => {
                sql.push(&format!(
                    "(jsonb_typeof({ev}) = 'number' AND ({ev} #>> '{{}}')::float8 = "
                ))
                .bind(n)
                .push(")");
            }
        }
        parts += 1;
    }
    if let Some(s) = text_of(operand) {
        if parts > 0 {
            sql.push(" OR ");
        }
        match elem {
            Elem::Lite { ty, val } => {
                sql.push(&format!("({ty} = 'text' AND {val} = "))
                    .bind(s)
                    .push(")");
            }
            Elem::Pg(ev) => {
                sql.push(&format!(
                    "(jsonb_typeof({ev}) = 'string' AND {ev} #>> '{{}}' = "
                ))
                .bind(s)
                .push(")");
            }
        }
        parts += 1;
    }
    if let Some(b) = bool_of(operand) {
        if parts > 0 {
            sql.push(" OR ");
        }
        match elem {
            Elem::Lite { ty, .. } => {
                sql.push(&format!("{ty} = ")).bind(b.to_string());
            }
            Elem::Pg(ev) => {
                sql.push(&format!("{ev} = CAST("))
                    .bind(b.to_string())
                    .push(" AS jsonb)");
            }
        }
        parts += 1;
    }
    if parts == 0 {
        sql.push("FALSE");
    }
    sql.push(")");
}

pub(super) fn element_contains(sql: &mut Sql, elem: &Elem<'_>, needle: &str) {
    // Text: a string, or the digits of an integer below 2^53 (`FilterOp::MAX_TEXT_INTEGER`).
    match elem {
        Elem::Lite { ty, val } => {
            sql.push("(");
            push_contains_text(
                sql,
                &format!(
                    "(CASE WHEN {ty} = 'text' THEN {val} ELSE {} END)",
                    lite_integer_text(ty, val)
                ),
                needle,
            );
        }
        Elem::Pg(ev) => {
            sql.push("(");
            push_contains_text(
                sql,
                &format!(
                    "(CASE WHEN jsonb_typeof({ev}) = 'string' THEN {ev} #>> '{{}}' ELSE {} END)",
                    pg_integer_text(ev)
                ),
                needle,
            );
        }
    }
    let bools = bools_containing(needle);
    if !bools.is_empty() {
        let names: Vec<String> = bools.iter().map(ToString::to_string).collect();
        match elem {
            Elem::Lite { ty, .. } => {
                sql.push(&format!(" OR {ty} IN "));
            }
            Elem::Pg(ev) => {
                sql.push(&format!(
                    " OR (jsonb_typeof({ev}) = 'boolean' AND {ev} #>> '{{}}' IN "
                ));
            }
        }
        sql.bind_list(names);
        if matches!(elem, Elem::Pg(_)) {
            sql.push(")");
        }
    }
    sql.push(")");
}

pub(super) enum Elem<'a> {
    Lite { ty: &'a str, val: &'a str },
    Pg(&'a str),
}

/// Whether an element of the value satisfies `pred`: an element of a list, else the value
/// itself (an object is one element, never its members; a missing value is none).
pub(super) fn push_any_element(
    sql: &mut Sql,
    data: &str,
    at: &Access,
    pred: impl Fn(&mut Sql, &Elem<'_>),
) {
    if sql.is_postgres() {
        let j = &at.pg_json;
        sql.push(&format!(
            "EXISTS (SELECT 1 FROM jsonb_array_elements(CASE WHEN jsonb_typeof({j}) = 'array' THEN {j} ELSE jsonb_build_array({j}) END) AS e(v) WHERE "
        ));
        pred(sql, &Elem::Pg("e.v"));
        sql.push(")");
    } else {
        // `json_each` walks a list's elements but also an object's members: only lists are
        // walked, anything else is tested as it is.
        let p = &at.lite_path;
        sql.push(&format!(
            "(CASE WHEN json_type({data}, {p}) = 'array' THEN EXISTS (SELECT 1 FROM json_each({data}, {p}) AS e WHERE "
        ));
        pred(
            sql,
            &Elem::Lite {
                ty: "e.type",
                val: "e.value",
            },
        );
        sql.push(") ELSE COALESCE(");
        let ty = format!("json_type({data}, {p})");
        let val = format!("json_extract({data}, {p})");
        pred(sql, &Elem::Lite { ty: &ty, val: &val });
        sql.push(", FALSE) END)");
    }
}

pub(super) fn push_generic(sql: &mut Sql, data: &str, at: &Access, op: &FilterOp) {
    let pg = sql.is_postgres();
    match op {
        FilterOp::Null | FilterOp::NotNull => {
            if matches!(op, FilterOp::NotNull) {
                sql.push("NOT ");
            }
            if pg {
                let j = &at.pg_json;
                let blank = blank_chars(true);
                sql.push(&format!(
                    "(CASE jsonb_typeof({j}) WHEN 'string' THEN btrim({j} #>> '{{}}', {blank}) = '' WHEN 'array' THEN jsonb_array_length({j}) = 0 WHEN 'null' THEN TRUE WHEN 'number' THEN FALSE WHEN 'boolean' THEN FALSE WHEN 'object' THEN FALSE ELSE TRUE END)"
                ));
            } else {
                let p = &at.lite_path;
                let blank = blank_chars(false);
                sql.push(&format!(
                    "(CASE WHEN json_type({data}, {p}) IS NULL THEN TRUE WHEN json_type({data}, {p}) = 'text' THEN trim(json_extract({data}, {p}), {blank}) = '' WHEN json_type({data}, {p}) = 'array' THEN json_array_length({data}, {p}) = 0 WHEN json_type({data}, {p}) = 'null' THEN TRUE ELSE FALSE END)"
                ));
            }
        }
        FilterOp::Eq(o) => push_any_element(sql, data, at, |sql, e| element_eq(sql, e, o)),
        FilterOp::Neq(o) => {
            sql.push("NOT ");
            push_any_element(sql, data, at, |sql, e| element_eq(sql, e, o));
        }
        FilterOp::In(list) => push_any_element(sql, data, at, |sql, e| {
            sql.push("(FALSE");
            for o in list {
                sql.push(" OR ");
                element_eq(sql, e, o);
            }
            sql.push(")");
        }),
        FilterOp::Contains(needle) => {
            push_any_element(sql, data, at, |sql, e| element_contains(sql, e, needle));
        }
        _ => {
            let Some((cmp, o)) = cmp_sql(op) else {
                return;
            };
            // Ordering never looks inside lists: a number numerically, text as text.
            let (n, s) = (number_of(o), text_of(o));
            sql.push("(FALSE");
            if pg {
                let j = &at.pg_json;
                if let Some(n) = n {
                    sql.push(&format!(
                        " OR (jsonb_typeof({j}) = 'number' AND ({j} #>> '{{}}')::float8 {cmp} "
                    ))
                    .bind(n)
                    .push(")");
                }
                if let Some(s) = s {
                    sql.push(&format!(
                        " OR (jsonb_typeof({j}) = 'string' AND ({j} #>> '{{}}') COLLATE \"C\" {cmp} "
                    ))
                    .bind(s)
                    .push(")");
                }
            } else {
                let p = &at.lite_path;
                if let Some(n) = n {
                    let v = lite_as_float(&format!("json_extract({data}, {p})"), n);
                    sql.push(&format!(
                        " OR (json_type({data}, {p}) IN ('integer', 'real') AND {v} {cmp} "
                    ))
                    .bind(n)
                    .push(")");
                }
                if let Some(s) = s {
                    sql.push(&format!(
                        " OR (json_type({data}, {p}) = 'text' AND json_extract({data}, {p}) {cmp} "
                    ))
                    .bind(s)
                    .push(")");
                }
            }
            sql.push(")");
        }
    }
}
