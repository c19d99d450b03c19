//! Chat threads: find, create (an item's thread on first use; a direct thread deduplicated by
//! its member set), members, the hub's pages with unread counts, delete.

use std::collections::{BTreeSet, HashMap};

use sea_orm::{ConnectionTrait, FromQueryResult, TransactionSession, TransactionTrait};
use time::OffsetDateTime;
use tracing::instrument;

use super::{ChatKind, Person, at, push_member_of, states};
use crate::StorageError;
use crate::items::Page;
use crate::sql::{Sql, begin_write, id_param};

/// A thread as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatRow {
    pub id: String,
    pub kind: ChatKind,
    pub collection_id: Option<i64>,
    pub item_id: Option<i64>,
    pub created_by: Option<i64>,
    pub created_at: OffsetDateTime,
    pub last_message_at: Option<OffsetDateTime>,
}

#[derive(FromQueryResult)]
struct Row {
    id: String,
    kind: String,
    collection_id: Option<i32>,
    item_id: Option<i32>,
    created_by: Option<i32>,
    created_at: OffsetDateTime,
    last_message_at: Option<OffsetDateTime>,
}

impl TryFrom<Row> for ChatRow {
    type Error = StorageError;

    fn try_from(row: Row) -> Result<Self, StorageError> {
        Ok(Self {
            kind: ChatKind::parse(&row.kind)
                .ok_or_else(|| StorageError::corrupt(format!("chat kind {}", row.kind)))?,
            id: row.id,
            collection_id: row.collection_id.map(i64::from),
            item_id: row.item_id.map(i64::from),
            created_by: row.created_by.map(i64::from),
            created_at: row.created_at,
            last_message_at: row.last_message_at,
        })
    }
}

const COLUMNS: &str = "c.id, c.kind, c.collection_id, c.item_id, c.created_by, c.created_at, \
     c.last_message_at";

/// A direct thread's chosen users and groups; its canonical text is the dedupe key.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MemberSet {
    pub users: BTreeSet<i64>,
    pub groups: BTreeSet<i64>,
}

impl MemberSet {
    /// `g:1,g:4,u:2,u:7`: groups then users, each ascending.
    #[must_use]
    pub fn key(&self) -> String {
        let groups = self.groups.iter().map(|id| format!("g:{id}"));
        let users = self.users.iter().map(|id| format!("u:{id}"));
        groups.chain(users).collect::<Vec<_>>().join(",")
    }

