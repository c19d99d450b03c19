//! How values read on a page.

use serde_json::Value;
use time::OffsetDateTime;
use time::macros::format_description;

/// A moment as `2026-11-26 22:10 UTC`: minutes are precise enough for people.
#[must_use]
pub fn when(at: OffsetDateTime) -> String {
    let utc = at.to_offset(time::UtcOffset::UTC);
    utc.format(format_description!(
        "[year]-[month]-[day] [hour]:[minute] UTC"
    ))
    .unwrap_or_else(|_| utc.to_string())
}

/// An RFC 3339 moment of a resource (`2026-11-26T22:10:59.123Z` as `2026-11-26 22:10 UTC`); null is empty.
#[must_use]
pub fn moment(at: &Value) -> String {
    let raw = at.as_str().unwrap_or_default();
    match raw.get(..16) {
        Some(minute) if raw.ends_with('Z') => format!("{} UTC", minute.replace('T', " ")),
        _ => raw.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use time::macros::datetime;

    use super::*;

    #[test]
    fn resource_moments_read_to_the_minute() {
        use serde_json::json;
        assert_eq!(
            moment(&json!("2026-11-26T22:10:59.123Z")),
            "2026-11-26 22:10 UTC"
        );
        assert_eq!(moment(&json!("yesterday")), "yesterday");
        assert_eq!(moment(&json!(null)), "");
    }

    #[test]
    fn moments_read_in_utc_to_the_minute() {
        assert_eq!(
            when(datetime!(2026-11-26 23:10:59 +01:00)),
            "2026-11-26 22:10 UTC"
        );
    }
}
