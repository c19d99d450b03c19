//! A direct thread's people: archive and unarchive (per user), participants, leaving and
//! deleting; and the per-collection follow switch of item threads.

use serde::Serialize;
use serde_json::Value as Json;
use time::OffsetDateTime;
use vellum_storage::chat::{self as store, ChatKind, ChatRow, MemberSet};

use super::events::chat_channel;
use super::resource::{MemberResource, PersonResource, ThreadResource};
use super::threads::{announce, members_error, read_members, resource};
use super::{CHAT_PERMISSION, ITEMS_PERMISSION, Opened, open, refused};
use crate::context::AppState;
use crate::error::AppError;
use crate::input::Input;
use crate::principal::Principal;

fn direct_only(opened: &Opened, what: &str) -> Result<(), AppError> {
    if opened.chat.kind == ChatKind::Direct {
        Ok(())
    } else {
        Err(AppError::invalid(
            "chat",
            format!("Only direct conversations can be {what}."),
        ))
    }
}

/// `POST /chat/{chat}/archive`: hides a direct thread from the user's private tab until a new
/// message arrives.
///
/// # Errors
/// As [`super::open`]; 422 for an item thread; the database.
pub async fn archive(
    state: &AppState,
    principal: &Principal,
    id: &str,
) -> Result<ThreadResource, AppError> {
    set_archive(state, principal, id, Some(OffsetDateTime::now_utc())).await
}

/// `POST /chat/{chat}/unarchive`.
///
/// # Errors
/// As [`archive`].
pub async fn unarchive(
    state: &AppState,
    principal: &Principal,
    id: &str,
) -> Result<ThreadResource, AppError> {
    set_archive(state, principal, id, None).await
}

async fn set_archive(
    state: &AppState,
    principal: &Principal,
    id: &str,
    at: Option<OffsetDateTime>,
) -> Result<ThreadResource, AppError> {
    let opened = open(state, principal, id).await?;
    direct_only(&opened, "archived")?;
    store::states::set_archived(state.db(), &opened.chat.id, principal.user_id(), at).await?;
    resource(state, principal, opened.chat).await
}

/// `GET /chat/{chat}/participants`: a direct thread's chosen members and everyone taking part
/// (group members included); an item thread's followers.
#[derive(Debug, Clone, Serialize)]
pub struct Participants {
    pub members: Vec<MemberResource>,
    pub users: Vec<PersonResource>,
}

/// Lists a thread's participants (at most 1,000 users).
///
/// # Errors
/// As [`super::open`]; the database.
pub async fn participants(
    state: &AppState,
    principal: &Principal,
    id: &str,
) -> Result<Participants, AppError> {
    let opened = open(state, principal, id).await?;
    let db = state.db();
    let (members, people) = match (opened.chat.kind, &opened.collection) {
        (ChatKind::Direct, _) => (
            store::threads::members(db, &[opened.chat.id.as_str()])
                .await?
                .remove(&opened.chat.id)
                .unwrap_or_default(),
            store::threads::member_users(db, &opened.chat.id, 1000).await?,
        ),
        (ChatKind::Item, Some(collection)) => (
            Vec::new(),
            store::states::followers(db, &opened.chat.id, collection.id, 1000).await?,
        ),
        (ChatKind::Item, None) => (Vec::new(), Vec::new()),
    };
    Ok(Participants {
        members: members.into_iter().map(Into::into).collect(),
        users: people.into_iter().map(PersonResource::from).collect(),
    })
}

/// `PUT /chat/{chat}/participants` `{"user_ids", "group_ids"}`: a direct thread's new members.
/// Any member may add people; only the thread's creator may take people out (the creator
/// stays). Whoever loses access is unsubscribed from the thread's channel at once; the others
/// hear `ThreadUpserted`.
///
/// # Errors
/// As [`super::open`]; 422 for an item thread or a bad body; 403 when a member who did not
/// start the thread removes someone; the database.
pub async fn set_participants(
    state: &AppState,
    principal: &Principal,
    id: &str,
    body: &Json,
) -> Result<ThreadResource, AppError> {
    let opened = open(state, principal, id).await?;
    direct_only(&opened, "given members")?;
    let mut input = Input::new(body)?;
    let mut members = read_members(&mut input, principal);
    input.finish()?;
    let before = store::threads::member_set(state.db(), &opened.chat.id).await?;
    if let Some(creator) = opened.chat.created_by {
        members.users.insert(creator);
    }
    let removes = before.users.difference(&members.users).next().is_some()
        || before.groups.difference(&members.groups).next().is_some();
    if removes && opened.chat.created_by != Some(principal.user_id()) {
        return Err(refused(
            "only the creator takes people out of a conversation",
        ));
    }
    replace_members(state, &opened.chat, &members).await?;
    let thread = resource(state, principal, opened.chat).await?;
    announce(state, &thread, principal.user_id()).await?;
    Ok(thread)
}

