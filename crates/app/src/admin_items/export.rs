//! `GET /collections/{collection}/items/export?format=csv|json`: the items a list query matches
//! (same `filter`, `sort`, `direction`, `trashed`, `locale`), at most [`EXPORT_LIMIT`] of them,
//! streamed.
//!
//! The count and the ids of the rows to write are read first (so the response's headers can say
//! how many rows it holds and whether the result was cut), then the rows are read
//! [`EXPORT_CHUNK`] at a time and each chunk is written to the body as soon as it is rendered:
//! memory holds at most the ids (8 bytes each) and one chunk, whatever the collection's size.
//!
//! CSV (RFC 4180, CRLF line ends): a header row `id`, the collection's fields in order,
//! `created_at`, `updated_at`; values flattened to `locale` (the default locale unless given);
//! lists and objects as JSON text; a text cell starting with `=`, `+`, `-`, `@`, a tab or a
//! carriage return is prefixed with `'` so a spreadsheet does not run it as a formula. JSON: an
//! array of the list's item resources.

use std::sync::Arc;

use bytes::Bytes;
use futures_util::StreamExt as _;
use futures_util::stream::BoxStream;
use serde_json::Value as Json;
use vellum_domain::{LocaleSelection, ValidationErrors, flatten_for_read};
use vellum_storage::item_admin;
use vellum_storage::items::{FilterScope, Item};
use vellum_storage::model::Collection;

use super::query::{AdminQuery, parse};
use super::{Target, open};
use crate::actor::Actor;
use crate::context::AppState;
use crate::error::AppError;
use crate::principal::Principal;
use crate::query::{Include, ReadQuery, first, pairs};
use crate::render::render_items;
use crate::resources::timestamp;

/// The most rows one export writes (the spec's cap).
pub const EXPORT_LIMIT: u64 = 5000;

/// How many rows are read from the database per query while streaming.
pub const EXPORT_CHUNK: usize = 500;

/// The file format of an export.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportFormat {
    Csv,
    Json,
}

impl ExportFormat {
    #[must_use]
    pub fn content_type(self) -> &'static str {
        match self {
            Self::Csv => "text/csv; charset=utf-8",
            Self::Json => "application/json",
        }
    }

    #[must_use]
    pub fn extension(self) -> &'static str {
        match self {
            Self::Csv => "csv",
            Self::Json => "json",
        }
    }
}

/// An export about to be streamed: what its headers say, and its body.
pub struct Export {
    pub format: ExportFormat,
    /// `<collection slug>.<csv|json>`.
    pub filename: String,
    /// The rows the body holds: the matches, at most [`EXPORT_LIMIT`].
    pub rows: u64,
    /// Every item the query matched.
    pub total_matched: u64,
    /// Whether rows were left out (`total_matched > rows`).
    pub truncated: bool,
    /// The file, chunk by chunk; an error ends it early (the transfer then fails).
    pub body: BoxStream<'static, Result<Bytes, AppError>>,
}

impl std::fmt::Debug for Export {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Export")
            .field("format", &self.format)
            .field("filename", &self.filename)
            .field("rows", &self.rows)
            .field("total_matched", &self.total_matched)
            .finish_non_exhaustive()
    }
}

fn parse_format(query: &str, errors: &mut ValidationErrors) -> ExportFormat {
    match first(&pairs(query), "format")
        .map(str::to_ascii_lowercase)
        .as_deref()
    {
        Some("csv") => ExportFormat::Csv,
        Some("json") => ExportFormat::Json,
        _ => {
            errors.add(
                "format",
                "The format field is required and must be csv or json.",
            );
            ExportFormat::Csv
        }
    }
}