    #[must_use]
    pub fn len(&self) -> usize {
        self.users.len() + self.groups.len()
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// One member of a direct thread, with its name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MemberRow {
    User(Person),
    Group(Person),
}

async fn one<C: ConnectionTrait>(db: &C, sql: Sql) -> Result<Option<ChatRow>, StorageError> {
    sql.one_as::<Row, _>(db)
        .await?
        .map(ChatRow::try_from)
        .transpose()
}

/// The thread `id` and whether user `user_id` takes part in it (a direct thread's member), in
/// one query: what every chat request reads first.
///
/// # Errors
/// A database error.
#[instrument(skip_all, err, fields(user_id))]
pub async fn find_chat_for<C: ConnectionTrait>(
    db: &C,
    id: &str,
    user_id: i64,
) -> Result<Option<(ChatRow, bool)>, StorageError> {
    #[derive(FromQueryResult)]
    struct WithMembership {
        id: String,
        kind: String,
        collection_id: Option<i32>,
        item_id: Option<i32>,
        created_by: Option<i32>,
        created_at: OffsetDateTime,
        last_message_at: Option<OffsetDateTime>,
        member: bool,
    }
    let uid = id_param(user_id).unwrap_or(0);
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("SELECT ").push(COLUMNS).push(", ");
    push_member_of(&mut sql, uid);
    sql.push(" AS member FROM chats c WHERE c.id = ").bind(id);
    let Some(row) = sql.one_as::<WithMembership, _>(db).await? else {
        return Ok(None);
    };
    let member = row.member;
    let chat = ChatRow::try_from(Row {
        id: row.id,
        kind: row.kind,
        collection_id: row.collection_id,
        item_id: row.item_id,
        created_by: row.created_by,
        created_at: row.created_at,
        last_message_at: row.last_message_at,
    })?;
    Ok(Some((chat, member)))
}

/// The thread of item `item_id`, if it was started.
///
/// # Errors
/// A database error.
#[instrument(skip_all, err, fields(item_id))]
pub async fn item_chat<C: ConnectionTrait>(
    db: &C,
    item_id: i64,
) -> Result<Option<ChatRow>, StorageError> {
    let Some(item) = id_param(item_id) else {
        return Ok(None);
    };
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("SELECT ")
        .push(COLUMNS)
        .push(" FROM chats c WHERE c.item_id = ")
        .bind(item);
    one(db, sql).await
}

/// The thread of the live item `item_id` of collection `collection_id`, started now when it
/// was not (two first posts at once get one thread: the unique index on `item_id` decides).
///
/// # Errors
/// [`StorageError::NotFound`] when the collection has no such live item; a database error.
#[instrument(skip_all, err, fields(collection_id, item_id))]
pub async fn item_chat_or_start<C: ConnectionTrait>(
    db: &C,
    collection_id: i64,
    item_id: i64,
    by: i64,
    now: OffsetDateTime,
) -> Result<ChatRow, StorageError> {
    if let Some(found) = item_chat(db, item_id).await? {
        return Ok(found);
    }
    let (Some(collection), Some(item)) = (id_param(collection_id), id_param(item_id)) else {
        return Err(StorageError::NotFound { what: "item" });
    };
    let mut sql = Sql::new(db.get_database_backend());
    sql.push(
        "INSERT INTO chats (id, kind, collection_id, item_id, created_by, created_at) SELECT ",
    )
    .bind(uuid::Uuid::new_v4().to_string())
    .push(", 'item', collection_id, id, ")
    .bind(id_param(by))
    .push(", ")
    .bind(at(now))
    .push(" FROM items WHERE deleted_at IS NULL AND id = ")
    .bind(item)
    .push(" AND collection_id = ")
    .bind(collection)
    .push(" ON CONFLICT DO NOTHING");
    sql.execute(db).await?;
    item_chat(db, item_id)
        .await?
        .filter(|chat| chat.collection_id == Some(collection_id))
        .ok_or(StorageError::NotFound { what: "item" })
}

/// The direct thread among exactly `members`, started now (by `by`, who must be among them)
/// when there is none. `true` with a thread just started.
///
/// # Errors
/// [`StorageError::NotFound`] naming `users` or `groups` when a member is unknown or deleted;
/// a database error.
#[instrument(skip_all, err, fields(members = members.len()))]
pub async fn direct_chat_or_start<C: ConnectionTrait + TransactionTrait>(
    db: &C,
    members: &MemberSet,
    by: i64,
    now: OffsetDateTime,
) -> Result<(ChatRow, bool), StorageError> {
    let key = members.key();
    if let Some(found) = by_key(db, &key).await? {
        return Ok((found, false));
    }
    let txn = begin_write(db).await?;
    let id = uuid::Uuid::new_v4().to_string();
    let mut sql = Sql::new(txn.get_database_backend());
    sql.push("INSERT INTO chats (id, kind, members_key, created_by, created_at) VALUES (")
        .bind(id.as_str())
        .push(", 'direct', ")
        .bind(key.as_str())
        .push(", ")
        .bind(id_param(by))
        .push(", ")
        .bind(at(now))
        .push(") ON CONFLICT DO NOTHING");
    if sql.execute(&txn).await? == 0 {
        txn.rollback().await?;
        let found = by_key(db, &key).await?;
        return found
            .map(|chat| (chat, false))
            .ok_or_else(|| StorageError::corrupt("a direct thread vanished while it was started"));
    }
    insert_members(&txn, &id, members).await?;
    let chat = by_key(&txn, &key)
        .await?
        .ok_or_else(|| StorageError::corrupt("a direct thread just started cannot be read"))?;
    txn.commit().await?;
    Ok((chat, true))
}

async fn by_key<C: ConnectionTrait>(db: &C, key: &str) -> Result<Option<ChatRow>, StorageError> {
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("SELECT ")
        .push(COLUMNS)
        .push(" FROM chats c WHERE c.members_key = ")
        .bind(key);
    one(db, sql).await
}

/// Inserts the member rows from the live users and groups only, and fails when one is missing.
async fn insert_members<C: ConnectionTrait>(
    db: &C,
    chat_id: &str,
    members: &MemberSet,
) -> Result<(), StorageError> {
    for (column, table, ids) in [
        ("user_id", "users", &members.users),
        ("group_id", "\"groups\"", &members.groups),
    ] {
        if ids.is_empty() {
            continue;
        }
        let ids: Vec<i32> = ids.iter().filter_map(|id| id_param(*id)).collect();
        let mut sql = Sql::new(db.get_database_backend());
        sql.push("INSERT INTO chat_members (chat_id, ")
            .push(column)
            .push(") SELECT ")
            .bind(chat_id)
            .push(", id FROM ")
            .push(table)
            .push(" WHERE deleted_at IS NULL AND id IN ");
        sql.bind_list(ids.iter().copied());
        let wanted = if column == "user_id" {
            members.users.len()
        } else {
            members.groups.len()
        };
        if usize::try_from(sql.execute(db).await?).ok() != Some(wanted) {
            return Err(StorageError::NotFound {
                what: if column == "user_id" {
                    "users"
                } else {
                    "groups"
                },
            });
        }
    }
    Ok(())
}

/// Replaces a direct thread's members and its dedupe key. When another direct thread already
/// has exactly the new members, this one gives up its key (it stays, but starting a thread
/// with these members finds the other one), so a change of members is never refused for it.
///
/// # Errors
/// [`StorageError::NotFound`] for an unknown or deleted member or an unknown thread; a database
/// error.
#[instrument(skip_all, err, fields(members = members.len()))]
pub async fn set_members<C: ConnectionTrait + TransactionTrait>(
    db: &C,
    chat_id: &str,
    members: &MemberSet,
) -> Result<(), StorageError> {
    let key = members.key();
    let txn = begin_write(db).await?;
    let taken = by_key(&txn, &key)
        .await?
        .is_some_and(|other| other.id != chat_id);
    let mut sql = Sql::new(txn.get_database_backend());
    sql.push("UPDATE chats SET members_key = ")
        .bind((!taken).then_some(key))
        .push(" WHERE kind = 'direct' AND id = ")
        .bind(chat_id);
    if sql.execute(&txn).await? == 0 {
        return Err(StorageError::NotFound { what: "chat" });
    }
    let mut sql = Sql::new(txn.get_database_backend());
    sql.push("DELETE FROM chat_members WHERE chat_id = ")
        .bind(chat_id);
    sql.execute(&txn).await?;
    insert_members(&txn, chat_id, members).await?;
    txn.commit().await?;
    Ok(())
}

/// A direct thread's chosen members as a set.
///
/// # Errors
/// A database error.
pub async fn member_set<C: ConnectionTrait>(
    db: &C,
    chat_id: &str,
) -> Result<MemberSet, StorageError> {
    let mut set = MemberSet::default();
    for member in members(db, &[chat_id])
        .await?
        .remove(chat_id)
        .unwrap_or_default()
    {
        match member {
            MemberRow::User(p) => set.users.insert(p.id),
            MemberRow::Group(p) => set.groups.insert(p.id),
        };
    }
    Ok(set)
}

/// The live users among `ids`, by id.
///
/// # Errors
/// A database error.
pub async fn users_named<C: ConnectionTrait>(
    db: &C,
    ids: &[i64],
) -> Result<Vec<Person>, StorageError> {
    named(db, "users", ids).await
}

/// The live groups among `ids`, by id.
///
/// # Errors
/// A database error.
pub async fn groups_named<C: ConnectionTrait>(
    db: &C,
    ids: &[i64],
) -> Result<Vec<Person>, StorageError> {
    named(db, "\"groups\"", ids).await
}

async fn named<C: ConnectionTrait>(
    db: &C,
    table: &str,
    ids: &[i64],
) -> Result<Vec<Person>, StorageError> {
    let ids: Vec<i32> = ids.iter().filter_map(|id| id_param(*id)).collect();
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("SELECT id, name FROM ")
        .push(table)
        .push(" WHERE deleted_at IS NULL AND id IN ");
    sql.bind_list(ids);
    sql.push(" ORDER BY id");
    people(db, sql).await
}

/// The live members of the live groups `group_ids`, at most `limit`, by id.
///
/// # Errors
/// A database error.
pub async fn group_users<C: ConnectionTrait>(
    db: &C,
    group_ids: &[i64],
    limit: u64,
) -> Result<Vec<Person>, StorageError> {
    let ids: Vec<i32> = group_ids.iter().filter_map(|id| id_param(*id)).collect();
    if ids.is_empty() || limit == 0 {
        return Ok(Vec::new());
    }
    let mut sql = Sql::new(db.get_database_backend());
    sql.push(
        "SELECT u.id, u.name FROM users u WHERE u.deleted_at IS NULL AND u.id IN \
         (SELECT gu.user_id FROM group_users gu JOIN \"groups\" g ON g.id = gu.group_id \
         WHERE g.deleted_at IS NULL AND gu.group_id IN ",
    );
    sql.bind_list(ids);
    sql.push(") ORDER BY u.id LIMIT ")
        .bind(i64::try_from(limit).unwrap_or(i64::MAX));
    people(db, sql).await
}

/// The chosen members of each of the direct threads (groups first, then users, by name).
///
/// # Errors
/// A database error.
#[instrument(skip_all, err, fields(chats = chat_ids.len()))]
pub async fn members<C: ConnectionTrait>(
    db: &C,
    chat_ids: &[&str],
) -> Result<HashMap<String, Vec<MemberRow>>, StorageError> {
    #[derive(FromQueryResult)]
    struct Member {
        chat_id: String,
        user_id: Option<i32>,
        group_id: Option<i32>,
        name: String,
    }
    let mut found: HashMap<String, Vec<MemberRow>> = HashMap::new();
    if chat_ids.is_empty() {
        return Ok(found);
    }
    let mut sql = Sql::new(db.get_database_backend());
    sql.push(
        "SELECT m.chat_id, m.user_id, m.group_id, COALESCE(u.name, g.name, '') AS name \
         FROM chat_members m LEFT JOIN users u ON u.id = m.user_id \
         LEFT JOIN \"groups\" g ON g.id = m.group_id WHERE m.chat_id IN ",
    );
    sql.bind_list(chat_ids.iter().copied());
    sql.push(" ORDER BY m.chat_id, m.user_id IS NOT NULL, COALESCE(u.name, g.name), m.id");
    for row in sql.all_as::<Member, _>(db).await? {
        let person = |id: i32| Person {
            id: i64::from(id),
            name: row.name.clone(),
        };
        let member = match (row.user_id, row.group_id) {
            (Some(id), _) => MemberRow::User(person(id)),
            (None, Some(id)) => MemberRow::Group(person(id)),
            (None, None) => continue,
        };
        found.entry(row.chat_id).or_default().push(member);
    }
    Ok(found)
}

/// Every live user taking part in a direct thread: named members and the members of its
/// groups, at most `limit`, by id.
///
/// # Errors
/// A database error.
#[instrument(skip_all, err)]
pub async fn member_users<C: ConnectionTrait>(
    db: &C,
    chat_id: &str,
    limit: u64,
) -> Result<Vec<Person>, StorageError> {
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("SELECT u.id, u.name FROM users u WHERE u.deleted_at IS NULL AND u.id IN (SELECT m.user_id FROM chat_members m WHERE m.chat_id = ")
        .bind(chat_id)
        .push(
            " AND m.user_id IS NOT NULL UNION SELECT gu.user_id FROM chat_members m \
             JOIN \"groups\" g ON g.id = m.group_id AND g.deleted_at IS NULL \
             JOIN group_users gu ON gu.group_id = g.id WHERE m.chat_id = ",
        )
        .bind(chat_id)
        .push(") ORDER BY u.id LIMIT ")
        .bind(i64::try_from(limit).unwrap_or(i64::MAX));
    people(db, sql).await
}

pub(crate) async fn people<C: ConnectionTrait>(
    db: &C,
    sql: Sql,
) -> Result<Vec<Person>, StorageError> {
    #[derive(FromQueryResult)]
    struct PersonRow {
        id: i32,
        name: String,
    }
    Ok(sql
        .all_as::<PersonRow, _>(db)
        .await?
        .into_iter()
        .map(|row| Person {
            id: i64::from(row.id),
            name: row.name,
        })
        .collect())
}

/// Whether collection `collection_id` has the live (not deleted) item `item_id`.
///
/// # Errors
/// A database error.
pub async fn item_is_live<C: ConnectionTrait>(
    db: &C,
    collection_id: i64,
    item_id: i64,
) -> Result<bool, StorageError> {
    let (Some(collection), Some(item)) = (id_param(collection_id), id_param(item_id)) else {
        return Ok(false);
    };
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("SELECT id FROM items WHERE deleted_at IS NULL AND id = ")
        .bind(item)
        .push(" AND collection_id = ")
        .bind(collection);
    Ok(!sql.all(db).await?.is_empty())
}

/// Deletes a thread with its messages, reactions, states and attachments' rows (the caller
/// removes the attachments' bytes, listed first with [`super::attachments::storage_keys`]).
///
/// # Errors
/// [`StorageError::NotFound`] for an unknown thread; a database error.
#[instrument(skip_all, err)]
pub async fn delete_chat<C: ConnectionTrait>(db: &C, chat_id: &str) -> Result<(), StorageError> {
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("DELETE FROM chats WHERE id = ").bind(chat_id);
    if sql.execute(db).await? == 0 {
        return Err(StorageError::NotFound { what: "chat" });
    }
    Ok(())
}

/// Which threads a hub page lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tab {
    /// Item threads that have messages, of live items (optionally of one collection).
    Collection { collection_id: Option<i64> },
    /// The user's direct threads, archived or not.
    Private { archived: bool },
}

