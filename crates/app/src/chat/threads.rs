//! Threads: the hub, starting a thread, a thread with its latest messages, unread totals,
//! archive, members, leaving and deleting, and the per-collection follow switch.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value as Json;
use time::OffsetDateTime;
use vellum_storage::StorageError;
use vellum_storage::chat::{self as store, ChatKind, ChatListing, ChatRow, MemberSet, Tab};

use super::events;
use super::messages::{DEFAULT_MESSAGES, page_of_messages};
use super::resource::{MessageResource, PersonResource, ThreadExtras, ThreadResource, threads};
use super::{CHAT_PERMISSION, ITEMS_PERMISSION, MAX_MEMBERS, Opened, open};
use crate::context::AppState;
use crate::error::AppError;
use crate::input::Input;
use crate::paging::{Paginated, Paging};
use crate::principal::Principal;
use crate::query::{first, pairs};

/// Threads the unread total looks at, at most (the busiest first).
const MAX_UNREAD_THREADS: u64 = 500;

/// The hub's tabs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum HubTab {
    /// Item threads.
    Collection,
    /// Direct threads.
    Private,
}

impl HubTab {
    fn parse(raw: Option<&str>, fallback: Self) -> Result<Self, AppError> {
        match raw {
            None | Some("") => Ok(fallback),
            Some("collection") => Ok(Self::Collection),
            Some("private") => Ok(Self::Private),
            Some(_) => Err(AppError::invalid(
                "tab",
                "The tab must be collection or private.",
            )),
        }
    }
}

/// `GET /chat/unread-count`: unread messages by others, in total, per tab and per thread.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct UnreadCount {
    pub total: u64,
    pub collection: u64,
    pub private: u64,
    /// Per thread id, threads with unread messages only.
    pub chats: BTreeMap<String, u64>,
}

/// `GET /chat`: the hub's data.
#[derive(Debug, Clone, Serialize)]
pub struct Hub {
    pub tab: HubTab,
    pub archived: bool,
    pub threads: Paginated<ThreadResource>,
    pub unread: UnreadCount,
    /// Whether the user may read collection items (the collection tab and item threads).
    pub can_read_items: bool,
    /// The thread shown beside the list (`GET /chat/{chat}`).
    pub open: Option<ThreadView>,
}

/// A thread with its newest messages.
#[derive(Debug, Clone, Serialize)]
pub struct ThreadView {
    pub thread: ThreadResource,
    /// Oldest first.
    pub messages: Vec<MessageResource>,
    /// Whether older messages exist (`GET /chat/{chat}/messages?before=`).
    pub has_more: bool,
    pub pinned: Vec<MessageResource>,
    /// Whether the user follows every thread of the item's collection.
    pub notify: Option<bool>,
    /// Who wrote and may mention (pickers use it): the direct thread's people.
    pub people: Vec<PersonResource>,
}

struct HubQuery {
    tab: HubTab,
    /// Whether the query named the tab (or the archive).
    explicit: bool,
    archived: bool,
    collection: Option<String>,
    paging: Paging,
}

fn hub_query(query: &str, principal: &Principal) -> Result<HubQuery, AppError> {
    let pairs = pairs(query);
    let mut errors = vellum_domain::ValidationErrors::new();
    let paging = Paging::from_pairs(&pairs, &mut errors);
    errors.into_result(()).map_err(AppError::Invalid)?;
    let fallback = if principal.may(ITEMS_PERMISSION) {
        HubTab::Collection
    } else {
        HubTab::Private
    };
    let archived = first(&pairs, "archived").is_some_and(|v| matches!(v, "1" | "true"));
    // An archive holds direct threads only.
    let tab = if archived {
        HubTab::Private
    } else {
        HubTab::parse(first(&pairs, "tab"), fallback)?
    };
    Ok(HubQuery {
        explicit: archived || first(&pairs, "tab").is_some_and(|t| !t.is_empty()),
        tab,
        archived,
        collection: first(&pairs, "collection")
            .filter(|c| !c.is_empty())
            .map(str::to_owned),
        paging,
    })
}

