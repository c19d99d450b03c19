//! What each user has read in a thread, whether the user archived it (direct threads) or follows
//! it (item threads), the unread counts the badges show, and per-collection follow opt-ins.
//!
//! A message is unread for a user when it is by someone else and newer than the user's
//! `last_read_id`. Direct threads count for every member; an item thread counts for a user who
//! follows it (posted in it or was mentioned) or follows its collection (`PUT …/chat/notify`).

use sea_orm::{ConnectionTrait, FromQueryResult};
use time::OffsetDateTime;
use tracing::instrument;

use super::{Person, at, push_member_of, threads::people};
use crate::StorageError;
use crate::sql::{Sql, id_param};

/// Appends the count of user `uid`'s unread messages in thread `c` (joined with the user's state
/// row as `s`).
pub(crate) fn push_unread(sql: &mut Sql, uid: i32) {
    sql.push(
        "(CASE WHEN c.kind = 'direct' OR s.following = TRUE OR EXISTS (SELECT 1 FROM \
         chat_collection_notify cn WHERE cn.collection_id = c.collection_id AND cn.user_id = ",
    )
    .bind(uid)
    .push(
        ") THEN (SELECT COUNT(*) FROM chat_messages um WHERE um.chat_id = c.id \
         AND um.id > COALESCE(s.last_read_id, 0) AND (um.user_id IS NULL OR um.user_id <> ",
    )
    .bind(uid)
    .push(")) ELSE 0 END)");
}

/// Upserts the user's state row with `set` applied (a fragment of `SET`, constants only).
async fn upsert<C: ConnectionTrait>(
    db: &C,
    chat_id: &str,
    uid: i32,
    insert: (&str, sea_orm::Value),
    set: &str,
) -> Result<(), StorageError> {
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("INSERT INTO chat_user_states (chat_id, user_id, ")
        .push(insert.0)
        .push(") VALUES (")
        .bind(chat_id)
        .push(", ")
        .bind(uid)
        .push(", ")
        .bind(insert.1)
        .push(") ON CONFLICT (chat_id, user_id) DO UPDATE SET ")
        .push(set);
    sql.execute(db).await?;
    Ok(())
}

/// Records that the user read thread `chat_id` up to message `up_to` (never moves back).
///
/// # Errors
/// A database error.
#[instrument(skip_all, err, fields(user_id, up_to))]
pub async fn mark_read<C: ConnectionTrait>(
    db: &C,
    chat_id: &str,
    user_id: i64,
    up_to: i64,
) -> Result<(), StorageError> {
    let Some(uid) = id_param(user_id) else {
        return Ok(());
    };
    upsert(
        db,
        chat_id,
        uid,
        ("last_read_id", up_to.into()),
        "last_read_id = CASE WHEN excluded.last_read_id > chat_user_states.last_read_id \
         THEN excluded.last_read_id ELSE chat_user_states.last_read_id END",
    )
    .await
}

/// Archives (with the time) or unarchives the thread for the user.
///
/// # Errors
/// A database error.
#[instrument(skip_all, err, fields(user_id))]
pub async fn set_archived<C: ConnectionTrait>(
    db: &C,
    chat_id: &str,
    user_id: i64,
    archived_at: Option<OffsetDateTime>,
) -> Result<(), StorageError> {
    let Some(uid) = id_param(user_id) else {
        return Ok(());
    };
    upsert(
        db,
        chat_id,
        uid,
        ("archived_at", archived_at.map(at).into()),
        "archived_at = excluded.archived_at",
    )
    .await
}

/// The user's archive time of the thread, if archived.
///
/// # Errors
/// A database error.
pub async fn archived_at<C: ConnectionTrait>(
    db: &C,
    chat_id: &str,
    user_id: i64,
) -> Result<Option<OffsetDateTime>, StorageError> {
    #[derive(FromQueryResult)]
    struct Archived {
        archived_at: Option<OffsetDateTime>,
    }
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("SELECT archived_at FROM chat_user_states WHERE chat_id = ")
        .bind(chat_id)
        .push(" AND user_id = ")
        .bind(id_param(user_id).unwrap_or(0));
    Ok(sql
        .one_as::<Archived, _>(db)
        .await?
        .and_then(|row| row.archived_at))
}

