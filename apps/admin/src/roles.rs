//! `vellum-admin roles`: list the roles and show one with both matrices and its rules.
//!
//! Roles are read through `vellum_storage::roles`, which hands out the policy crate's [`Role`];
//! the JSON shapes here are [`Role::to_json`]'s (the manifest's), so what `roles show --json`
//! prints is what a manifest would declare.

use std::io::Write;

use serde_json::{Map, Value as Json};
use vellum_policy::{CollectionAction, FileAction, Role, SystemRole};
use vellum_storage::roles;

use crate::db::open;
use crate::{AdminError, DatabaseArgs};

/// Arguments of `roles`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(subcommand)]
    command: RolesCommand,
}

#[derive(Debug, clap::Subcommand)]
enum RolesCommand {
    /// List every role with a summary of its grants.
    #[command(
        long_about = "List every role in creation order: whether it is a seeded system role, \
            its collection grants and its files grants. A table for people by default; with \
            --json an array of {name, is_system, collection_permissions, file_permissions}.",
        after_help = "Examples:\n  vellum-admin roles list\n  vellum-admin roles list --json"
    )]
    List {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Show one role: both matrices and the rules.
    #[command(
        long_about = "Show the role NAME: the collection matrix (create, read, update, \
            delete per collection), field rules and item filters, the files matrix and the \
            role's admin permissions. A table for people by default; with --json the \
            manifest shape {name, collection_permissions, file_permissions}.",
        after_help = "Examples:\n  vellum-admin roles show editor\n  \
            vellum-admin roles show public --json"
    )]
    Show {
        /// The role's name.
        name: String,
        /// Print JSON (the manifest shape) instead of tables.
        #[arg(long)]
        json: bool,
    },
}

/// Runs `roles …`: the result on `out` (table or JSON).
pub(crate) async fn run(
    database: &DatabaseArgs,
    args: &Args,
    out: &mut impl Write,
    _log: &mut impl Write,
) -> Result<(), AdminError> {
    let db = open(database).await?;
    let text = match &args.command {
        RolesCommand::List { json } => {
            let mut roles = Vec::new();
            for summary in roles::list_roles(&db).await? {
                // One role at a time: a project has a handful of roles, and the loader is the
                // one place that turns stored grants into a checked `Role`.
                let role = roles::load_role(&db, &summary.name).await?.ok_or_else(|| {
                    AdminError::NotFound(format!("no role named \"{}\"", summary.name))
                })?;
                roles.push((summary.is_system, role));
            }
            if *json {
                let list: Vec<Json> = roles
                    .iter()
                    .map(|(is_system, role)| {
                        let mut obj = Map::new();
                        obj.insert("name".into(), Json::String(role.name.clone()));
                        obj.insert("is_system".into(), Json::Bool(*is_system));
                        obj.extend(manifest_shape(role));
                        Json::Object(obj)
                    })
                    .collect();
                format!("{}\n", Json::Array(list))
            } else {
                list_table(&roles)
            }
        }
        RolesCommand::Show { name, json } => {
            let role = roles::load_role(&db, name)
                .await?
                .ok_or_else(|| AdminError::NotFound(format!("no role named \"{name}\"")))?;
            if *json {
                format!("{}\n", Json::Object(manifest_shape(&role)))
            } else {
                let permissions = roles::role_permissions(&db, name).await?;
                show_tables(&role, &permissions)
            }
        }
    };
    out.write_all(text.as_bytes()).map_err(AdminError::Output)
}

/// `{name, collection_permissions, file_permissions}`, in that order.
fn manifest_shape(role: &Role) -> Map<String, Json> {
    let mut obj = Map::new();
    obj.insert("name".into(), Json::String(role.name.clone()));
    if let Json::Object(matrices) = role.to_json() {
        obj.extend(matrices);
    }
    obj
}

fn yes_no(allowed: bool) -> String {
    if allowed { "yes" } else { "-" }.to_owned()
}

/// The actions of a grant as compact letters: `crud`, `-r--`.
fn crud(role: &Role, slug: &vellum_domain::CollectionSlug) -> String {
    CollectionAction::ALL
        .iter()
        .map(|a| {
            let letter = a.as_str().chars().next().unwrap_or('?');
            if role.grant(slug).is_some_and(|g| g.allows(*a)) {
                letter
            } else {
                '-'
            }
        })
        .collect()
}

fn file_actions(role: &Role) -> String {
    let actions: Vec<&str> = FileAction::ALL
        .iter()
        .filter(|a| role.files.allows(**a))
        .map(|a| a.as_str())
        .collect();
    if actions.is_empty() {
        "-".to_owned()
    } else {
        actions.join(",")
    }
}