/// `GET /chat/threads?tab=&archived=&collection=&page=&per_page=`: newest activity first.
/// `collection` lists item threads (of one collection by slug, when given) and needs
/// `can-show-collections` (an empty page without it); `private` the user's direct threads,
/// `archived=1` the archived ones.
///
/// # Errors
/// 403 without `can-show-chat`, 422 for a bad query, the database.
pub async fn list_threads(
    state: &AppState,
    principal: &Principal,
    query: &str,
) -> Result<Paginated<ThreadResource>, AppError> {
    principal.require(CHAT_PERMISSION)?;
    let query = hub_query(query, principal)?;
    page(state, principal, &query).await
}

async fn page(
    state: &AppState,
    principal: &Principal,
    query: &HubQuery,
) -> Result<Paginated<ThreadResource>, AppError> {
    let tab = match query.tab {
        HubTab::Private => Tab::Private {
            archived: query.archived,
        },
        HubTab::Collection => {
            let collection_id = match &query.collection {
                None => None,
                Some(slug) => Some(state.snapshot().await?.collection(slug).map_or(0, |c| c.id)),
            };
            Tab::Collection { collection_id }
        }
    };
    let listing = ChatListing {
        user_id: principal.user_id(),
        tab,
        page: query.paging.page,
        per_page: query.paging.per_page,
    };
    let mut stored = store::threads::list_chats(state.db(), &listing).await?;
    if query.tab == HubTab::Collection && !principal.may(ITEMS_PERMISSION) {
        stored.items.clear();
        stored.total = 0;
        stored.last_page = 1;
    }
    let summaries = std::mem::take(&mut stored.items);
    let rows: Vec<(ChatRow, ThreadExtras)> = summaries
        .into_iter()
        .map(|summary| {
            (
                summary.chat,
                ThreadExtras {
                    unread: summary.unread,
                    archived_at: summary.archived_at,
                    last_body: summary.last_body,
                },
            )
        })
        .collect();
    let resources = threads(state, principal.user_id(), rows).await?;
    Ok(Paginated {
        data: resources,
        meta: crate::items::PageMeta {
            current_page: stored.current_page,
            last_page: stored.last_page,
            per_page: stored.per_page,
            total: stored.total,
        },
    })
}

/// `GET /chat/unread-count`.
///
/// # Errors
/// 403 without `can-show-chat`, the database.
pub async fn unread_count(
    state: &AppState,
    principal: &Principal,
) -> Result<UnreadCount, AppError> {
    principal.require(CHAT_PERMISSION)?;
    let rows = store::states::unread(
        state.db(),
        principal.user_id(),
        principal.may(ITEMS_PERMISSION),
        MAX_UNREAD_THREADS,
    )
    .await?;
    let mut count = UnreadCount::default();
    for row in rows {
        count.total += row.unread;
        match row.kind {
            ChatKind::Item => count.collection += row.unread,
            ChatKind::Direct => count.private += row.unread,
        }
        count.chats.insert(row.chat_id, row.unread);
    }
    Ok(count)
}

/// `GET /chat` and `GET /chat/{chat}`: the hub, with one thread open when `chat` is given.
///
/// # Errors
/// 403 without `can-show-chat`, 404 for a thread the user cannot see, 422 for a bad query, the
/// database.
pub async fn hub(
    state: &AppState,
    principal: &Principal,
    chat: Option<&str>,
    query: &str,
) -> Result<Hub, AppError> {
    principal.require(CHAT_PERMISSION)?;
    let open_thread = match chat {
        Some(id) => Some(thread(state, principal, id).await?),
        None => None,
    };
    let mut query = hub_query(query, principal)?;
    if let Some(view) = &open_thread
        && !query.explicit
    {
        query.tab = if view.thread.kind == "item" {
            HubTab::Collection
        } else {
            HubTab::Private
        };
    }
    Ok(Hub {
        tab: query.tab,
        archived: query.archived,
        threads: page(state, principal, &query).await?,
        unread: unread_count(state, principal).await?,
        can_read_items: principal.may(ITEMS_PERMISSION),
        open: open_thread,
    })
}