/// A hub page's query.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChatListing {
    pub user_id: i64,
    pub tab: Tab,
    pub page: u64,
    pub per_page: u64,
}

/// A thread as the hub lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatSummary {
    pub chat: ChatRow,
    /// Messages by others after what the user read (0 for an item thread the user does not
    /// follow).
    pub unread: u64,
    pub archived_at: Option<OffsetDateTime>,
    pub last_body: Option<String>,
}

#[derive(FromQueryResult)]
struct SummaryRow {
    id: String,
    kind: String,
    collection_id: Option<i32>,
    item_id: Option<i32>,
    created_by: Option<i32>,
    created_at: OffsetDateTime,
    last_message_at: Option<OffsetDateTime>,
    unread: i64,
    archived_at: Option<OffsetDateTime>,
    last_body: Option<String>,
}

fn push_listing_from(sql: &mut Sql, listing: &ChatListing, uid: i32) {
    sql.push(" FROM chats c LEFT JOIN chat_user_states s ON s.chat_id = c.id AND s.user_id = ")
        .bind(uid);
    match listing.tab {
        Tab::Collection { collection_id } => {
            sql.push(
                " JOIN items i ON i.id = c.item_id AND i.deleted_at IS NULL \
                 WHERE c.kind = 'item' AND c.last_message_at IS NOT NULL",
            );
            if let Some(collection) = collection_id {
                sql.push(" AND c.collection_id = ")
                    .bind(id_param(collection).unwrap_or(0));
            }
        }
        Tab::Private { archived } => {
            sql.push(" WHERE c.kind = 'direct' AND ");
            push_member_of(sql, uid);
            sql.push(if archived {
                " AND s.archived_at IS NOT NULL"
            } else {
                " AND s.archived_at IS NULL"
            });
        }
    }
}