fn list_table(roles: &[(bool, Role)]) -> String {
    let mut rows = vec![vec![
        "NAME".to_owned(),
        "SYSTEM".to_owned(),
        "COLLECTIONS (crud)".to_owned(),
        "FILES".to_owned(),
    ]];
    for (is_system, role) in roles {
        let collections = if role.is_super_admin() {
            "all (bypasses every gate)".to_owned()
        } else if role.collections.is_empty() {
            "-".to_owned()
        } else {
            role.collections
                .iter()
                .map(|(slug, g)| {
                    let rules = if g.fields.is_empty() && g.item_filter.is_none() {
                        ""
                    } else {
                        "+rules"
                    };
                    format!("{slug}:{}{rules}", crud(role, slug))
                })
                .collect::<Vec<_>>()
                .join(" ")
        };
        let files = if role.is_super_admin() {
            "all".to_owned()
        } else {
            file_actions(role)
        };
        rows.push(vec![
            role.name.clone(),
            yes_no(*is_system),
            collections,
            files,
        ]);
    }
    table(&rows)
}

fn show_tables(role: &Role, permissions: &[String]) -> String {
    let kind = if SystemRole::from_name(&role.name).is_some() {
        "system role"
    } else {
        "custom role"
    };
    let mut text = format!("Role \"{}\" ({kind})\n", role.name);
    if role.is_super_admin() {
        text.push_str(
            "super-admin bypasses every permission gate; the matrices below are not consulted.\n",
        );
    }

    text.push_str("\nCollections\n");
    if role.collections.is_empty() {
        text.push_str("  (no grants: every collection is denied)\n");
    } else {
        let mut rows = vec![
            ["COLLECTION", "CREATE", "READ", "UPDATE", "DELETE"]
                .map(str::to_owned)
                .to_vec(),
        ];
        for (slug, grant) in &role.collections {
            let mut row = vec![slug.to_string()];
            row.extend(CollectionAction::ALL.map(|a| yes_no(grant.allows(a))));
            rows.push(row);
        }
        text.push_str(&indent(&table(&rows)));
    }

    let mut field_rows = vec![
        ["FIELD", "READ", "CREATE", "UPDATE"]
            .map(str::to_owned)
            .to_vec(),
    ];
    let mut filters = Vec::new();
    for (slug, grant) in &role.collections {
        for (name, rule) in &grant.fields {
            field_rows.push(vec![
                format!("{slug}.{name}"),
                yes_no(rule.read),
                yes_no(rule.create),
                yes_no(rule.update),
            ]);
        }
        if let Some(filter) = grant.to_json().pointer("/rules/item_filter") {
            filters.push(vec![slug.to_string(), filter.to_string()]);
        }
    }
    text.push_str("\nField rules\n");
    if field_rows.len() > 1 {
        text.push_str(&indent(&table(&field_rows)));
    } else {
        text.push_str("  (none: every field follows its grant)\n");
    }
    text.push_str("\nItem filters\n");
    if filters.is_empty() {
        text.push_str("  (none: every item of a granted collection is visible)\n");
    } else {
        text.push_str(&indent(&table(&filters)));
    }

    text.push_str("\nFiles\n");
    let mut file_rows = vec![FileAction::ALL.map(|a| a.as_str().to_uppercase()).to_vec()];
    file_rows.push(
        FileAction::ALL
            .map(|a| yes_no(role.files.allows(a)))
            .to_vec(),
    );
    text.push_str(&indent(&table(&file_rows)));

    text.push_str("\nAdmin permissions\n");
    if permissions.is_empty() {
        text.push_str("  (none)\n");
    } else {
        for permission in permissions {
            text.push_str(&format!("  {permission}\n"));
        }
    }
    text
}

fn indent(text: &str) -> String {
    text.lines().map(|line| format!("  {line}\n")).collect()
}

/// Left-aligned columns separated by two spaces, one line per row, no trailing spaces.
pub(crate) fn table(rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = Vec::new();
    for row in rows {
        for (i, cell) in row.iter().enumerate() {
            let width = cell.chars().count();
            match widths.get_mut(i) {
                Some(w) => *w = (*w).max(width),
                None => widths.push(width),
            }
        }
    }
    let mut text = String::new();
    for row in rows {
        let mut line = String::new();
        for (cell, width) in row.iter().zip(&widths) {
            line.push_str(&format!("{cell:<width$}  "));
        }
        text.push_str(line.trim_end());
        text.push('\n');
    }
    text
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn tables_align_columns_without_trailing_spaces() {
        let rows = vec![
            vec!["NAME".to_owned(), "SYSTEM".to_owned()],
            vec!["super-admin".to_owned(), "yes".to_owned()],
            vec!["x".to_owned(), "-".to_owned()],
        ];
        assert_eq!(
            table(&rows),
            "NAME         SYSTEM\nsuper-admin  yes\nx            -\n"
        );
    }

    #[test]
    fn the_json_shape_is_the_manifest_shape_with_the_name_first() {
        let role = Role::from_json(
            "editor",
            &json!({"collection_permissions": {"articles": {"read": true,
                "rules": {"item_filter": {"status": {"_eq": "published"}}}}},
                "file_permissions": {"read": true}}),
        )
        .unwrap();
        let shape = Json::Object(manifest_shape(&role));
        assert_eq!(
            shape,
            json!({"name": "editor",
                "collection_permissions": {"articles": {"read": true,
                    "rules": {"item_filter": {"status": {"_eq": "published"}}}}},
                "file_permissions": {"read": true}})
        );
        assert_eq!(
            shape.as_object().unwrap().keys().next().map(String::as_str),
            Some("name")
        );
    }
}
