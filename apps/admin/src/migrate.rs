//! `vellum-admin migrate`: bring the database schema up to date.

use std::io::Write;

use crate::{AdminError, DatabaseArgs};

/// Arguments of `migrate` (none yet besides the global `--database-url`).
#[derive(Debug, clap::Args)]
pub(crate) struct Args {}

/// Applies every pending migration, writes `{"applied": [names…]}` to `out` and a summary for
/// people to `log`.
pub(crate) async fn run(
    database: &DatabaseArgs,
    _args: &Args,
    out: &mut impl Write,
    log: &mut impl Write,
) -> Result<(), AdminError> {
    let db = vellum_storage::connect(&database.database_url).await?;
    let pending = vellum_storage::pending_migrations(&db)
        .await
        .map_err(AdminError::Migrate)?;
    vellum_storage::migrate(&db)
        .await
        .map_err(AdminError::Migrate)?;
    // A closed stderr is not worth failing a finished migration over.
    let _ = writeln!(log, "vellum-admin: applied {} migration(s)", pending.len());
    let report = serde_json::json!({ "applied": pending });
    writeln!(out, "{report}").map_err(AdminError::Output)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn migrating_reports_what_it_applied_and_a_second_run_applies_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let database = DatabaseArgs {
            database_url: format!("sqlite://{}?mode=rwc", dir.path().join("v.db").display()),
        };
        let mut out = Vec::new();
        run(&database, &Args {}, &mut out, &mut Vec::new())
            .await
            .unwrap();
        let report: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(
            report,
            serde_json::json!({ "applied": [
                "m20261123_000001_initial_schema",
                "m20261123_000002_item_unique_values",
                "m20261125_000003_file_transform_last_used",
                "m20261126_000004_admin_accounts",
                "m20261126_000005_collection_admin",
                "m20261127_000006_file_manager",
                "m20261127_000007_item_files",
                "m20261128_000008_passkeys",
                "m20261129_000009_realtime",
                "m20261130_000010_team_chat",
                "m20261201_000011_ai_chat",
                "m20261202_000012_jobs_webhooks"
            ] })
        );
        let mut again = Vec::new();
        run(&database, &Args {}, &mut again, &mut Vec::new())
            .await
            .unwrap();
        let report: serde_json::Value = serde_json::from_slice(&again).unwrap();
        assert_eq!(report, serde_json::json!({ "applied": [] }));
    }

    #[tokio::test]
    async fn an_unreachable_database_is_an_error() {
        let database = DatabaseArgs {
            database_url: "nosuchdb://localhost/x".to_owned(),
        };
        let err = run(&database, &Args {}, &mut Vec::new(), &mut Vec::new())
            .await
            .unwrap_err();
        assert!(matches!(err, AdminError::Storage(_)), "{err:?}");
    }
}
