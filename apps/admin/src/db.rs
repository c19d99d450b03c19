//! The one way the management subcommands (`keys`, `roles`, `settings`, `explain`) open the
//! database: connect, apply pending migrations and seed the system roles, so each of them works on
//! an empty database exactly as on a provisioned one.

use vellum_storage::Database;

use crate::{AdminError, DatabaseArgs};

/// Connects to `--database-url`, migrates the schema and seeds what every project has (the four
/// system roles, the permission catalog). Both steps are idempotent.
pub(crate) async fn open(database: &DatabaseArgs) -> Result<Database, AdminError> {
    let db = vellum_storage::connect(&database.database_url).await?;
    vellum_storage::migrate(&db).await?;
    vellum_storage::seed::seed_system(&db).await?;
    Ok(db)
}

/// Formats a timestamp as RFC 3339 in UTC, the form `--expires-at` takes and the API prints. UTC
/// because the backends differ in what they give back (SQLite keeps the offset as written).
pub(crate) fn rfc3339(at: time::OffsetDateTime) -> serde_json::Value {
    // Checked: an instant near the end of year 9999 with a negative offset has no UTC form
    // (`to_offset` would panic); it is then printed as written.
    at.checked_to_offset(time::UtcOffset::UTC)
        .unwrap_or(at)
        .format(&time::format_description::well_known::Rfc3339)
        .map_or(serde_json::Value::Null, serde_json::Value::String)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_past_year_9999_in_utc_do_not_panic() {
        let late = time::OffsetDateTime::parse(
            "9999-12-31T23:00:00-02:00",
            &time::format_description::well_known::Rfc3339,
        )
        .unwrap();
        assert_eq!(rfc3339(late), "9999-12-31T23:00:00-02:00");
    }
}
