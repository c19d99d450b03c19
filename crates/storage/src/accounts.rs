//! What sign-in needs of a user: its credentials by email, its account with the roles and admin
//! permissions it holds (directly and through groups), and its mailed one-time code.
//!
//! Emails compare case-insensitively: `lower(email)` on both sides, computed by the database so
//! the lookup agrees with the unique index on `lower(email)` byte for byte.

use sea_orm::{ConnectionTrait, FromQueryResult};
use time::OffsetDateTime;
use tracing::instrument;

use crate::StorageError;
use crate::sql::{Sql, id_param, stamp};

/// A user's sign-in credentials.
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    pub user_id: i64,
    /// The PHC string of the password's hash; `None` for an account without a password (it
    /// signs in by code or passkey only).
    pub password_hash: Option<String>,
    /// A soft-deleted user cannot sign in.
    pub deleted: bool,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("user_id", &self.user_id)
            .field(
                "password_hash",
                &self.password_hash.as_ref().map(|_| "****"),
            )
            .field("deleted", &self.deleted)
            .finish()
    }
}

#[derive(FromQueryResult)]
struct CredentialsRow {
    id: i32,
    password_hash: Option<String>,
    deleted_at: Option<OffsetDateTime>,
}

/// The credentials of the user with this email (any case), or `None`.
///
/// # Errors
/// A database error.
#[instrument(skip_all, err)]
pub async fn credentials_by_email<C: ConnectionTrait>(
    db: &C,
    email: &str,
) -> Result<Option<Credentials>, StorageError> {
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("SELECT id, password_hash, deleted_at FROM users WHERE lower(email) = lower(")
        .bind(email)
        .push(")");
    Ok(sql
        .one_as::<CredentialsRow, _>(db)
        .await?
        .map(|row| Credentials {
            user_id: i64::from(row.id),
            password_hash: row.password_hash,
            deleted: row.deleted_at.is_some(),
        }))
}

/// Sets (or, with `None`, removes) a user's password hash.
///
/// # Errors
/// [`StorageError::NotFound`] for an unknown user; a database error.
#[instrument(skip_all, err, fields(user_id))]
pub async fn set_password_hash<C: ConnectionTrait>(
    db: &C,
    user_id: i64,
    hash: Option<&str>,
) -> Result<(), StorageError> {
    let uid = id_param(user_id).ok_or(StorageError::NotFound { what: "user" })?;
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("UPDATE users SET password_hash = ")
        .bind(hash.map(str::to_owned))
        .push(" WHERE id = ")
        .bind(uid);
    if sql.execute(db).await? == 0 {
        return Err(StorageError::NotFound { what: "user" });
    }
    Ok(())
}

/// Marks a user's email as verified at `at`, unless it already is.
///
/// # Errors
/// A database error.
#[instrument(skip_all, err, fields(user_id))]
pub async fn mark_email_verified<C: ConnectionTrait>(
    db: &C,
    user_id: i64,
    at: OffsetDateTime,
) -> Result<(), StorageError> {
    let Some(uid) = id_param(user_id) else {
        return Ok(());
    };
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("UPDATE users SET email_verified_at = ")
        .bind(stamp(at))
        .push(" WHERE email_verified_at IS NULL AND id = ")
        .bind(uid);
    sql.execute(db).await?;
    Ok(())
}

/// A signed-in user as the admin app sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Account {
    pub id: i64,
    pub name: String,
    pub email: Option<String>,
    pub email_verified_at: Option<OffsetDateTime>,
    pub deleted_at: Option<OffsetDateTime>,
    /// Every role the user holds, directly or through a group that is not deleted, sorted by
    /// name, each with its admin permissions (sorted).
    pub roles: Vec<(String, Vec<String>)>,
}

#[derive(FromQueryResult)]
struct AccountRow {
    id: i32,
    name: String,
    email: Option<String>,
    email_verified_at: Option<OffsetDateTime>,
    deleted_at: Option<OffsetDateTime>,
}

#[derive(FromQueryResult)]
struct RolePermissionRow {
    role: String,
    permission: Option<String>,
}

/// The user with its roles and their permissions, or `None`. Two queries.
///
/// # Errors
/// A database error.
#[instrument(skip_all, err, fields(user_id))]
pub async fn account<C: ConnectionTrait>(
    db: &C,
    user_id: i64,
) -> Result<Option<Account>, StorageError> {
    let Some(uid) = id_param(user_id) else {
        return Ok(None);
    };
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("SELECT id, name, email, email_verified_at, deleted_at FROM users WHERE id = ")
        .bind(uid);
    let Some(row) = sql.one_as::<AccountRow, _>(db).await? else {
        return Ok(None);
    };
    let mut sql = Sql::new(db.get_database_backend());
    sql.push(
        "SELECT r.name AS role, p.name AS permission FROM roles r \
         LEFT JOIN role_permissions rp ON rp.role_id = r.id \
         LEFT JOIN permissions p ON p.id = rp.permission_id \
         WHERE r.id IN (SELECT ur.role_id FROM user_roles ur WHERE ur.user_id = ",
    )
    .bind(uid)
    .push(
        ") OR r.id IN (SELECT rg.role_id FROM role_groups rg \
         JOIN group_users gu ON gu.group_id = rg.group_id \
         JOIN \"groups\" g ON g.id = rg.group_id \
         WHERE g.deleted_at IS NULL AND gu.user_id = ",
    )
    .bind(uid)
    .push(") ORDER BY r.name, p.name");
    let mut roles: Vec<(String, Vec<String>)> = Vec::new();
    for grant in sql.all_as::<RolePermissionRow, _>(db).await? {
        match roles.last_mut() {
            Some((name, permissions)) if *name == grant.role => {
                permissions.extend(grant.permission);
            }
            _ => roles.push((grant.role, grant.permission.into_iter().collect())),
        }
    }
    Ok(Some(Account {
        id: i64::from(row.id),
        name: row.name,
        email: row.email,
        email_verified_at: row.email_verified_at,
        deleted_at: row.deleted_at,
        roles,
    }))
}

