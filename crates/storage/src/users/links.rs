//! The link tables between users, groups and roles (`user_roles`, `group_users`, `role_groups`),
//! written as whole sets inside the caller's transaction: what the admin app's "roles" and
//! "members" fields replace.

use std::collections::BTreeSet;

use sea_orm::{ConnectionTrait, FromQueryResult};
use vellum_policy::{RoleOperation, check_role_operation};

use crate::StorageError;
use crate::sql::{IdRow, Sql, id_param};

/// One link table: its name and its two columns (constants of this crate, never input).
#[derive(Debug, Clone, Copy)]
pub(crate) struct LinkTable {
    pub(crate) table: &'static str,
    pub(crate) owner: &'static str,
    pub(crate) other: &'static str,
}

pub(crate) const USER_ROLES: LinkTable = LinkTable {
    table: "user_roles",
    owner: "user_id",
    other: "role_id",
};
pub(crate) const USER_GROUPS: LinkTable = LinkTable {
    table: "group_users",
    owner: "user_id",
    other: "group_id",
};
pub(crate) const GROUP_USERS: LinkTable = LinkTable {
    table: "group_users",
    owner: "group_id",
    other: "user_id",
};
pub(crate) const GROUP_ROLES: LinkTable = LinkTable {
    table: "role_groups",
    owner: "group_id",
    other: "role_id",
};

/// The most links one write sets (the admin app bounds its arrays to this).
pub const MAX_LINKS: usize = 1000;

fn too_many(field: &str) -> StorageError {
    StorageError::conflict_on(field, format!("At most {MAX_LINKS} entries are allowed."))
}

#[derive(FromQueryResult)]
struct RoleIdRow {
    id: i32,
    name: String,
}

/// The ids of the roles named `names`, which must all exist and be assignable to users (not
/// `public`, not even through a group); otherwise a conflict on `field` naming the first wrong
/// one.
pub(crate) async fn assignable_role_ids<C: ConnectionTrait>(
    txn: &C,
    names: &[String],
    field: &str,
) -> Result<Vec<i32>, StorageError> {
    let names: BTreeSet<&str> = names.iter().map(String::as_str).collect();
    if names.len() > MAX_LINKS {
        return Err(too_many(field));
    }
    for name in &names {
        if let Err(StorageError::Conflict { message, .. }) = crate::roles::refuse_unless_allowed(
            check_role_operation(name, RoleOperation::AssignToUser),
        ) {
            return Err(StorageError::conflict_on(field, capitalized(&message)));
        }
        // PostgreSQL's text cannot hold NUL: such a name cannot exist, and must not reach SQL.
        if name.contains('\0') {
            return Err(StorageError::conflict_on(field, unknown_role(name)));
        }
    }
    if names.is_empty() {
        return Ok(Vec::new());
    }
    let mut sql = Sql::new(txn.get_database_backend());
    sql.push("SELECT id, name FROM roles WHERE name IN ");
    sql.bind_list(names.iter().map(|n| (*n).to_owned()));
    let rows: Vec<RoleIdRow> = sql.all_as(txn).await?;
    if let Some(missing) = names.iter().find(|n| !rows.iter().any(|r| r.name == **n)) {
        return Err(StorageError::conflict_on(field, unknown_role(missing)));
    }
    Ok(rows.into_iter().map(|r| r.id).collect())
}

fn unknown_role(name: &str) -> String {
    format!("The role \"{}\" does not exist.", name.replace('\0', ""))
}

fn capitalized(message: &str) -> String {
    let mut chars = message.chars();
    let mut out: String = chars
        .next()
        .map(|c| c.to_uppercase().collect())
        .unwrap_or_default();
    out.extend(chars);
    if !out.ends_with('.') {
        out.push('.');
    }
    out
}

/// The ids among `ids` as 32-bit values, which must all name rows of `table`; otherwise a
/// conflict on `field` naming the first missing one (`what`: "group", "user").
pub(crate) async fn existing_ids<C: ConnectionTrait>(
    txn: &C,
    table: &'static str,
    ids: &[i64],
    field: &str,
    what: &str,
) -> Result<Vec<i32>, StorageError> {
    let wanted: BTreeSet<i64> = ids.iter().copied().collect();
    if wanted.len() > MAX_LINKS {
        return Err(too_many(field));
    }
    let missing =
        |id: i64| StorageError::conflict_on(field, format!("The {what} {id} does not exist."));
    let mut narrow = Vec::with_capacity(wanted.len());
    for id in &wanted {
        narrow.push(id_param(*id).ok_or_else(|| missing(*id))?);
    }
    if narrow.is_empty() {
        return Ok(narrow);
    }
    let mut sql = Sql::new(txn.get_database_backend());
    sql.push("SELECT id FROM ")
        .push(table)
        .push(" WHERE id IN ");
    sql.bind_list(narrow.iter().copied());
    let found: BTreeSet<i32> = sql
        .all_as::<IdRow, _>(txn)
        .await?
        .into_iter()
        .map(|r| r.id)
        .collect();
    if let Some(id) = narrow.iter().find(|id| !found.contains(id)) {
        return Err(missing(i64::from(*id)));
    }
    Ok(narrow)
}

/// The ids among `ids` that name no row of `table` (the admin app's validation, before a write
/// checks again inside its transaction). At most [`MAX_LINKS`] ids are looked at.
pub(crate) async fn unknown_ids<C: ConnectionTrait>(
    db: &C,
    table: &'static str,
    ids: &[i64],
) -> Result<Vec<i64>, StorageError> {
    let wanted: BTreeSet<i64> = ids.iter().copied().take(MAX_LINKS).collect();
    let narrow: Vec<i32> = wanted.iter().filter_map(|id| id_param(*id)).collect();
    let mut found = BTreeSet::new();
    if !narrow.is_empty() {
        let mut sql = Sql::new(db.get_database_backend());
        sql.push("SELECT id FROM ")
            .push(table)
            .push(" WHERE id IN ");
        sql.bind_list(narrow);
        for row in sql.all_as::<IdRow, _>(db).await? {
            found.insert(i64::from(row.id));
        }
    }
    Ok(wanted
        .into_iter()
        .filter(|id| !found.contains(id))
        .collect())
}

/// Makes `owner`'s links in `link` exactly `others` (already checked to exist).
pub(crate) async fn replace_links<C: ConnectionTrait>(
    txn: &C,
    link: LinkTable,
    owner: i32,
    others: &[i32],
) -> Result<(), StorageError> {
    let backend = txn.get_database_backend();
    let mut sql = Sql::new(backend);
    sql.push("DELETE FROM ")
        .push(link.table)
        .push(" WHERE ")
        .push(link.owner)
        .push(" = ")
        .bind(owner);
    sql.execute(txn).await?;
    // At most MAX_LINKS links (the callers check): one statement of 2000 values at most, far
    // below either backend's parameter limit.
    if others.is_empty() {
        return Ok(());
    }
    let mut sql = Sql::new(backend);
    sql.push("INSERT INTO ")
        .push(link.table)
        .push(" (")
        .push(link.owner)
        .push(", ")
        .push(link.other)
        .push(") VALUES ");
    for (i, other) in others.iter().enumerate() {
        sql.push(if i == 0 { "(" } else { ", (" })
            .bind(owner)
            .push(", ")
            .bind(*other)
            .push(")");
    }
    sql.execute(txn).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::capitalized;

    #[test]
    fn rules_read_as_sentences() {
        assert_eq!(
            capitalized("the public role cannot be assigned to users"),
            "The public role cannot be assigned to users."
        );
        assert_eq!(capitalized(""), ".");
    }
}
