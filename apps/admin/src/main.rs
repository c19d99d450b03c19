//! `vellum-admin`: the Vellum operator CLI (migrate today; apply a manifest, manage roles, keys and
//! settings later: planned, issue 6).
//!
//! One module per subcommand, each with its `Args` and `run`. Output meant for machines is JSON on
//! stdout; messages for people go to stderr; any error exits non-zero.
//!
//! This binary must never hold business rules or SQL of its own: it parses arguments, calls the
//! library crates and prints their results. It never calls `std::process::exit`.

mod migrate;

use std::io::Write as _;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Command line of `vellum-admin`.
#[derive(Debug, Parser)]
#[command(name = "vellum-admin", version, about = "The Vellum operator CLI")]
struct Cli {
    #[command(flatten)]
    database: DatabaseArgs,

    #[command(subcommand)]
    command: Command,
}

/// Where the database is; the same variable and default as `vellum-server`.
#[derive(Debug, clap::Args)]
struct DatabaseArgs {
    /// Database URL: SQLite (embedded default) or `postgres://…`.
    #[arg(
        long,
        global = true,
        env = "VELLUM_DATABASE_URL",
        default_value = "sqlite://./data/vellum.db?mode=rwc",
        hide_env_values = true
    )]
    database_url: String,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Apply pending database migrations; prints `{"applied": [names…]}` on stdout.
    Migrate(migrate::Args),
}

/// Everything a subcommand can fail with.
#[derive(Debug, thiserror::Error)]
enum AdminError {
    #[error(transparent)]
    Storage(#[from] vellum_storage::StorageError),
    #[error("migration failed")]
    Migrate(#[source] vellum_migration::DbErr),
    #[error("could not write the result to stdout")]
    Output(#[source] std::io::Error),
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match &cli.command {
        Command::Migrate(args) => {
            migrate::run(
                &cli.database,
                args,
                &mut std::io::stdout(),
                &mut std::io::stderr(),
            )
            .await
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            report(&err);
            ExitCode::FAILURE
        }
    }
}

/// Writes an error and its causes to stderr, one per line. A cause whose text its parent already
/// printed (sqlx errors repeat their source) is skipped.
fn report(err: &dyn std::error::Error) {
    let mut stderr = std::io::stderr().lock();
    let mut previous = err.to_string();
    let _ = writeln!(stderr, "vellum-admin: {previous}");
    let mut source = err.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !previous.contains(&text) {
            let _ = writeln!(stderr, "  caused by: {text}");
        }
        previous = text;
        source = cause.source();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn database_url_is_accepted_after_the_subcommand() {
        let cli = Cli::try_parse_from([
            "vellum-admin",
            "migrate",
            "--database-url",
            "sqlite::memory:",
        ])
        .unwrap();
        assert_eq!(cli.database.database_url, "sqlite::memory:");
    }

    #[test]
    fn database_url_default_and_env_match_the_operator_contract() {
        let command = Cli::command();
        let arg = command
            .get_arguments()
            .find(|a| a.get_id() == "database_url")
            .unwrap();
        assert_eq!(
            arg.get_env().and_then(|e| e.to_str()),
            Some("VELLUM_DATABASE_URL")
        );
        assert_eq!(
            arg.get_default_values(),
            ["sqlite://./data/vellum.db?mode=rwc"]
        );
    }
}
