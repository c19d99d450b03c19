//! `vellum-admin`: the Vellum operator CLI: migrate, apply and export the project manifest, manage
//! API keys, roles and settings, and explain access decisions.
//!
//! One module per subcommand, each with its `Args` and `run`. Output meant for machines is JSON on
//! stdout; messages for people go to stderr; any error exits non-zero.
//!
//! This binary must never hold business rules or SQL of its own: it parses arguments, calls the
//! library crates and prints their results. It never calls `std::process::exit`.

mod apply;
mod db;
mod explain;
mod export;
mod keys;
mod migrate;
mod notify;
mod roles;
mod settings;

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

    /// Redis URL of the servers (`VELLUM_REDIS_URL`): after a change, their shared epoch is
    /// bumped so every replica serves it on its next request (without Redis they notice within
    /// 5 s).
    #[arg(long, global = true, env = "VELLUM_REDIS_URL", hide_env_values = true)]
    redis_url: Option<String>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Apply pending database migrations; prints `{"applied": [names…]}` on stdout.
    Migrate(migrate::Args),
    /// Make the database match a manifest (settings, collections, roles, keys, folders, seed
    /// items); prints `{"api_keys": {…}}` with the secrets of keys created in this run.
    Apply(apply::Args),
    /// Print the project as a manifest (no secrets; items only with `--items`).
    Export(export::Args),
    /// Create, list and revoke API keys.
    #[command(after_help = "Example:\n  vellum-admin keys create --role editor --name site-build")]
    Keys(keys::Args),
    /// List roles and show one with its matrices and rules.
    #[command(after_help = "Example:\n  vellum-admin roles show editor")]
    Roles(roles::Args),
    /// Read and change project settings.
    #[command(after_help = "Example:\n  vellum-admin settings get default_locale")]
    Settings(settings::Args),
    /// Explain the policy's decision for a role, collection, action (and item).
    #[command(long_about = explain::LONG_ABOUT)]
    Explain(explain::Args),
}

/// Everything a subcommand can fail with.
#[derive(Debug, thiserror::Error)]
enum AdminError {
    #[error(transparent)]
    Storage(#[from] vellum_storage::StorageError),
    #[error("migration failed")]
    Migrate(#[source] vellum_storage::StorageError),
    #[error("could not write the result to stdout")]
    Output(#[source] std::io::Error),
    /// A flag names something invalid or unknown; the message starts with the flag.
    #[error("{flag}: {message}")]
    InvalidArgument { flag: &'static str, message: String },
    #[error("{0}")]
    NotFound(String),
    #[error(transparent)]
    Manifest(#[from] vellum_manifest::ManifestError),
    #[error("{path}: {message}")]
    ReadManifest { path: String, message: String },
    #[error("could not generate an API key secret")]
    Secret(#[source] vellum_policy::PolicyError),
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
        Command::Apply(args) => {
            apply::run(
                &cli.database,
                args,
                &mut std::io::stdout(),
                &mut std::io::stderr(),
            )
            .await
        }
        Command::Export(args) => {
            export::run(
                &cli.database,
                args,
                &mut std::io::stdout(),
                &mut std::io::stderr(),
            )
            .await
        }
        Command::Keys(args) => {
            keys::run(
                &cli.database,
                args,
                &mut std::io::stdout(),
                &mut std::io::stderr(),
            )
            .await
        }
        Command::Roles(args) => {
            roles::run(
                &cli.database,
                args,
                &mut std::io::stdout(),
                &mut std::io::stderr(),
            )
            .await
        }
        Command::Settings(args) => {
            settings::run(
                &cli.database,
                args,
                &mut std::io::stdout(),
                &mut std::io::stderr(),
            )
            .await
        }
        Command::Explain(args) => {
            explain::run(
                &cli.database,
                args,
                &mut std::io::stdout(),
                &mut std::io::stderr(),
            )
            .await
        }
    };
    let writes = match &cli.command {
        Command::Migrate(_) | Command::Apply(_) => true,
        Command::Keys(args) => args.writes(),
        Command::Settings(args) => args.writes(),
        Command::Export(_) | Command::Roles(_) | Command::Explain(_) => false,
    };
    if result.is_ok() && writes {
        notify::changed(&cli.database, &mut std::io::stderr()).await;
    }
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
