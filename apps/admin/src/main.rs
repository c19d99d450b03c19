//! `vellum-admin`: the Vellum operator CLI: migrate, apply and export the project manifest, manage
//! API keys, roles and settings, create admin accounts, and explain access decisions.
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
mod users;

use std::process::ExitCode;

use clap::{CommandFactory as _, FromArgMatches as _, Parser, Subcommand};
use vellum_app::config::{LogArgs, RedisArgs};
use vellum_app::telemetry;

// The subcommands take the database settings as `crate::DatabaseArgs`.
use vellum_app::config::DatabaseArgs;

/// The name errors are reported under.
const PROGRAM: &str = "vellum-admin";

/// Command line of `vellum-admin`. The database, Redis and log settings are the server's
/// (`vellum_app::config`): the same flags, variables and defaults, except that logging is off
/// unless asked for ([`command`]).
#[derive(Debug, Parser)]
#[command(name = "vellum-admin", version, about = "The Vellum operator CLI")]
struct Cli {
    #[command(flatten)]
    database: DatabaseArgs,

    // The servers' Redis: after a change, their shared epoch is bumped (`notify`).
    #[command(flatten)]
    redis: RedisArgs,

    #[command(flatten)]
    log: LogArgs,

    #[command(subcommand)]
    command: Command,
}

/// The command line as parsed: [`Cli`] with the quiet log default of a command-line tool.
fn command() -> clap::Command {
    LogArgs::quiet_by_default(Cli::command())
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
    /// Create admin accounts (the first super-admin of an installation).
    #[command(
        after_help = "Example:\n  vellum-admin users create --email admin@example.com --name Admin \
            --role super-admin --password-stdin"
    )]
    Users(users::Args),
    /// Explain the policy's decision for a role, collection, action (and item), or what a
    /// manifest would change in every role's access (`--dry-run`).
    #[command(long_about = explain::LONG_ABOUT)]
    Explain(explain::Args),
}

/// Everything a subcommand can fail with.
#[derive(Debug, thiserror::Error)]
enum AdminError {
    #[error(transparent)]
    Storage(#[from] vellum_storage::StorageError),
    #[error(transparent)]
    App(vellum_app::AppError),
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
    /// The input was refused; the message names each flag and its problem.
    #[error("{0}")]
    Invalid(String),
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let cli = match Cli::from_arg_matches(&command().get_matches()) {
        Ok(cli) => cli,
        Err(err) => err.exit(),
    };
    if let Err(err) = telemetry::init(&cli.log) {
        return telemetry::report(PROGRAM, &err);
    }
    let result = run(&cli).await;
    let writes = match &cli.command {
        Command::Migrate(_) | Command::Apply(_) => true,
        Command::Keys(args) => args.writes(),
        Command::Settings(args) => args.writes(),
        Command::Users(args) => args.writes(),
        Command::Export(_) | Command::Roles(_) | Command::Explain(_) => false,
    };
    if result.is_ok() && writes {
        notify::changed(&cli.redis, &mut std::io::stderr()).await;
    }
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => telemetry::report(PROGRAM, &err),
    }
}

/// Runs the subcommand: results on stdout, messages for people on stderr.
async fn run(cli: &Cli) -> Result<(), AdminError> {
    let (database, out, log) = (
        &cli.database,
        &mut std::io::stdout(),
        &mut std::io::stderr(),
    );
    match &cli.command {
        Command::Migrate(args) => migrate::run(database, args, out, log).await,
        Command::Apply(args) => apply::run(database, args, out, log).await,
        Command::Export(args) => export::run(database, args, out, log).await,
        Command::Keys(args) => keys::run(database, args, out, log).await,
        Command::Roles(args) => roles::run(database, args, out, log).await,
        Command::Settings(args) => settings::run(database, args, out, log).await,
        Command::Users(args) => {
            let password = std::env::var(users::PASSWORD_ENV).ok();
            users::run(
                database,
                args,
                &mut std::io::stdin().lock(),
                password,
                out,
                log,
            )
            .await
        }
        Command::Explain(args) => explain::run(database, args, out, log).await,
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;

    #[test]
    fn cli_is_well_formed() {
        Cli::command().debug_assert();
        command().debug_assert();
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
