//! Team chat (issue 21): threads and their members ([`threads`]), messages, reactions and pins
//! ([`messages`]), what each user has read, archived and follows ([`states`]), and attachments
//! with chunked uploads ([`attachments`]).
//!
//! Access is decided above (the application layer checks `can-show-chat`, the item's read and
//! direct membership); these functions only answer *who is a member* and *what is unread*, in
//! SQL, so the hub and the unread badge cost one query each however many threads a user has.

pub mod attachments;
pub mod messages;
pub mod people;
pub mod states;
pub mod threads;

use time::OffsetDateTime;

use crate::sql::Sql;

pub use attachments::{AttachmentRow, NewAttachment, UploadRow};
pub use messages::{MessageRow, NewMessage, ReactionSummary};
pub use states::UnreadRow;
pub use threads::{ChatListing, ChatRow, ChatSummary, MemberRow, MemberSet, Tab};

/// A thread's kind as stored in `chats.kind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ChatKind {
    /// One thread per collection item.
    Item,
    /// Private among chosen users and groups.
    Direct,
}

impl ChatKind {
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Item => "item",
            Self::Direct => "direct",
        }
    }

    #[must_use]
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "item" => Some(Self::Item),
            "direct" => Some(Self::Direct),
            _ => None,
        }
    }
}

/// A user as chat shows it: id and name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Person {
    pub id: i64,
    pub name: String,
}

/// Appends the SQL condition "user `uid` takes part in direct thread `c`": a member by name,
/// or a member of a member group that is not deleted.
pub(crate) fn push_member_of(sql: &mut Sql, uid: i32) {
    sql.push("EXISTS (SELECT 1 FROM chat_members m WHERE m.chat_id = c.id AND (m.user_id = ")
        .bind(uid)
        .push(
            " OR m.group_id IN (SELECT gu.group_id FROM group_users gu \
         JOIN \"groups\" g ON g.id = gu.group_id WHERE g.deleted_at IS NULL AND gu.user_id = ",
        )
        .bind(uid)
        .push(")))");
}

/// The clock both backends store: microseconds, UTC.
pub(crate) fn at(t: OffsetDateTime) -> OffsetDateTime {
    crate::sql::stamp(t)
}
