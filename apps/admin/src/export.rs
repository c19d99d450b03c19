//! `vellum-admin export [--items]`: the current schema, roles, keys (without secrets), folders and
//! settings as a manifest on stdout, so `export` then `apply` on an empty database reproduces the
//! project.

use std::io::Write;

use crate::{AdminError, DatabaseArgs};

#[derive(Debug, clap::Args)]
#[command(after_help = "Example:\n  vellum-admin export --items > project.json")]
pub(crate) struct Args {
    /// Include every live item as seed items.
    #[arg(long)]
    items: bool,
}

pub(crate) async fn run(
    database: &DatabaseArgs,
    args: &Args,
    out: &mut impl Write,
    _err: &mut impl Write,
) -> Result<(), AdminError> {
    let db = crate::db::open(database).await?;
    let manifest = vellum_manifest::export(&db, args.items).await?;
    let text = serde_json::to_string_pretty(&manifest)
        .map_err(|e| AdminError::Output(std::io::Error::other(e)))?;
    writeln!(out, "{text}").map_err(AdminError::Output)
}
