//! `POST /ai/attachments`: a csv, txt, xlsx or pdf file of at most 5 MiB becomes text the next
//! prompts may carry, for 24 hours. Only the extracted text is stored (the model never reads
//! anything else), so an attachment costs at most [`super::extract::MAX_TEXT_CHARS`] characters
//! of storage, and a user holds at most [`super::MAX_LIVE_ATTACHMENTS`].
//!
//! Extraction runs on the blocking pool, at most one per core at once, and the request waits
//! for it at most [`EXTRACT_TIMEOUT`]: a file that takes longer is refused while its thread
//! finishes in the background (it keeps its slot until then, so slow files cannot pile up).

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use serde::Serialize;
use serde_json::Value as Json;
use time::OffsetDateTime;
use vellum_storage::ai::{self as store, AiAttachmentRow, NewAiAttachment};

use super::extract::{self, Kind};
use super::{ATTACHMENT_LIFETIME, MAX_ATTACHMENT_BYTES, MAX_LIVE_ATTACHMENTS, require};
use crate::context::AppState;
use crate::error::AppError;
use crate::principal::Principal;
use crate::resources::timestamp;

/// How long a request waits for its file's text.
pub const EXTRACT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a request waits for a free extraction slot.
const SLOT_WAIT: Duration = Duration::from_secs(2);
/// The longest file name kept, in characters.
const MAX_NAME_CHARS: usize = 255;

/// An attachment as the API shows it.
#[derive(Debug, Clone, Serialize)]
pub struct AttachmentResource {
    pub id: String,
    pub name: String,
    pub extension: String,
    pub size: i64,
    /// Characters of text the model will read.
    pub characters: usize,
    pub expires_at: Json,
}

impl From<&AiAttachmentRow> for AttachmentResource {
    fn from(row: &AiAttachmentRow) -> Self {
        Self {
            id: row.id.clone(),
            name: row.name.clone(),
            extension: row.extension.clone(),
            size: row.size,
            characters: row.content.chars().count(),
            expires_at: timestamp(Some(row.expires_at)),
        }
    }
}

/// `POST /ai/attachments`. `read_part(limit)` reads the form's file (name and bytes, at most
/// `limit` bytes, or a 422): it runs only after the caller passed the checks, so a refused
/// caller's body is never read.
///
/// # Errors
/// 403 as [`require`]; 429 past the per-minute limit; 422 for a missing or unsupported file, one
/// too large, unreadable, taking too long, or one past the live attachments a user may hold;
/// 503 when every extraction slot stays busy; the database.
pub async fn upload<F, Fut>(
    state: &AppState,
    principal: &Principal,
    read_part: F,
) -> Result<AttachmentResource, AppError>
where
    F: FnOnce(u64) -> Fut,
    Fut: Future<Output = Result<(String, Bytes), AppError>>,
{
    require(principal)?;
    let ai = state.ai();
    ai.take_request(principal.user_id()).await?;
    let now = OffsetDateTime::now_utc();
    if store::attachments::live_count(state.db(), principal.user_id(), now).await?
        >= MAX_LIVE_ATTACHMENTS
    {
        return Err(AppError::invalid(
            "file",
            format!(
                "You may hold at most {MAX_LIVE_ATTACHMENTS} attachments; they expire after 24 hours."
            ),
        ));
    }
    let (name, bytes) = read_part(MAX_ATTACHMENT_BYTES).await?;
    let name: String = name
        .rsplit(['/', '\\'])
        .next()
        .unwrap_or_default()
        .trim()
        .chars()
        .filter(|c| !c.is_control())
        .take(MAX_NAME_CHARS)
        .collect();
    let kind = Kind::of(&name).ok_or_else(|| {
        AppError::invalid(
            "file",
            "The file must be a file of type: csv, txt, xlsx, pdf.",
        )
    })?;
    let text = extract_text(state, kind, bytes.clone()).await?;
    let row = store::attachments::insert(
        state.db(),
        &NewAiAttachment {
            user_id: principal.user_id(),
            name: &name,
            extension: kind.extension(),
            size: bytes.len() as u64,
            content: &text,
            expires_at: now + ATTACHMENT_LIFETIME,
        },
    )
    .await?;
    Ok(AttachmentResource::from(&row))
}

/// The text of `bytes`, extracted on the blocking pool within [`EXTRACT_TIMEOUT`].
async fn extract_text(state: &AppState, kind: Kind, bytes: Bytes) -> Result<String, AppError> {
    let slots = Arc::clone(state.ai().extractions());
    let permit = tokio::time::timeout(SLOT_WAIT, slots.acquire_owned())
        .await
        .map_err(|_| AppError::Busy { retry_after: 5 })?
        .map_err(AppError::internal)?;
    let job = tokio::task::spawn_blocking(move || {
        let _permit = permit;
        extract::extract(kind, &bytes)
    });
    match tokio::time::timeout(EXTRACT_TIMEOUT, job).await {
        Err(_) => {
            tracing::warn!(
                kind = kind.extension(),
                "ai: extraction passed its time limit"
            );
            Err(AppError::invalid("file", "The file took too long to read."))
        }
        Ok(Err(join)) => {
            // A panic inside a parser: the file is at fault, the server is not.
            tracing::warn!(error = %join, kind = kind.extension(), "ai: extraction panicked");
            Err(AppError::invalid("file", "The file could not be read."))
        }
        Ok(Ok(Err(err))) => Err(AppError::invalid("file", err.to_string())),
        Ok(Ok(Ok(text))) => Ok(text),
    }
}

/// The live attachments among `ids` of the user, in the order asked; an id that is unknown,
/// another user's or expired is a 422 naming its position.
pub(crate) async fn attached(
    state: &AppState,
    user_id: i64,
    ids: &[String],
) -> Result<Vec<AiAttachmentRow>, AppError> {
    let rows =
        store::attachments::live(state.db(), user_id, ids, OffsetDateTime::now_utc()).await?;
    let mut ordered = Vec::with_capacity(ids.len());
    for (i, id) in ids.iter().enumerate() {
        let Some(row) = rows.iter().find(|row| &row.id == id) else {
            return Err(AppError::invalid(
                format!("attachment_ids.{i}"),
                format!("The selected attachment_ids.{i} is invalid or has expired."),
            ));
        };
        ordered.push(row.clone());
    }
    Ok(ordered)
}
