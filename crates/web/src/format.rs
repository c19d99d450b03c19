//! How values read on a page.

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

#[cfg(test)]
mod tests {
    use time::macros::datetime;

    use super::*;

    #[test]
    fn moments_read_in_utc_to_the_minute() {
        assert_eq!(
            when(datetime!(2026-11-26 23:10:59 +01:00)),
            "2026-11-26 22:10 UTC"
        );
    }
}
