//! The per-user, per-day prompt counter behind `daily_prompt_limit`.

use sea_orm::{ConnectionTrait, FromQueryResult};
use tracing::instrument;

use crate::StorageError;
use crate::sql::{Sql, id_param};

/// Counts one prompt of the user on `day` (`YYYY-MM-DD`, UTC) unless `limit` are counted
/// already; answers whether it was counted. One conditional upsert: two replicas cannot both
/// take the last allowed prompt.
///
/// # Errors
/// A database error.
#[instrument(skip_all, err)]
pub async fn count_prompt<C: ConnectionTrait>(
    db: &C,
    user_id: i64,
    day: &str,
    limit: u32,
) -> Result<bool, StorageError> {
    #[derive(FromQueryResult)]
    struct Counted {
        prompts: i32,
    }
    let Some(uid) = id_param(user_id) else {
        return Ok(false);
    };
    if limit == 0 {
        return Ok(false);
    }
    let limit = i32::try_from(limit).unwrap_or(i32::MAX);
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("INSERT INTO ai_prompt_days (user_id, day, prompts) VALUES (")
        .bind(uid)
        .push(", ")
        .bind(day)
        .push(
            ", 1) ON CONFLICT (user_id, day) DO UPDATE SET prompts = ai_prompt_days.prompts + 1 \
               WHERE ai_prompt_days.prompts < ",
        )
        .bind(limit)
        .push(" RETURNING prompts");
    Ok(sql
        .one_as::<Counted, _>(db)
        .await?
        .is_some_and(|row| row.prompts <= limit))
}

/// Gives back a counted prompt (one the provider never saw).
///
/// # Errors
/// A database error.
pub async fn uncount_prompt<C: ConnectionTrait>(
    db: &C,
    user_id: i64,
    day: &str,
) -> Result<(), StorageError> {
    let Some(uid) = id_param(user_id) else {
        return Ok(());
    };
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("UPDATE ai_prompt_days SET prompts = prompts - 1 WHERE prompts > 0 AND user_id = ")
        .bind(uid)
        .push(" AND day = ")
        .bind(day);
    sql.execute(db).await?;
    Ok(())
}

/// Deletes the counters of days before `day` (`YYYY-MM-DD`): only today's is ever read.
///
/// # Errors
/// A database error.
pub async fn forget_before<C: ConnectionTrait>(db: &C, day: &str) -> Result<u64, StorageError> {
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("DELETE FROM ai_prompt_days WHERE day < ")
        .bind(day);
    sql.execute(db).await
}
