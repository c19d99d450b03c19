//! `vellum-admin settings`: read and change the project settings.
//!
//! Values are checked by `vellum_storage::project` exactly as for the admin app (an origin with a
//! path, a default locale that is not enabled, … are refused and nothing is written); this module
//! only turns the command line into JSON and back.

use std::io::Write;

use serde_json::{Map, Value as Json};
use vellum_storage::project;

use crate::db::open;
use crate::{AdminError, DatabaseArgs};

/// Arguments of `settings`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(subcommand)]
    command: SettingsCommand,
}

impl Args {
    /// Whether the command changes the project (servers must then drop what they cached).
    pub(crate) fn writes(&self) -> bool {
        matches!(self.command, SettingsCommand::Set { .. })
    }
}

#[derive(Debug, clap::Subcommand)]
enum SettingsCommand {
    /// Print every setting as a JSON object, or one setting's value.
    #[command(
        long_about = "Print the effective project settings (stored values, defaults for the \
            rest) as one JSON object on stdout, or with KEY only that setting's JSON value.",
        after_help = "Examples:\n  vellum-admin settings get\n  \
            vellum-admin settings get public_api_allowed_origins"
    )]
    Get {
        /// One of content_locales, default_locale, public_api_allowed_origins,
        /// files_max_upload_bytes, chat_max_upload_bytes, daily_prompt_limit.
        key: Option<String>,
    },
    /// Change one setting (validated like the admin app).
    #[command(
        long_about = "Set KEY to VALUE. VALUE is read as JSON when it parses as JSON, otherwise \
            as a JSON string (so `de` and '\"de\"' are the same). It is validated exactly like \
            the admin app validates it: an invalid value is refused with a message on stderr, \
            a non-zero exit, and nothing changed. Prints {KEY: stored value} on stdout (origins \
            in canonical form).",
        after_help = "Examples:\n  vellum-admin settings set public_api_allowed_origins \
            '[\"https://app.example.com\"]'\n  \
            vellum-admin settings set content_locales '[\"en\", \"de\"]'\n  \
            vellum-admin settings set files_max_upload_bytes 10485760"
    )]
    Set {
        /// The setting's name.
        key: String,
        /// The new value: JSON, or text taken as a JSON string.
        #[arg(allow_hyphen_values = true)]
        value: String,
    },
}

/// Runs `settings …`: JSON results on `out`, notes for people on `log`.
pub(crate) async fn run(
    database: &DatabaseArgs,
    args: &Args,
    out: &mut impl Write,
    log: &mut impl Write,
) -> Result<(), AdminError> {
    let db = open(database).await?;
    let report = match &args.command {
        SettingsCommand::Get { key: None } => {
            Json::Object(project::load_settings(&db).await?.to_json())
        }
        SettingsCommand::Get { key: Some(key) } => {
            // Refuses keys that are not settings (and so the fingerprint secret), naming the
            // known ones.
            project::get_setting(&db, key).await?;
            effective(&db, key).await?
        }
        SettingsCommand::Set { key, value } => {
            project::set_setting(&db, key, parse_value(value)).await?;
            let _ = writeln!(log, "vellum-admin: setting {key} updated");
            let mut stored = Map::new();
            stored.insert(key.clone(), effective(&db, key).await?);
            Json::Object(stored)
        }
    };
    writeln!(out, "{report}").map_err(AdminError::Output)
}

/// The effective value of a known setting.
async fn effective(db: &vellum_storage::Database, key: &str) -> Result<Json, AdminError> {
    project::load_settings(db)
        .await?
        .to_json()
        .remove(key)
        .ok_or_else(|| AdminError::NotFound(format!("no setting named \"{key}\"")))
}

/// JSON when `raw` parses as JSON, else `raw` as a JSON string: `10`, `true`, `["en"]` and
/// `"de"` are JSON; `de` and `https://a.test` are text.
fn parse_value(raw: &str) -> Json {
    serde_json::from_str(raw).unwrap_or_else(|_| Json::String(raw.to_owned()))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn values_are_json_when_they_parse_and_strings_otherwise() {
        assert_eq!(parse_value("10"), json!(10));
        assert_eq!(parse_value("[\"en\", \"de\"]"), json!(["en", "de"]));
        assert_eq!(parse_value("\"de\""), json!("de"));
        assert_eq!(parse_value("de"), json!("de"));
        assert_eq!(parse_value("https://a.test"), json!("https://a.test"));
        assert_eq!(parse_value("[unclosed"), json!("[unclosed"));
    }
}