/// Makes the users follow the (item) thread: its messages count as unread for them.
///
/// # Errors
/// A database error.
#[instrument(skip_all, err, fields(users = user_ids.len()))]
pub async fn follow<C: ConnectionTrait>(
    db: &C,
    chat_id: &str,
    user_ids: &[i64],
) -> Result<(), StorageError> {
    for uid in user_ids.iter().filter_map(|id| id_param(*id)) {
        upsert(
            db,
            chat_id,
            uid,
            ("following", true.into()),
            "following = TRUE",
        )
        .await?;
    }
    Ok(())
}

/// Clears `archived_at` for every user of the thread but `except` (a new message brings an
/// archived conversation back for its recipients).
///
/// # Errors
/// A database error.
pub async fn unarchive_for_others<C: ConnectionTrait>(
    db: &C,
    chat_id: &str,
    except: i64,
) -> Result<(), StorageError> {
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("UPDATE chat_user_states SET archived_at = NULL WHERE chat_id = ")
        .bind(chat_id)
        .push(" AND archived_at IS NOT NULL AND user_id <> ")
        .bind(id_param(except).unwrap_or(0));
    sql.execute(db).await?;
    Ok(())
}

/// One thread's unread count for a user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnreadRow {
    pub chat_id: String,
    pub kind: super::ChatKind,
    pub unread: u64,
}

/// Every thread with unread messages for the user (item threads only when `with_items`: the
/// user may read collection items), most unread first, at most `limit`.
///
/// # Errors
/// A database error.
#[instrument(skip_all, err, fields(user_id))]
pub async fn unread<C: ConnectionTrait>(
    db: &C,
    user_id: i64,
    with_items: bool,
    limit: u64,
) -> Result<Vec<UnreadRow>, StorageError> {
    #[derive(FromQueryResult)]
    struct Row {
        chat_id: String,
        kind: String,
        unread: i64,
    }
    let Some(uid) = id_param(user_id) else {
        return Ok(Vec::new());
    };
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("SELECT chat_id, kind, unread FROM (SELECT c.id AS chat_id, c.kind, ");
    push_unread(&mut sql, uid);
    sql.push(
        " AS unread FROM chats c LEFT JOIN chat_user_states s ON s.chat_id = c.id AND s.user_id = ",
    )
    .bind(uid)
    .push(" WHERE (c.kind = 'direct' AND ");
    push_member_of(&mut sql, uid);
    sql.push(")");
    if with_items {
        sql.push(
            " OR (c.kind = 'item' AND EXISTS (SELECT 1 FROM items i WHERE i.id = c.item_id \
             AND i.deleted_at IS NULL) AND (s.following = TRUE OR c.collection_id IN \
             (SELECT cn.collection_id FROM chat_collection_notify cn WHERE cn.user_id = ",
        )
        .bind(uid)
        .push(")))");
    }
    sql.push(") counted WHERE unread > 0 ORDER BY unread DESC, chat_id LIMIT ")
        .bind(i64::try_from(limit).unwrap_or(i64::MAX));
    sql.all_as::<Row, _>(db)
        .await?
        .into_iter()
        .map(|row| {
            Ok(UnreadRow {
                kind: super::ChatKind::parse(&row.kind)
                    .ok_or_else(|| StorageError::corrupt(format!("chat kind {}", row.kind)))?,
                chat_id: row.chat_id,
                unread: u64::try_from(row.unread).unwrap_or(0),
            })
        })
        .collect()
}

