//! The rows every Vellum project has: the whole permission catalog, the four seeded roles
//! ([`SystemRole`]) with their catalog permissions, and the fingerprint secret.

use sea_orm::{ConnectionTrait, TransactionSession, TransactionTrait};
use tracing::instrument;
use vellum_policy::{PERMISSIONS, SystemRole};

use crate::StorageError;
use crate::roles::NameRow;
use crate::sql::{Sql, begin_write, now};

/// Makes the database hold what every Vellum project has: the whole permission catalog, the four
/// seeded roles and the fingerprint secret ([`crate::project::hash_key`]). Idempotent: a second
/// run changes nothing.
///
/// A seeded role receives its catalog permissions ([`SystemRole::permissions`]) when this call
/// creates it. Later runs leave role permissions alone, so an operator who trimmed `admin` does
/// not see the change silently undone by the next `apply`. Permission names outside the catalog
/// are removed: the contract says none may exist.
///
/// # Errors
/// A database error; the transaction is rolled back and nothing changes.
#[instrument(skip_all, err)]
pub async fn seed_system<C: ConnectionTrait + TransactionTrait>(
    db: &C,
) -> Result<(), StorageError> {
    let tx = begin_write(db).await?;
    let backend = tx.get_database_backend();

    let mut sql = Sql::new(backend);
    sql.push("DELETE FROM permissions WHERE name NOT IN ");
    sql.bind_list(PERMISSIONS);
    sql.execute(&tx).await?;

    let mut sql = Sql::new(backend);
    sql.push("INSERT INTO permissions (name) VALUES ");
    for (i, name) in PERMISSIONS.iter().enumerate() {
        sql.push(if i == 0 { "(" } else { ", (" })
            .bind(*name)
            .push(")");
    }
    sql.push(" ON CONFLICT (name) DO NOTHING");
    sql.execute(&tx).await?;

    let at = now();
    let mut sql = Sql::new(backend);
    sql.push("INSERT INTO roles (name, is_system, created_at) VALUES ");
    for (i, role) in SystemRole::ALL.iter().enumerate() {
        sql.push(if i == 0 { "(" } else { ", (" })
            .bind(role.name())
            .push(", ")
            .bind(true)
            .push(", ")
            .bind(at)
            .push(")");
    }
    // RETURNING after DO NOTHING yields only the rows inserted: the roles this call created.
    sql.push(" ON CONFLICT (name) DO NOTHING RETURNING name");
    let created: Vec<String> = sql
        .all_as::<NameRow, _>(&tx)
        .await?
        .into_iter()
        .map(|row| row.name)
        .collect();

    // A custom role created under a seeded name before the first seed becomes the seeded role.
    let mut sql = Sql::new(backend);
    sql.push("UPDATE roles SET is_system = ")
        .bind(true)
        .push(" WHERE is_system = ")
        .bind(false)
        .push(" AND name IN ");
    sql.bind_list(SystemRole::ALL.map(SystemRole::name));
    sql.execute(&tx).await?;

    for role in SystemRole::ALL {
        let permissions = role.permissions();
        if permissions.is_empty() || !created.iter().any(|c| c == role.name()) {
            continue;
        }
        let mut sql = Sql::new(backend);
        // The WHERE clause also keeps SQLite's parser from reading `ON CONFLICT` as a join.
        sql.push(
            "INSERT INTO role_permissions (role_id, permission_id) \
             SELECT r.id, p.id FROM roles r, permissions p WHERE r.name = ",
        )
        .bind(role.name())
        .push(" AND p.name IN ");
        sql.bind_list(permissions.iter().copied());
        sql.push(" ON CONFLICT (role_id, permission_id) DO NOTHING");
        sql.execute(&tx).await?;
    }

    crate::project::hash_key(&tx).await?;
    tx.commit().await?;
    Ok(())
}
