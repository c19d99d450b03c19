//! Threads and messages as the JSON API, the pages and the realtime events show them.

use std::collections::HashMap;

use serde::Serialize;
use serde_json::Value as Json;
use vellum_storage::chat::{
    self as store, AttachmentRow, ChatKind, ChatRow, MemberRow, MessageRow, Person,
};
use vellum_storage::item_admin::items_in_order;

use super::text::{Mentions, preview, render_html};
use crate::context::AppState;
use crate::error::AppError;
use crate::options::stored_item_label;
use crate::resources::timestamp;

/// `{id, name}` of a user.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PersonResource {
    pub id: i64,
    pub name: String,
}

impl From<Person> for PersonResource {
    fn from(person: Person) -> Self {
        Self {
            id: person.id,
            name: person.name,
        }
    }
}

/// A direct thread's member: `{"type": "user"|"group", id, name}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MemberResource {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub id: i64,
    pub name: String,
}

impl From<MemberRow> for MemberResource {
    fn from(member: MemberRow) -> Self {
        match member {
            MemberRow::User(p) => Self {
                kind: "user",
                id: p.id,
                name: p.name,
            },
            MemberRow::Group(p) => Self {
                kind: "group",
                id: p.id,
                name: p.name,
            },
        }
    }
}

/// The collection of an item thread.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CollectionRef {
    pub id: i64,
    pub slug: String,
    pub name: String,
}

/// The item of an item thread, with its label.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ItemRef {
    pub id: i64,
    pub label: String,
}

/// A thread.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ThreadResource {
    pub id: String,
    pub kind: &'static str,
    /// The item's collection and label, or the other members' names.
    pub title: String,
    pub collection: Option<CollectionRef>,
    pub item: Option<ItemRef>,
    /// A direct thread's chosen users and groups (empty for an item thread).
    pub members: Vec<MemberResource>,
    pub created_by: Option<i64>,
    pub created_at: Json,
    pub last_message_at: Json,
    pub last_message_preview: Option<String>,
    /// The viewer's unread messages here.
    pub unread: u64,
    /// When the viewer archived it.
    pub archived_at: Json,
    /// The presence channel its events travel on.
    pub channel: String,
}

/// What a thread's resource needs beside its row.
#[derive(Debug, Clone, Default)]
pub(crate) struct ThreadExtras {
    pub unread: u64,
    pub archived_at: Option<time::OffsetDateTime>,
    pub last_body: Option<String>,
}

/// The resources of `chats` as user `viewer` sees them: members in one query, item labels in
/// one query per collection.
pub(crate) async fn threads(
    state: &AppState,
    viewer: i64,
    chats: Vec<(ChatRow, ThreadExtras)>,
) -> Result<Vec<ThreadResource>, AppError> {
    let direct: Vec<&str> = chats
        .iter()
        .filter(|(chat, _)| chat.kind == ChatKind::Direct)
        .map(|(chat, _)| chat.id.as_str())
        .collect();
    let mut members = store::threads::members(state.db(), &direct).await?;
    let labels = labels(state, &chats).await?;
    let snapshot = state.snapshot().await?;
    Ok(chats
        .into_iter()
        .map(|(chat, extras)| {
            let members: Vec<MemberResource> = members
                .remove(&chat.id)
                .unwrap_or_default()
                .into_iter()
                .map(MemberResource::from)
                .collect();
            let collection = chat
                .collection_id
                .and_then(|id| snapshot.collection_by_id(id))
                .map(|c| CollectionRef {
                    id: c.id,
                    slug: c.slug.to_string(),
                    name: c.name.clone(),
                });
            let item = chat.item_id.map(|id| ItemRef {
                id,
                label: labels.get(&id).cloned().unwrap_or_else(|| format!("#{id}")),
            });
            let title = match (&collection, &item) {
                (Some(collection), Some(item)) => format!("{}: {}", collection.name, item.label),
                _ => direct_title(&members, viewer),
            };
            ThreadResource {
                channel: format!("presence-chat.{}", chat.id),
                kind: chat.kind.as_str(),
                title,
                collection,
                item,
                members,
                created_by: chat.created_by,
                created_at: timestamp(Some(chat.created_at)),
                last_message_at: timestamp(chat.last_message_at),
                last_message_preview: extras.last_body.as_deref().map(preview),
                unread: extras.unread,
                archived_at: timestamp(extras.archived_at),
                id: chat.id,
            }
        })
        .collect())
}