/// One thread's resource for the viewer.
pub(crate) async fn resource(
    state: &AppState,
    principal: &Principal,
    chat: ChatRow,
) -> Result<ThreadResource, AppError> {
    let user = principal.user_id();
    let unread = store::states::unread_in(state.db(), &chat.id, &[user])
        .await?
        .first()
        .map_or(0, |(_, n)| *n);
    let archived_at = store::states::archived_at(state.db(), &chat.id, user).await?;
    let extras = ThreadExtras {
        unread,
        archived_at,
        last_body: None,
    };
    threads(state, user, vec![(chat, extras)])
        .await?
        .pop()
        .ok_or(AppError::NotFound)
}

async fn view(
    state: &AppState,
    principal: &Principal,
    opened: Opened,
) -> Result<ThreadView, AppError> {
    let (messages, has_more) =
        page_of_messages(state, &opened.chat.id, None, DEFAULT_MESSAGES).await?;
    let pinned = store::messages::list_messages(state.db(), &opened.chat.id, None, 50, true)
        .await?
        .into_iter()
        .map(MessageResource::from)
        .collect();
    let notify = match &opened.collection {
        Some(collection) => {
            Some(store::states::notifies(state.db(), collection.id, principal.user_id()).await?)
        }
        None => None,
    };
    let people = match opened.chat.kind {
        ChatKind::Direct => store::threads::member_users(state.db(), &opened.chat.id, 1000)
            .await?
            .into_iter()
            .map(PersonResource::from)
            .collect(),
        ChatKind::Item => Vec::new(),
    };
    Ok(ThreadView {
        thread: resource(state, principal, opened.chat).await?,
        messages,
        has_more,
        pinned,
        notify,
        people,
    })
}

/// A thread with its newest messages (the JSON of `GET /chat/{chat}`'s open thread).
///
/// # Errors
/// As [`super::open`]; the database.
pub async fn thread(
    state: &AppState,
    principal: &Principal,
    id: &str,
) -> Result<ThreadView, AppError> {
    let opened = open(state, principal, id).await?;
    view(state, principal, opened).await
}

/// `GET /collections/{collection}/items/{item}/chat`: the item's thread, or `null` before its
/// first message (a GET starts nothing).
///
/// # Errors
/// 403 without `can-show-chat` or `can-show-collections`, 404 for an unknown collection or item,
/// the database.
pub async fn item_thread(
    state: &AppState,
    principal: &Principal,
    collection: &str,
    item: &str,
) -> Result<Option<ThreadView>, AppError> {
    principal.require(CHAT_PERMISSION)?;
    principal.require(ITEMS_PERMISSION)?;
    let (collection, item_id) = item_target(state, collection, item).await?;
    match store::threads::item_chat(state.db(), item_id).await? {
        Some(chat) => {
            let opened = Opened {
                chat,
                collection: Some(collection),
            };
            Ok(Some(view(state, principal, opened).await?))
        }
        None => Ok(None),
    }
}

/// The collection and the live item a path names.
pub(crate) async fn item_target(
    state: &AppState,
    collection: &str,
    item: &str,
) -> Result<(std::sync::Arc<vellum_storage::model::Collection>, i64), AppError> {
    let snapshot = state.snapshot().await?;
    let collection = snapshot
        .collection(collection)
        .cloned()
        .ok_or(AppError::NotFound)?;
    let item_id: i64 = item.parse().map_err(|_| AppError::NotFound)?;
    if !store::threads::item_is_live(state.db(), collection.id, item_id).await? {
        return Err(AppError::NotFound);
    }
    Ok((collection, item_id))
}

/// The members a body names: `user_ids` and `group_ids` (the principal always added).
pub(super) fn read_members(input: &mut Input<'_>, principal: &Principal) -> MemberSet {
    let mut set = MemberSet {
        users: input
            .optional_ids("user_ids", MAX_MEMBERS)
            .unwrap_or_default()
            .into_iter()
            .collect(),
        groups: input
            .optional_ids("group_ids", MAX_MEMBERS)
            .unwrap_or_default()
            .into_iter()
            .collect(),
    };
    set.users.insert(principal.user_id());
    if set.len() > MAX_MEMBERS {
        input.error(
            "user_ids",
            format!("A conversation has at most {MAX_MEMBERS} members (users and groups)."),
        );
    }
    set
}