/// A mailed one-time code as stored: only its hash.
#[derive(Clone, PartialEq, Eq)]
pub struct LoginCode {
    pub code_hash: String,
    pub attempts: i32,
    pub expires_at: OffsetDateTime,
}

impl std::fmt::Debug for LoginCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoginCode")
            .field("attempts", &self.attempts)
            .field("expires_at", &self.expires_at)
            .finish_non_exhaustive()
    }
}

#[derive(FromQueryResult)]
struct LoginCodeRow {
    code_hash: String,
    attempts: i32,
    expires_at: OffsetDateTime,
}

/// Stores a user's one-time code, replacing any earlier one (one live code per user).
///
/// # Errors
/// A database error.
#[instrument(skip_all, err, fields(user_id))]
pub async fn put_login_code<C: ConnectionTrait>(
    db: &C,
    user_id: i64,
    code_hash: &str,
    expires_at: OffsetDateTime,
) -> Result<(), StorageError> {
    let uid = id_param(user_id).ok_or(StorageError::NotFound { what: "user" })?;
    let mut sql = Sql::new(db.get_database_backend());
    sql.push(
        "INSERT INTO login_codes (user_id, code_hash, attempts, expires_at, created_at) VALUES (",
    )
    .bind(uid)
    .push(", ")
    .bind(code_hash)
    .push(", 0, ")
    .bind(stamp(expires_at))
    .push(", ")
    .bind(crate::sql::now())
    .push(
        ") ON CONFLICT (user_id) DO UPDATE SET code_hash = excluded.code_hash, \
             attempts = 0, expires_at = excluded.expires_at, created_at = excluded.created_at",
    );
    sql.execute(db).await?;
    Ok(())
}

/// The user's live code, or `None`.
///
/// # Errors
/// A database error.
#[instrument(skip_all, err, fields(user_id))]
pub async fn login_code<C: ConnectionTrait>(
    db: &C,
    user_id: i64,
) -> Result<Option<LoginCode>, StorageError> {
    let Some(uid) = id_param(user_id) else {
        return Ok(None);
    };
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("SELECT code_hash, attempts, expires_at FROM login_codes WHERE user_id = ")
        .bind(uid);
    Ok(sql
        .one_as::<LoginCodeRow, _>(db)
        .await?
        .map(|row| LoginCode {
            code_hash: row.code_hash,
            attempts: row.attempts,
            expires_at: row.expires_at,
        }))
}

/// Counts one wrong try against the user's code; answers whether the code is still live (a
/// code that reached `max_attempts` is deleted).
///
/// # Errors
/// A database error.
#[instrument(skip_all, err, fields(user_id))]
pub async fn fail_login_code<C: ConnectionTrait>(
    db: &C,
    user_id: i64,
    max_attempts: i32,
) -> Result<bool, StorageError> {
    let Some(uid) = id_param(user_id) else {
        return Ok(false);
    };
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("UPDATE login_codes SET attempts = attempts + 1 WHERE user_id = ")
        .bind(uid);
    sql.execute(db).await?;
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("DELETE FROM login_codes WHERE user_id = ")
        .bind(uid)
        .push(" AND attempts >= ")
        .bind(max_attempts);
    Ok(sql.execute(db).await? == 0)
}

/// Deletes the user's code (used, or voided).
///
/// # Errors
/// A database error.
#[instrument(skip_all, err, fields(user_id))]
pub async fn delete_login_code<C: ConnectionTrait>(
    db: &C,
    user_id: i64,
) -> Result<bool, StorageError> {
    let Some(uid) = id_param(user_id) else {
        return Ok(false);
    };
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("DELETE FROM login_codes WHERE user_id = ")
        .bind(uid);
    Ok(sql.execute(db).await? > 0)
}

/// Uses the user's code when `code_hash` is its hash, it is unexpired at `now` and has had fewer
/// than `max_attempts` wrong tries: one `DELETE`, so two requests racing with the right code
/// cannot both sign in. Answers whether it was used.
///
/// # Errors
/// A database error.
#[instrument(skip_all, err, fields(user_id))]
pub async fn consume_login_code<C: ConnectionTrait>(
    db: &C,
    user_id: i64,
    code_hash: &str,
    now: OffsetDateTime,
    max_attempts: i32,
) -> Result<bool, StorageError> {
    let Some(uid) = id_param(user_id) else {
        return Ok(false);
    };
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("DELETE FROM login_codes WHERE user_id = ")
        .bind(uid)
        .push(" AND code_hash = ")
        .bind(code_hash)
        .push(" AND attempts < ")
        .bind(max_attempts)
        .push(" AND expires_at > ")
        .bind(stamp(now));
    Ok(sql.execute(db).await? == 1)
}