/// Each of `user_ids`' unread count in one thread, in one query.
///
/// # Errors
/// A database error.
#[instrument(skip_all, err, fields(users = user_ids.len()))]
pub async fn unread_in<C: ConnectionTrait>(
    db: &C,
    chat_id: &str,
    user_ids: &[i64],
) -> Result<Vec<(i64, u64)>, StorageError> {
    #[derive(FromQueryResult)]
    struct Row {
        id: i32,
        unread: i64,
    }
    let ids: Vec<i32> = user_ids.iter().filter_map(|id| id_param(*id)).collect();
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let mut sql = Sql::new(db.get_database_backend());
    sql.push(
        "SELECT u.id, (SELECT COUNT(*) FROM chat_messages um WHERE um.chat_id = ",
    )
    .bind(chat_id)
    .push(
        " AND um.id > COALESCE(s.last_read_id, 0) AND (um.user_id IS NULL OR um.user_id <> u.id)) \
         AS unread FROM users u LEFT JOIN chat_user_states s ON s.user_id = u.id AND s.chat_id = ",
    )
    .bind(chat_id)
    .push(" WHERE u.id IN ");
    sql.bind_list(ids);
    Ok(sql
        .all_as::<Row, _>(db)
        .await?
        .into_iter()
        .map(|row| (i64::from(row.id), u64::try_from(row.unread).unwrap_or(0)))
        .collect())
}

/// The live users who follow item thread `chat_id` (themselves or through its collection), at
/// most `limit`.
///
/// # Errors
/// A database error.
#[instrument(skip_all, err)]
pub async fn followers<C: ConnectionTrait>(
    db: &C,
    chat_id: &str,
    collection_id: i64,
    limit: u64,
) -> Result<Vec<Person>, StorageError> {
    let mut sql = Sql::new(db.get_database_backend());
    sql.push(
        "SELECT u.id, u.name FROM users u WHERE u.deleted_at IS NULL AND u.id IN \
         (SELECT s.user_id FROM chat_user_states s WHERE s.following = TRUE AND s.chat_id = ",
    )
    .bind(chat_id)
    .push(" UNION SELECT cn.user_id FROM chat_collection_notify cn WHERE cn.collection_id = ")
    .bind(id_param(collection_id).unwrap_or(0))
    .push(") ORDER BY u.id LIMIT ")
    .bind(i64::try_from(limit).unwrap_or(i64::MAX));
    people(db, sql).await
}

/// Whether the user follows every item thread of the collection.
///
/// # Errors
/// A database error.
pub async fn notifies<C: ConnectionTrait>(
    db: &C,
    collection_id: i64,
    user_id: i64,
) -> Result<bool, StorageError> {
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("SELECT user_id AS id FROM chat_collection_notify WHERE collection_id = ")
        .bind(id_param(collection_id).unwrap_or(0))
        .push(" AND user_id = ")
        .bind(id_param(user_id).unwrap_or(0));
    Ok(!sql.all(db).await?.is_empty())
}

/// Sets whether the user follows every item thread of the collection.
///
/// # Errors
/// A database error.
#[instrument(skip_all, err, fields(collection_id, user_id, on))]
pub async fn set_notify<C: ConnectionTrait>(
    db: &C,
    collection_id: i64,
    user_id: i64,
    on: bool,
) -> Result<(), StorageError> {
    let (Some(collection), Some(uid)) = (id_param(collection_id), id_param(user_id)) else {
        return Ok(());
    };
    let mut sql = Sql::new(db.get_database_backend());
    if on {
        sql.push("INSERT INTO chat_collection_notify (collection_id, user_id) VALUES (")
            .bind(collection)
            .push(", ")
            .bind(uid)
            .push(") ON CONFLICT DO NOTHING");
    } else {
        sql.push("DELETE FROM chat_collection_notify WHERE collection_id = ")
            .bind(collection)
            .push(" AND user_id = ")
            .bind(uid);
    }
    sql.execute(db).await?;
    Ok(())
}