/// Starts an export of `slug`'s items for the query.
///
/// # Errors
/// 403 without `can-show-collections`, 404 for an unknown collection, 422 for a bad query
/// (`format` included), the database (before the body starts).
pub async fn export(
    state: &AppState,
    principal: &Principal,
    slug: &str,
    query: &str,
) -> Result<Export, AppError> {
    let Target { actor, collection } = open(state, principal, "can-show-collections", slug).await?;
    let mut errors = ValidationErrors::new();
    let format = parse_format(query, &mut errors);
    let parsed = match parse(query, &actor.snapshot.locales, &collection) {
        Ok(parsed) if errors.is_empty() => parsed,
        Ok(_) => return Err(AppError::Invalid(errors)),
        Err(AppError::Invalid(found)) => {
            for (key, messages) in found.iter() {
                for message in messages {
                    errors.add(key, message.clone());
                }
            }
            return Err(AppError::Invalid(errors));
        }
        Err(other) => return Err(other),
    };
    let AdminQuery {
        read,
        filter,
        sort,
        shelf,
        ..
    } = parsed;
    let scope = FilterScope {
        schema: collection.schema(),
        locales: &actor.snapshot.locales,
        locale: &read.locale,
    };
    let (total_matched, ids) = item_admin::matching_ids(
        state.db(),
        &collection,
        &scope,
        &filter,
        &sort,
        shelf,
        EXPORT_LIMIT,
    )
    .await?;
    let rows = u64::try_from(ids.len()).unwrap_or(u64::MAX);
    let cursor = Cursor {
        state: state.clone(),
        actor,
        filename: format!("{}.{}", collection.slug.as_str(), format.extension()),
        collection,
        read: ReadQuery {
            include: Include::default(),
            ..read
        },
        format,
        ids,
        next: 0,
        stage: Stage::Head,
    };
    let filename = cursor.filename.clone();
    let body = futures_util::stream::try_unfold(cursor, |mut cursor| async move {
        Ok(cursor.step().await?.map(|bytes| (bytes, cursor)))
    })
    .boxed();
    Ok(Export {
        format,
        filename,
        rows,
        total_matched,
        truncated: total_matched > rows,
        body,
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    Head,
    Rows,
    Done,
}

/// Where a streaming export is.
struct Cursor {
    state: AppState,
    actor: Actor,
    collection: Arc<Collection>,
    filename: String,
    read: ReadQuery,
    format: ExportFormat,
    ids: Vec<i64>,
    /// The index in `ids` of the next row to write.
    next: usize,
    stage: Stage,
}

impl Cursor {
    /// The next piece of the file: the head, one chunk of rows, the tail; `None` at the end.
    async fn step(&mut self) -> Result<Option<Bytes>, AppError> {
        match self.stage {
            Stage::Head => {
                self.stage = Stage::Rows;
                Ok(Some(self.head()))
            }
            Stage::Rows if self.next < self.ids.len() => {
                let end = self.next.saturating_add(EXPORT_CHUNK).min(self.ids.len());
                let ids = self.ids.get(self.next..end).unwrap_or_default();
                let chunk =
                    item_admin::items_in_order(self.state.db(), &self.collection, ids).await?;
                let first = self.next == 0;
                self.next = end;
                let bytes = match self.format {
                    ExportFormat::Csv => self.csv_rows(&chunk),
                    ExportFormat::Json => self.json_rows(chunk, first).await?,
                };
                Ok(Some(bytes))
            }
            Stage::Rows => {
                self.stage = Stage::Done;
                Ok(match self.format {
                    ExportFormat::Json => Some(Bytes::from_static(b"]\n")),
                    ExportFormat::Csv => None,
                })
            }
            Stage::Done => Ok(None),
        }
    }

    fn head(&self) -> Bytes {
        match self.format {
            ExportFormat::Json => Bytes::from_static(b"["),
            ExportFormat::Csv => {
                let mut line = String::new();
                let names = std::iter::once("id")
                    .chain(self.collection.fields.iter().map(|f| f.def.name.as_str()))
                    .chain(["created_at", "updated_at"]);
                for (i, name) in names.enumerate() {
                    if i > 0 {
                        line.push(',');
                    }
                    push_cell(&mut line, name, true);
                }
                line.push_str("\r\n");
                Bytes::from(line)
            }
        }
    }

    fn csv_rows(&self, chunk: &[Item]) -> Bytes {
        let locales = &self.actor.snapshot.locales;
        let selection = LocaleSelection::Flatten(self.read.locale.clone());
        let mut out = String::new();
        for item in chunk {
            let data = flatten_for_read(self.collection.schema(), &item.data, &selection, locales);
            out.push_str(&item.id.to_string());
            for field in &self.collection.fields {
                out.push(',');
                push_value(&mut out, data.get(field.def.name.as_str()));
            }
            for at in [item.created_at, item.updated_at] {
                out.push(',');
                push_value(&mut out, Some(&timestamp(at)));
            }
            out.push_str("\r\n");
        }
        Bytes::from(out)
    }

    async fn json_rows(&self, chunk: Vec<Item>, first: bool) -> Result<Bytes, AppError> {
        let rendered = render_items(
            &self.state,
            &self.actor,
            &self.collection,
            chunk,
            &self.read,
        )
        .await?;
        let mut out = String::new();
        for (i, item) in rendered.iter().enumerate() {
            if !(first && i == 0) {
                out.push(',');
            }
            out.push('\n');
            out.push_str(item.get());
        }
        Ok(Bytes::from(out))
    }
}

/// Writes one value as a CSV cell: text as itself, numbers and booleans as JSON writes them,
/// null and missing as an empty cell, lists and objects as JSON text.
fn push_value(out: &mut String, value: Option<&Json>) {
    match value {
        None | Some(Json::Null) => {}
        Some(Json::String(s)) => push_cell(out, s, true),
        Some(Json::Bool(b)) => out.push_str(if *b { "true" } else { "false" }),
        Some(Json::Number(n)) => out.push_str(&n.to_string()),
        Some(other) => push_cell(out, &other.to_string(), true),
    }
}

/// The characters a spreadsheet may read as the start of a formula.
const FORMULA_START: [char; 6] = ['=', '+', '-', '@', '\t', '\r'];

/// Writes `cell` quoted when RFC 4180 needs it (a comma, a quote, CR or LF; quotes doubled).
/// A `text` cell starting a formula gets a leading `'` (numbers are written as such, so `-5`
/// stays a number).
fn push_cell(out: &mut String, cell: &str, text: bool) {
    let defuse = text && cell.starts_with(FORMULA_START);
    let quote = cell.contains([',', '"', '\r', '\n']);
    if quote {
        out.push('"');
    }
    if defuse {
        out.push('\'');
    }
    for ch in cell.chars() {
        if ch == '"' {
            out.push('"');
        }
        out.push(ch);
    }
    if quote {
        out.push('"');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(value: &Json) -> String {
        let mut out = String::new();
        push_value(&mut out, Some(value));
        out
    }

    #[test]
    fn cells_follow_rfc_4180() {
        assert_eq!(cell(&Json::from("plain")), "plain");
        assert_eq!(cell(&Json::from("a,b")), "\"a,b\"");
        assert_eq!(cell(&Json::from("say \"hi\"")), "\"say \"\"hi\"\"\"");
        assert_eq!(cell(&Json::from("two\r\nlines")), "\"two\r\nlines\"");
        assert_eq!(cell(&Json::Null), "");
        assert_eq!(cell(&serde_json::json!(-5)), "-5");
        assert_eq!(cell(&serde_json::json!(true)), "true");
        assert_eq!(
            cell(&serde_json::json!(["a", "b"])),
            "\"[\"\"a\"\",\"\"b\"\"]\""
        );
    }

    #[test]
    fn formulas_are_defused() {
        assert_eq!(cell(&Json::from("=1+1")), "'=1+1");
        assert_eq!(cell(&Json::from("+1")), "'+1");
        assert_eq!(cell(&Json::from("-1")), "'-1");
        assert_eq!(cell(&Json::from("@SUM(A1)")), "'@SUM(A1)");
        assert_eq!(
            cell(&Json::from("=HYPERLINK(\"x\",\"y\")")),
            "\"'=HYPERLINK(\"\"x\"\",\"\"y\"\")\""
        );
        assert_eq!(cell(&Json::from("a=b")), "a=b");
    }
}