/// The other members' names; "Only you" when the viewer is alone.
fn direct_title(members: &[MemberResource], viewer: i64) -> String {
    let names: Vec<&str> = members
        .iter()
        .filter(|m| !(m.kind == "user" && m.id == viewer))
        .map(|m| m.name.as_str())
        .collect();
    if names.is_empty() {
        "Only you".to_owned()
    } else {
        names.join(", ")
    }
}

async fn labels(
    state: &AppState,
    chats: &[(ChatRow, ThreadExtras)],
) -> Result<HashMap<i64, String>, AppError> {
    let mut by_collection: HashMap<i64, Vec<i64>> = HashMap::new();
    for (chat, _) in chats {
        if let (Some(collection), Some(item)) = (chat.collection_id, chat.item_id) {
            by_collection.entry(collection).or_default().push(item);
        }
    }
    let snapshot = state.snapshot().await?;
    let mut labels = HashMap::new();
    for (collection_id, ids) in by_collection {
        let Some(collection) = snapshot.collection_by_id(collection_id) else {
            continue;
        };
        for item in items_in_order(state.db(), collection, &ids).await? {
            labels.insert(
                item.id,
                stored_item_label(&snapshot, collection, item.id, &item.data),
            );
        }
    }
    Ok(labels)
}

/// A reaction: the emoji, how many and who.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReactionResource {
    pub emoji: String,
    pub count: usize,
    pub user_ids: Vec<i64>,
}

/// An attachment of a message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AttachmentResource {
    pub id: String,
    pub name: String,
    pub mime_type: String,
    pub size: i64,
    /// Where it downloads (signed-in members only).
    pub url: String,
    pub created_at: Json,
}

impl From<AttachmentRow> for AttachmentResource {
    fn from(row: AttachmentRow) -> Self {
        Self {
            url: format!("/chat/{}/attachments/{}", row.chat_id, row.id),
            id: row.id,
            name: row.name,
            mime_type: row.mime_type,
            size: row.size,
            created_at: timestamp(Some(row.created_at)),
        }
    }
}

/// The message a reply quotes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReplyResource {
    pub id: i64,
    pub author: Option<PersonResource>,
    pub body_preview: String,
}

/// A message.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MessageResource {
    pub id: i64,
    pub chat_id: String,
    pub author: Option<PersonResource>,
    /// As written (plain text).
    pub body: String,
    /// The body escaped, with line breaks, links and mentions: safe to set as HTML.
    pub html: String,
    pub reply_to: Option<ReplyResource>,
    pub mentions: Mentions,
    pub pinned_at: Json,
    pub edited_at: Json,
    pub created_at: Json,
    pub reactions: Vec<ReactionResource>,
    pub attachments: Vec<AttachmentResource>,
}

impl From<MessageRow> for MessageResource {
    fn from(row: MessageRow) -> Self {
        let mentions = Mentions::parse(&row.mentions);
        Self {
            html: render_html(&row.body, &mentions),
            id: row.id,
            chat_id: row.chat_id,
            author: row.author.map(PersonResource::from),
            body: row.body,
            reply_to: row.reply_to.map(|quoted| ReplyResource {
                id: quoted.id,
                author: quoted.author.map(PersonResource::from),
                body_preview: preview(&quoted.body),
            }),
            mentions,
            pinned_at: timestamp(row.pinned_at),
            edited_at: timestamp(row.edited_at),
            created_at: timestamp(Some(row.created_at)),
            reactions: row
                .reactions
                .into_iter()
                .map(|r| ReactionResource {
                    emoji: r.emoji,
                    count: r.user_ids.len(),
                    user_ids: r.user_ids,
                })
                .collect(),
            attachments: row
                .attachments
                .into_iter()
                .map(AttachmentResource::from)
                .collect(),
        }
    }
}
