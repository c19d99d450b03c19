//! `vellum-admin apply FILE.json`: make the database match a manifest (see `vellum-manifest`).
//! Prints `{"api_keys": {"<name>": "<secret>"}}` with the secrets of the keys this run created,
//! and on stderr one line for each existing key whose secret the manifest changed (rotated).

use std::io::{Read as _, Write};
use std::path::PathBuf;

use crate::{AdminError, DatabaseArgs};

#[derive(Debug, clap::Args)]
#[command(after_help = "Example:\n  vellum-admin apply fixtures/demo.json")]
pub(crate) struct Args {
    /// The manifest (JSON); `-` reads standard input.
    file: PathBuf,
}

pub(crate) async fn run(
    database: &DatabaseArgs,
    args: &Args,
    out: &mut impl Write,
    err: &mut impl Write,
) -> Result<(), AdminError> {
    let manifest = read(&args.file)?;
    // An empty or outdated database is migrated first (the operator contract); migrations are
    // idempotent and outside the manifest's transaction, which only holds the project's data.
    let db = vellum_storage::connect(&database.database_url).await?;
    vellum_storage::migrate(&db).await?;
    let report = vellum_manifest::apply(&db, &manifest).await?;
    // The rotation is saved; a message that cannot be written is not a reason to fail the run.
    for name in &report.rotated_keys {
        let _ = writeln!(
            err,
            "vellum-admin: API key {name:?}: secret rotated; the previous secret no longer \
             authenticates"
        );
    }
    writeln!(out, "{}", report.to_json()).map_err(AdminError::Output)
}

/// Reads the manifest at `path` (`-`: standard input) as JSON; also `explain --dry-run`'s.
pub(crate) fn read(path: &PathBuf) -> Result<serde_json::Value, AdminError> {
    let shown = path.display().to_string();
    let text = if shown == "-" {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(|source| AdminError::ReadManifest {
                path: shown.clone(),
                message: source.to_string(),
            })?;
        text
    } else {
        std::fs::read_to_string(path).map_err(|source| AdminError::ReadManifest {
            path: shown.clone(),
            message: source.to_string(),
        })?
    };
    serde_json::from_str(&text).map_err(|e| AdminError::ReadManifest {
        path: shown,
        message: format!("not valid JSON: {e}"),
    })
}
