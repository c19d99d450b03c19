use serde_json::Value;
use time::format_description::well_known::Rfc3339;
use time::macros::format_description;
use time::{Date, OffsetDateTime, PrimitiveDateTime, Time, UtcOffset};

use crate::DateMode;

/// Dates per `date_mode`, stored in one canonical ISO 8601 form so that string comparison in
/// filters and sorting orders them correctly:
/// - `date`: `YYYY-MM-DD`;
/// - `time`: `HH:MM:SS` (`HH:MM` accepted);
/// - `datetime`: RFC 3339 in UTC, `YYYY-MM-DDTHH:MM:SSZ` (fractions kept). An offset is converted
///   to UTC; a value without one (`2024-05-01T10:00`, `2024-05-01 10:00:00`, `2024-05-01`) is
///   taken as UTC.
pub(super) fn normalize(value: &Value, mode: DateMode) -> Result<Value, String> {
    let raw = match value {
        Value::Null => return Ok(Value::Null),
        Value::String(s) if s.trim().is_empty() => return Ok(Value::Null),
        Value::String(s) => s.trim(),
        _ => return Err(expected(mode).into()),
    };
    // Signed years ("+2024", "-0001") are expanded ISO 8601 forms no client means to send.
    if raw.starts_with(['+', '-']) {
        return Err(expected(mode).into());
    }
    let out = match mode {
        DateMode::Date => parse_date(raw).map(format_date),
        DateMode::Time => parse_time(raw).map(format_time),
        DateMode::Datetime => parse_datetime(raw).and_then(|dt| dt.format(&Rfc3339).ok()),
    };
    out.map(Value::String).ok_or_else(|| expected(mode).into())
}

fn expected(mode: DateMode) -> &'static str {
    match mode {
        DateMode::Date => "must be a valid date (YYYY-MM-DD).",
        DateMode::Time => "must be a valid time (HH:MM or HH:MM:SS).",
        DateMode::Datetime => "must be a valid ISO 8601 date-time.",
    }
}

/// Years outside 0000..=9999 have no fixed-width ISO form, so they would neither round-trip nor
/// sort as text; they are rejected.
fn in_range(year: i32) -> bool {
    (0..=9999).contains(&year)
}

fn parse_date(raw: &str) -> Option<Date> {
    Date::parse(raw, format_description!("[year]-[month]-[day]"))
        .ok()
        .filter(|d| in_range(d.year()))
}

fn format_date(d: Date) -> String {
    format!("{:04}-{:02}-{:02}", d.year(), u8::from(d.month()), d.day())
}

fn parse_time(raw: &str) -> Option<Time> {
    Time::parse(raw, format_description!("[hour]:[minute]:[second]"))
        .or_else(|_| Time::parse(raw, format_description!("[hour]:[minute]")))
        .ok()
}

fn format_time(t: Time) -> String {
    format!("{:02}:{:02}:{:02}", t.hour(), t.minute(), t.second())
}

fn parse_datetime(raw: &str) -> Option<OffsetDateTime> {
    if let Ok(dt) = OffsetDateTime::parse(raw, &Rfc3339) {
        // Checked: an offset can push the UTC instant past year 9999.
        return dt
            .checked_to_offset(UtcOffset::UTC)
            .filter(|d| in_range(d.year()));
    }
    let naive = [
        format_description!("[year]-[month]-[day]T[hour]:[minute]:[second]"),
        format_description!("[year]-[month]-[day] [hour]:[minute]:[second]"),
        format_description!("[year]-[month]-[day]T[hour]:[minute]"),
        format_description!("[year]-[month]-[day] [hour]:[minute]"),
    ];
    naive
        .iter()
        .find_map(|f| PrimitiveDateTime::parse(raw, f).ok())
        .or_else(|| parse_date(raw).map(time::Date::midnight))
        .map(PrimitiveDateTime::assume_utc)
        .filter(|d| in_range(d.year()))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn date_mode() {
        assert_eq!(
            normalize(&json!("2024-02-29"), DateMode::Date),
            Ok(json!("2024-02-29"))
        );
        assert_eq!(normalize(&json!(""), DateMode::Date), Ok(json!(null)));
        for bad in [
            "2023-02-29",
            "2024-13-01",
            "24-01-01",
            "2024/01/01",
            "2024-01-01T00:00:00Z",
        ] {
            assert!(normalize(&json!(bad), DateMode::Date).is_err(), "{bad}");
        }
        assert!(normalize(&json!(20240101), DateMode::Date).is_err());
    }

    #[test]
    fn time_mode() {
        assert_eq!(
            normalize(&json!("09:30"), DateMode::Time),
            Ok(json!("09:30:00"))
        );
        assert_eq!(
            normalize(&json!("23:59:59"), DateMode::Time),
            Ok(json!("23:59:59"))
        );
        for bad in ["24:00", "9:30", "09:60", "noon"] {
            assert!(normalize(&json!(bad), DateMode::Time).is_err(), "{bad}");
        }
    }

    #[test]
    fn datetime_mode_is_utc_rfc3339() {
        let cases = [
            ("2024-05-01T10:00:00Z", "2024-05-01T10:00:00Z"),
            ("2024-05-01T12:00:00+02:00", "2024-05-01T10:00:00Z"),
            ("2024-05-01T10:00:00.250Z", "2024-05-01T10:00:00.25Z"),
            ("2024-05-01T10:00", "2024-05-01T10:00:00Z"),
            ("2024-05-01 10:00:00", "2024-05-01T10:00:00Z"),
            ("2024-05-01", "2024-05-01T00:00:00Z"),
        ];
        for (input, out) in cases {
            assert_eq!(
                normalize(&json!(input), DateMode::Datetime),
                Ok(json!(out)),
                "{input}"
            );
            // Idempotent.
            assert_eq!(normalize(&json!(out), DateMode::Datetime), Ok(json!(out)));
        }
        for bad in [
            "2024-05-01T25:00:00Z",
            "yesterday",
            "2024-05-01T10:00:00+25:00",
        ] {
            assert!(normalize(&json!(bad), DateMode::Datetime).is_err(), "{bad}");
        }
    }
}
