//! Filters on scalar fields compiled by shape: numbers (and item / file ids), text and booleans
//! compare the extracted value directly, which is what lets them use the scalar index.

use super::operands::*;
use super::*;

pub(super) fn push_number(sql: &mut Sql, data: &str, at: &Access, op: &FilterOp) {
    let pg = sql.is_postgres();
    // The numeric value, or NULL when absent or not a number. On SQLite it is the indexed
    // expression (see `scalar_index_sql`); `lite_as_float` keeps it so whenever it can.
    let value = if pg {
        format!(
            "(CASE WHEN jsonb_typeof({j}) = 'number' THEN ({j} #>> '{{}}')::float8 END)",
            j = at.pg_json
        )
    } else {
        format!("json_extract({data}, {})", at.lite_path)
    };
    let compared = |n: f64| {
        if pg {
            value.clone()
        } else {
            lite_as_float(&value, n)
        }
    };
    match op {
        FilterOp::Null => {
            sql.push(&value).push(" IS NULL");
        }
        FilterOp::NotNull => {
            sql.push(&value).push(" IS NOT NULL");
        }
        FilterOp::Eq(o) => match number_of(o) {
            Some(n) => {
                sql.push(&compared(n)).push(" = ").bind(n);
            }
            None => {
                sql.push("FALSE");
            }
        },
        FilterOp::Neq(o) => match number_of(o) {
            Some(n) => {
                let v = compared(n);
                sql.push(&format!("{v} IS NULL OR {v} <> ")).bind(n);
            }
            None => {
                sql.push("TRUE");
            }
        },
        FilterOp::In(list) => {
            let numbers: Vec<f64> = list.iter().filter_map(number_of).collect();
            // On SQLite, operands below 2^53 keep the indexed expression; larger ones compare
            // with the value cast to REAL.
            let (plain, cast): (Vec<f64>, Vec<f64>) = numbers
                .into_iter()
                .partition(|n| pg || compared(*n) == value);
            if plain.is_empty() && cast.is_empty() {
                sql.push("FALSE");
            }
            if !plain.is_empty() {
                sql.push(&value).push(" IN ");
                sql.bind_list(plain.iter().copied());
            }
            if let Some(first) = cast.first() {
                if !plain.is_empty() {
                    sql.push(" OR ");
                }
                sql.push(&compared(*first)).push(" IN ");
                sql.bind_list(cast.iter().copied());
            }
        }
        FilterOp::Contains(needle) => {
            let text = if pg {
                pg_integer_text(&at.pg_json)
            } else {
                lite_integer_text(&format!("typeof({value})"), &value)
            };
            push_contains_text(sql, &text, needle);
        }
        _ => {
            if let Some((cmp, o)) = cmp_sql(op) {
                match number_of(o) {
                    Some(n) => {
                        sql.push(&compared(n)).push(" ").push(cmp).push(" ").bind(n);
                    }
                    None => {
                        sql.push("FALSE");
                    }
                }
            }
        }
    }
}

pub(super) fn push_text(sql: &mut Sql, data: &str, at: &Access, op: &FilterOp) {
    let pg = sql.is_postgres();
    let value = if pg {
        at.pg_text.clone()
    } else {
        format!("json_extract({data}, {})", at.lite_path)
    };
    match op {
        FilterOp::Null | FilterOp::NotNull => {
            // Blank: trimmed of exactly `FilterOp::BLANK`, the evaluator's set.
            let blank = if pg {
                format!(
                    "({value} IS NULL OR btrim({value}, {}) = '')",
                    blank_chars(true)
                )
            } else {
                format!(
                    "({value} IS NULL OR trim({value}, {}) = '')",
                    blank_chars(false)
                )
            };
            if matches!(op, FilterOp::NotNull) {
                sql.push("NOT ");
            }
            sql.push(&blank);
        }
        FilterOp::Eq(o) => match text_of(o) {
            Some(s) => {
                sql.push(&value).push(" = ").bind(s);
            }
            None => {
                sql.push("FALSE");
            }
        },
        FilterOp::Neq(o) => match text_of(o) {
            Some(s) => {
                sql.push(&format!("{value} IS NULL OR {value} <> ")).bind(s);
            }
            None => {
                sql.push("TRUE");
            }
        },
        FilterOp::In(list) => {
            let texts: Vec<String> = list.iter().filter_map(text_of).collect();
            if texts.is_empty() {
                sql.push("FALSE");
            } else {
                sql.push(&value).push(" IN ");
                sql.bind_list(texts);
            }
        }
        FilterOp::Contains(needle) => push_contains_text(sql, &value, needle),
        _ => {
            if let Some((cmp, o)) = cmp_sql(op) {
                match text_of(o) {
                    Some(s) => {
                        // Byte order, like Rust's `str` ordering (and ISO dates order right).
                        let collate = if pg { " COLLATE \"C\"" } else { "" };
                        sql.push(&value)
                            .push(collate)
                            .push(" ")
                            .push(cmp)
                            .push(" ")
                            .bind(s);
                    }
                    None => {
                        sql.push("FALSE");
                    }
                }
            }
        }
    }
}

pub(super) fn push_boolean(sql: &mut Sql, data: &str, at: &Access, op: &FilterOp) {
    // The JSON type name of the value: 'true' / 'false' on SQLite; on PostgreSQL the value's
    // text ('true' / 'false') when it is a boolean.
    let tag = if sql.is_postgres() {
        format!(
            "(CASE WHEN jsonb_typeof({j}) = 'boolean' THEN {j} #>> '{{}}' END)",
            j = at.pg_json
        )
    } else {
        format!("json_type({data}, {})", at.lite_path)
    };
    let one_of = |sql: &mut Sql, values: &[bool], negate: bool| {
        if values.is_empty() {
            sql.push(if negate { "TRUE" } else { "FALSE" });
            return;
        }
        let names: Vec<String> = values.iter().map(ToString::to_string).collect();
        if negate {
            sql.push(&format!("COALESCE({tag}, 'null') NOT IN "));
        } else {
            sql.push(&tag).push(" IN ");
        }
        sql.bind_list(names);
    };
    match op {
        FilterOp::Null => {
            sql.push(&format!("COALESCE({tag}, 'null') NOT IN ('true', 'false')"));
        }
        FilterOp::NotNull => {
            sql.push(&tag).push(" IN ('true', 'false')");
        }
        FilterOp::Eq(o) => one_of(sql, &bool_of(o).into_iter().collect::<Vec<_>>(), false),
        FilterOp::Neq(o) => one_of(sql, &bool_of(o).into_iter().collect::<Vec<_>>(), true),
        FilterOp::In(list) => {
            let mut values: Vec<bool> = list.iter().filter_map(bool_of).collect();
            values.dedup();
            one_of(sql, &values, false);
        }
        FilterOp::Contains(needle) => one_of(sql, &bools_containing(needle), false),
        // Booleans have no order in the evaluator.
        _ => {
            sql.push("FALSE");
        }
    }
}
