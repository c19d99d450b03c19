//! The rules every write of users, groups and their roles keeps inside its transaction: writes
//! of access take turns, and an installation that has a super-admin keeps one.
//!
//! "Super-admin users" are the users that are not deleted and hold `super-admin` directly or
//! through a group that is not deleted: exactly those who could sign in and pass every check.
//! A write that would take the last of them away (deleting or force-deleting them, removing the
//! role from them or from their group, removing them from that group, deleting that group) is
//! refused, so nobody can lock the installation out of its own admin app.

use sea_orm::{ConnectionTrait, DbBackend};
use vellum_policy::SystemRole;

use crate::StorageError;
use crate::sql::Sql;

/// Key of the PostgreSQL advisory lock that serializes writes of users, groups and their roles
/// ("VELLUMAC"). Under READ COMMITTED two transactions removing the last two super-admins would
/// each still see the other one; taking turns makes the second see the first's write. SQLite
/// writers already take turns (`BEGIN IMMEDIATE`).
const ACCESS_LOCK_KEY: i64 = 0x5645_4C4C_554D_4143;

/// The message of the refusal.
pub const LAST_SUPER_ADMIN: &str = "The last super-admin cannot be removed: at least one active user must keep the super-admin role.";

/// Serializes access writes on PostgreSQL; released at commit or rollback.
pub(crate) async fn lock_access<C: ConnectionTrait>(txn: &C) -> Result<(), StorageError> {
    if txn.get_database_backend() == DbBackend::Postgres {
        let mut sql = Sql::new(DbBackend::Postgres);
        sql.push("SELECT pg_advisory_xact_lock(")
            .bind(ACCESS_LOCK_KEY)
            .push(")");
        sql.execute(txn).await?;
    }
    Ok(())
}

/// How many users are super-admins now (see the module documentation).
pub(crate) async fn count_super_admins<C: ConnectionTrait>(db: &C) -> Result<u64, StorageError> {
    let role = SystemRole::SuperAdmin.name();
    let mut sql = Sql::new(db.get_database_backend());
    sql.push(
        "SELECT COUNT(*) AS n FROM users u WHERE u.deleted_at IS NULL AND (u.id IN \
         (SELECT ur.user_id FROM user_roles ur JOIN roles r ON r.id = ur.role_id WHERE r.name = ",
    )
    .bind(role)
    .push(
        ") OR u.id IN (SELECT gu.user_id FROM group_users gu \
         JOIN \"groups\" g ON g.id = gu.group_id \
         JOIN role_groups rg ON rg.group_id = g.id \
         JOIN roles r ON r.id = rg.role_id \
         WHERE g.deleted_at IS NULL AND r.name = ",
    )
    .bind(role)
    .push("))");
    sql.count(db).await
}

/// The state before an access write, taken inside its transaction after [`lock_access`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct Before {
    super_admins: u64,
}

impl Before {
    /// Locks access writes and counts the super-admins.
    pub(crate) async fn take<C: ConnectionTrait>(txn: &C) -> Result<Self, StorageError> {
        lock_access(txn).await?;
        Ok(Self {
            super_admins: count_super_admins(txn).await?,
        })
    }

    /// Refuses (a conflict on `field`) when the write took the last super-admin away.
    pub(crate) async fn keep_a_super_admin<C: ConnectionTrait>(
        self,
        txn: &C,
        field: &str,
    ) -> Result<(), StorageError> {
        if self.super_admins > 0 && count_super_admins(txn).await? == 0 {
            return Err(StorageError::conflict_on(field, LAST_SUPER_ADMIN));
        }
        Ok(())
    }
}