/// Unknown members are the caller's mistake (422), not a missing resource (404).
pub(super) fn members_error(err: StorageError) -> AppError {
    match err {
        StorageError::NotFound { what: "users" } => {
            AppError::invalid("user_ids", "A chosen user does not exist.")
        }
        StorageError::NotFound { what: "groups" } => {
            AppError::invalid("group_ids", "A chosen group does not exist.")
        }
        other => other.into(),
    }
}

/// `POST /chat/threads`: `{"kind": "item", "collection", "item_id"}` or `{"kind": "direct",
/// "user_ids", "group_ids"}`. The item's thread is started on first use; a direct thread with
/// exactly these members (the creator included) is reused. `true` when a thread was started.
/// The other members hear `ThreadUpserted`.
///
/// # Errors
/// 403 without `can-show-chat` (and `can-show-collections` for an item thread), 404 for an
/// unknown collection or item, 422 for a bad body or unknown members, the database.
pub async fn start(
    state: &AppState,
    principal: &Principal,
    body: &Json,
) -> Result<(ThreadResource, bool), AppError> {
    principal.require(CHAT_PERMISSION)?;
    let mut input = Input::new(body)?;
    let kind = input.required_str("kind", 16);
    match kind.map(ChatKind::parse) {
        Some(Some(ChatKind::Item)) => {
            principal.require(ITEMS_PERMISSION)?;
            let collection = input.required_str("collection", 255);
            let item_id = match input.raw("item_id") {
                Some(Json::Number(n)) => n.as_i64().filter(|id| *id > 0),
                Some(Json::String(s)) => s.parse().ok().filter(|id: &i64| *id > 0),
                _ => None,
            };
            if item_id.is_none() {
                input.error("item_id", "The item id must be a positive integer.");
            }
            input.finish()?;
            let (Some(collection), Some(item_id)) = (collection, item_id) else {
                return Err(AppError::invalid(
                    "item_id",
                    "The item id field is required.",
                ));
            };
            let (collection, item_id) =
                item_target(state, collection, &item_id.to_string()).await?;
            let existed = store::threads::item_chat(state.db(), item_id)
                .await?
                .is_some();
            let chat = store::threads::item_chat_or_start(
                state.db(),
                collection.id,
                item_id,
                principal.user_id(),
                OffsetDateTime::now_utc(),
            )
            .await?;
            Ok((resource(state, principal, chat).await?, !existed))
        }
        Some(Some(ChatKind::Direct)) => {
            let members = read_members(&mut input, principal);
            if members.len() < 2 {
                input.error("user_ids", "Choose at least one other person or a group.");
            }
            input.finish()?;
            let (chat, created) = store::threads::direct_chat_or_start(
                state.db(),
                &members,
                principal.user_id(),
                OffsetDateTime::now_utc(),
            )
            .await
            .map_err(members_error)?;
            let thread = resource(state, principal, chat).await?;
            if created {
                announce(state, &thread, principal.user_id()).await?;
            }
            Ok((thread, created))
        }
        Some(None) => {
            input.error("kind", "The kind must be item or direct.");
            input.finish()?;
            Err(AppError::invalid(
                "kind",
                "The kind must be item or direct.",
            ))
        }
        None => {
            input.finish()?;
            Err(AppError::invalid("kind", "The kind field is required."))
        }
    }
}

/// `ThreadUpserted` to every member but `except`.
pub(super) async fn announce(
    state: &AppState,
    thread: &ThreadResource,
    except: i64,
) -> Result<(), AppError> {
    let users: Vec<i64> = store::threads::member_users(state.db(), &thread.id, super::MAX_NOTIFIED)
        .await?
        .into_iter()
        .map(|p| p.id)
        .filter(|id| *id != except)
        .collect();
    let mut shared = thread.clone();
    shared.unread = 0;
    shared.archived_at = Json::Null;
    events::thread_upserted(state, &shared, &users).await;
    Ok(())
}
