//! Logging and the last word of a failed run, the same for every binary.
//!
//! [`init`] installs the one `tracing` subscriber from `--log`/`VELLUM_LOG` and
//! `--log-format`/`VELLUM_LOG_FORMAT`. Logs always go to stderr, never stdout: `vellum-admin`
//! prints its results (a manifest, new API keys) on stdout for machines, and a log line there
//! would corrupt them. [`report`] ends a binary that failed: the error and its causes on one line
//! of stderr, and a failure exit code, so "could not listen" says which address and why.

use std::error::Error;
use std::io::{IsTerminal as _, Write as _};
use std::process::ExitCode;

use tracing_subscriber::EnvFilter;

use crate::config::{LogArgs, LogFormat};

/// Why logging could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    #[error("invalid VELLUM_LOG filter {filter:?}")]
    Filter {
        filter: String,
        #[source]
        source: tracing_subscriber::filter::ParseError,
    },
    #[error("could not install the tracing subscriber")]
    Install(#[source] Box<dyn Error + Send + Sync>),
}

/// Installs the global subscriber on stderr, filtered by `args.log`: human-readable lines
/// (coloured only on a terminal), or one JSON object per line with the current span's fields
/// (a request's id, method and path) for `json`. Records of the `log` crate are forwarded too.
///
/// # Errors
///
/// [`TelemetryError::Filter`] for a filter that is not `RUST_LOG` syntax;
/// [`TelemetryError::Install`] when a global subscriber is already installed.
pub fn init(args: &LogArgs) -> Result<(), TelemetryError> {
    let filter = EnvFilter::try_new(&args.log).map_err(|source| TelemetryError::Filter {
        filter: args.log.clone(),
        source,
    })?;
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match args.log_format {
        LogFormat::Text => builder
            .with_ansi(std::io::stderr().is_terminal())
            .try_init(),
        LogFormat::Json => builder.json().with_current_span(true).try_init(),
    }
    .map_err(TelemetryError::Install)
}

/// `error: cause: root cause`, for a log field or a one-line report. A cause whose text its
/// parent already includes (sqlx errors repeat their source) is left out.
#[must_use]
pub fn error_chain(err: &dyn Error) -> String {
    let mut out = err.to_string();
    let mut previous = out.clone();
    let mut source = err.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !previous.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        previous = text;
        source = cause.source();
    }
    out
}

/// Ends a failed run of `program`: writes `program: error: cause: …` ([`error_chain`]) as one
/// line to stderr, whether or not logging is up (it may be what failed), and returns the
/// failure exit code for `main` to return, so destructors run and buffered logs flush.
#[must_use]
pub fn report(program: &str, err: &dyn Error) -> ExitCode {
    let mut stderr = std::io::stderr().lock();
    // Nothing is left to tell about a failure to write to stderr.
    let _ = writeln!(stderr, "{program}: {}", error_chain(err));
    ExitCode::FAILURE
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("{text}")]
    struct Layer {
        text: &'static str,
        #[source]
        source: Option<Box<Layer>>,
    }

    fn chain(texts: &[&'static str]) -> Layer {
        texts
            .iter()
            .rev()
            .fold(None, |source, &text| {
                Some(Layer {
                    text,
                    source: source.map(Box::new),
                })
            })
            .unwrap()
    }

    #[test]
    fn the_chain_is_one_line_without_repeated_causes() {
        let err = chain(&["could not listen on 127.0.0.1:8080", "address in use"]);
        assert_eq!(
            error_chain(&err),
            "could not listen on 127.0.0.1:8080: address in use"
        );
        let err = chain(&["migration failed", "error: disk full", "disk full"]);
        assert_eq!(error_chain(&err), "migration failed: error: disk full");
    }

    #[test]
    fn a_bad_filter_names_the_setting() {
        let args = LogArgs {
            log: "info,[".to_owned(),
            log_format: LogFormat::Text,
        };
        let err = init(&args).unwrap_err();
        assert!(
            err.to_string().starts_with("invalid VELLUM_LOG filter"),
            "{err}"
        );
    }
}
