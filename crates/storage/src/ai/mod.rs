//! AI chat (issue 22): a user's conversations and their messages ([`conversations`],
//! [`messages`]), short-lived attachments ([`attachments`]) and the daily prompt counter
//! ([`usage`]). Ownership is part of every query; what a user may do is decided above.

pub mod attachments;
pub mod conversations;
pub mod messages;
pub mod usage;

pub use attachments::{AiAttachmentRow, NewAiAttachment};
pub use conversations::ConversationRow;
pub use messages::{AiMessageRow, NewAiMessage, Role};
