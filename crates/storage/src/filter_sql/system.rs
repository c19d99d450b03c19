//! Filters on the system keys: `id` compares as a number, `created_at` / `updated_at` as
//! instants, on the columns rather than on `data`.

use super::operands::*;
use super::*;

/// `id` compares as a number (like a `data` number); `created_at` / `updated_at` as instants
/// (see [`push_instant`]).
pub(super) fn push_system(
    sql: &mut Sql,
    column: &str,
    op: &FilterOp,
    numeric: bool,
) -> Result<(), StorageError> {
    if !numeric {
        push_instant(sql, column, op);
        return Ok(());
    }
    sql.push("(");
    match op {
        FilterOp::Null => {
            sql.push(column).push(" IS NULL");
        }
        FilterOp::NotNull => {
            sql.push(column).push(" IS NOT NULL");
        }
        FilterOp::Eq(o) => match number_of(o) {
            Some(v) => {
                sql.push(column).push(" = ").bind(v);
            }
            None => {
                sql.push("FALSE");
            }
        },
        FilterOp::Neq(o) => match number_of(o) {
            Some(v) => {
                sql.push(&format!("{column} IS NULL OR {column} <> "))
                    .bind(v);
            }
            None => {
                sql.push("TRUE");
            }
        },
        FilterOp::In(list) => {
            let values: Vec<f64> = list.iter().filter_map(number_of).collect();
            if values.is_empty() {
                sql.push("FALSE");
            } else {
                sql.push(column).push(" IN ");
                sql.bind_list(values);
            }
        }
        FilterOp::Contains(needle) => {
            push_contains_text(sql, &format!("CAST({column} AS TEXT)"), needle);
        }
        _ => {
            if let Some((cmp, o)) = cmp_sql(op) {
                match number_of(o) {
                    Some(v) => {
                        sql.push(column).push(" ").push(cmp).push(" ").bind(v);
                    }
                    None => {
                        sql.push("FALSE");
                    }
                }
            }
        }
    }
    sql.push(")");
    Ok(())
}

/// `created_at` / `updated_at` against an operand read by [`FilterOp::instant_operand`]; an
/// operand that is no instant never matches (`_neq`: always), `_contains` never matches.
///
/// Stored instants have whole microseconds; an operand may have more digits. It is compared
/// exactly, as the evaluator compares it: the operand is cut to its microsecond `floor` and,
/// when that dropped something, `=` never holds and `> x` / `>= x` become `> floor`, `< x` /
/// `<= x` become `<= floor`.
pub(super) fn push_instant(sql: &mut Sql, column: &str, op: &FilterOp) {
    let key = instant_key(sql.backend(), column);
    sql.push("(");
    match op {
        FilterOp::Null => {
            sql.push(column).push(" IS NULL");
        }
        FilterOp::NotNull => {
            sql.push(column).push(" IS NOT NULL");
        }
        // A substring of a timestamp has no meaning that holds on both backends.
        FilterOp::Contains(_) => {
            sql.push("FALSE");
        }
        FilterOp::Eq(o) => match whole_micros(o) {
            Some(at) => {
                sql.push(&key).push(" = ");
                bind_instant(sql, at);
            }
            None => {
                sql.push("FALSE");
            }
        },
        FilterOp::Neq(o) => match whole_micros(o) {
            Some(at) => {
                sql.push(&format!("{column} IS NULL OR {key} <> "));
                bind_instant(sql, at);
            }
            None => {
                sql.push("TRUE");
            }
        },
        FilterOp::In(list) => {
            let values: Vec<time::OffsetDateTime> = list.iter().filter_map(whole_micros).collect();
            if values.is_empty() {
                sql.push("FALSE");
            } else {
                sql.push(&key).push(" IN (");
                for (i, at) in values.into_iter().enumerate() {
                    if i > 0 {
                        sql.push(", ");
                    }
                    bind_instant(sql, at);
                }
                sql.push(")");
            }
        }
        _ => match cmp_sql(op).and_then(|(cmp, o)| Some((cmp, instant_floor(o)?))) {
            Some((cmp, (floor, exact))) => {
                let cmp = match (cmp, exact) {
                    (_, true) => cmp,
                    (">" | ">=", false) => ">",
                    _ => "<=",
                };
                sql.push(&key).push(" ").push(cmp).push(" ");
                bind_instant(sql, floor);
            }
            None => {
                sql.push("FALSE");
            }
        },
    }
    sql.push(")");
}

/// The operand's instant cut to whole microseconds, and whether that kept all of it.
pub(super) fn instant_floor(o: &Json) -> Option<(time::OffsetDateTime, bool)> {
    let at = FilterOp::instant_operand(o)?;
    let floor = at.replace_nanosecond(at.nanosecond() / 1000 * 1000).ok()?;
    Some((floor, floor == at))
}

/// The operand's instant when it has whole microseconds (only such an instant can be equal to
/// a stored one).
pub(super) fn whole_micros(o: &Json) -> Option<time::OffsetDateTime> {
    instant_floor(o).and_then(|(at, exact)| exact.then_some(at))
}

/// The comparable form of a timestamp column. PostgreSQL: the `timestamptz` itself. SQLite
/// stores the RFC 3339 text in UTC that sqlx writes (`2026-01-02T03:04:05.5Z`: fraction digits
/// trimmed, none when zero), which does not order as text (`…05.5Z` sorts before `…05Z` and
/// `…05.51Z`); without the `.` and the `Z` it does: the first 19 characters are fixed-width and
/// the fraction digits follow, trailing zeros trimmed, so byte order is time order.
pub(super) fn instant_key(backend: DbBackend, column: &str) -> String {
    if backend == DbBackend::Postgres {
        column.to_owned()
    } else {
        format!("rtrim(replace({column}, '.', ''), 'Z')")
    }
}

/// Binds an instant for comparison with [`instant_key`]: PostgreSQL the instant, SQLite its
/// key, computed from the RFC 3339 text the column holds. An instant before year 0 has no
/// RFC 3339 form; its key is the empty text, before every stored one.
pub(super) fn bind_instant(sql: &mut Sql, at: time::OffsetDateTime) {
    use time::format_description::well_known::Rfc3339;
    if sql.is_postgres() {
        sql.bind(at);
    } else {
        let key = at
            .format(&Rfc3339)
            .map(|t| t.replace('.', "").trim_end_matches('Z').to_owned())
            .unwrap_or_default();
        sql.bind(key);
    }
}