/// A page of the hub: newest activity first, each thread with the user's unread count and the
/// last message's body.
///
/// # Errors
/// A database error.
#[instrument(skip_all, err, fields(user_id = listing.user_id))]
pub async fn list_chats<C: ConnectionTrait>(
    db: &C,
    listing: &ChatListing,
) -> Result<Page<ChatSummary>, StorageError> {
    let uid = id_param(listing.user_id).unwrap_or(0);
    let backend = db.get_database_backend();
    let mut count = Sql::new(backend);
    count.push("SELECT COUNT(*) AS n");
    push_listing_from(&mut count, listing, uid);
    let total = count.count(db).await?;

    let mut sql = Sql::new(backend);
    sql.push("SELECT ").push(COLUMNS).push(", ");
    states::push_unread(&mut sql, uid);
    sql.push(
        " AS unread, s.archived_at, (SELECT lm.body FROM chat_messages lm \
         WHERE lm.chat_id = c.id ORDER BY lm.id DESC LIMIT 1) AS last_body",
    );
    push_listing_from(&mut sql, listing, uid);
    let per_page = listing.per_page.max(1);
    let offset = listing.page.saturating_sub(1).saturating_mul(per_page);
    sql.push(" ORDER BY COALESCE(c.last_message_at, c.created_at) DESC, c.id DESC LIMIT ")
        .bind(i64::try_from(per_page).unwrap_or(i64::MAX))
        .push(" OFFSET ")
        .bind(i64::try_from(offset).unwrap_or(i64::MAX));
    let mut items = Vec::new();
    for row in sql.all_as::<SummaryRow, _>(db).await? {
        let chat = ChatRow::try_from(Row {
            id: row.id,
            kind: row.kind,
            collection_id: row.collection_id,
            item_id: row.item_id,
            created_by: row.created_by,
            created_at: row.created_at,
            last_message_at: row.last_message_at,
        })?;
        items.push(ChatSummary {
            chat,
            unread: u64::try_from(row.unread).unwrap_or(0),
            archived_at: row.archived_at,
            last_body: row.last_body,
        });
    }
    Ok(Page::new(items, total, listing.page.max(1), per_page))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_member_key_is_canonical() {
        let set = MemberSet {
            users: [7, 2].into_iter().collect(),
            groups: [4, 1].into_iter().collect(),
        };
        assert_eq!(set.key(), "g:1,g:4,u:2,u:7");
        assert_eq!(set.len(), 4);
        assert_eq!(MemberSet::default().key(), "");
    }
}