/// Stores the new member set and unsubscribes whoever no longer takes part.
async fn replace_members(
    state: &AppState,
    chat: &ChatRow,
    members: &MemberSet,
) -> Result<(), AppError> {
    let db = state.db();
    let before = store::threads::member_users(db, &chat.id, super::MAX_NOTIFIED).await?;
    store::threads::set_members(db, &chat.id, members)
        .await
        .map_err(members_error)?;
    let after: std::collections::HashSet<i64> =
        store::threads::member_users(db, &chat.id, super::MAX_NOTIFIED)
            .await?
            .into_iter()
            .map(|p| p.id)
            .collect();
    let channel = chat_channel(&chat.id);
    for person in before.into_iter().filter(|p| !after.contains(&p.id)) {
        state
            .realtime()
            .revoke(&person.id.to_string(), Some(&channel))
            .await;
    }
    Ok(())
}

/// `POST /chat/{chat}/leave`: the user leaves a direct thread (the last one out deletes it).
///
/// # Errors
/// As [`super::open`]; 422 for an item thread, or when the user takes part through a group
/// only; the database.
pub async fn leave(state: &AppState, principal: &Principal, id: &str) -> Result<(), AppError> {
    let opened = open(state, principal, id).await?;
    direct_only(&opened, "left")?;
    let mut members = store::threads::member_set(state.db(), &opened.chat.id).await?;
    if !members.users.remove(&principal.user_id()) {
        return Err(AppError::invalid(
            "chat",
            "You take part through a group; ask for the group to be removed.",
        ));
    }
    if members.is_empty() {
        return remove(state, &opened.chat).await;
    }
    replace_members(state, &opened.chat, &members).await
}

/// `DELETE /chat/{chat}`: the creator deletes a direct thread with its messages and
/// attachments; everyone is unsubscribed.
///
/// # Errors
/// As [`super::open`]; 422 for an item thread; 403 for anyone but the creator; the database.
pub async fn delete_thread(
    state: &AppState,
    principal: &Principal,
    id: &str,
) -> Result<(), AppError> {
    let opened = open(state, principal, id).await?;
    direct_only(&opened, "deleted")?;
    if opened.chat.created_by != Some(principal.user_id()) {
        return Err(refused("only the creator deletes a conversation"));
    }
    remove(state, &opened.chat).await
}

async fn remove(state: &AppState, chat: &ChatRow) -> Result<(), AppError> {
    let db = state.db();
    let people = store::threads::member_users(db, &chat.id, super::MAX_NOTIFIED).await?;
    let keys = store::attachments::storage_keys(db, &chat.id, None).await?;
    store::threads::delete_chat(db, &chat.id).await?;
    crate::chat_bytes::forget_blobs(state, keys).await;
    let channel = chat_channel(&chat.id);
    for person in people {
        state
            .realtime()
            .revoke(&person.id.to_string(), Some(&channel))
            .await;
    }
    Ok(())
}

/// `PUT /collections/{collection}/chat/notify` `{"notify": bool}` (absent: toggle): whether the
/// user follows every item thread of the collection.
///
/// # Errors
/// 403 without `can-show-chat` or `can-show-collections`, 404 for an unknown collection, 422
/// for a bad body, the database.
pub async fn set_notify(
    state: &AppState,
    principal: &Principal,
    collection: &str,
    body: &Json,
) -> Result<bool, AppError> {
    principal.require(CHAT_PERMISSION)?;
    principal.require(ITEMS_PERMISSION)?;
    let collection = state
        .snapshot()
        .await?
        .collection(collection)
        .cloned()
        .ok_or(AppError::NotFound)?;
    let mut input = Input::new(body)?;
    let wanted = input.optional_bool("notify");
    input.finish()?;
    let user = principal.user_id();
    let on = match wanted {
        Some(on) => on,
        None => !store::states::notifies(state.db(), collection.id, user).await?,
    };
    store::states::set_notify(state.db(), collection.id, user, on).await?;
    Ok(on)
}
