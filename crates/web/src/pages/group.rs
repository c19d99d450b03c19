//! A group's form (`GET /groups/create`, `GET /groups/{group}/edit`): its name, the roles its
//! members hold through it, and its members; created by a form post, saved with htmx, deleted
//! after a confirmation.

use askama::Template;
use serde_json::{Value, json};
use vellum_app::groups::{GroupResource, Member};
use vellum_app::principal::Principal;

use crate::chrome::Chrome;
use crate::forms::{FieldErrors, chosen};

#[derive(Debug, Clone, Template)]
#[template(path = "group.html")]
pub struct GroupPage {
    pub chrome: Chrome,
    pub id: Option<i64>,
    pub name: String,
    /// `(role, chosen)`.
    pub roles: Vec<(String, bool)>,
    /// `(id, name, email, chosen)`.
    pub users: Vec<(i64, String, String, bool)>,
    pub errors: FieldErrors,
    pub saved: bool,
    pub can_delete: bool,
}

impl GroupPage {
    /// The form of `group` (none: a new group); `posted` is a refused body, shown as typed.
    #[must_use]
    pub fn new(
        principal: &Principal,
        group: Option<&GroupResource>,
        roles: &[String],
        users: &[Member],
        posted: Option<&Value>,
        errors: FieldErrors,
        saved: bool,
    ) -> Self {
        let chosen_roles = chosen(
            posted,
            "roles",
            |v| v.as_str().map(str::to_owned),
            || group.map(|g| g.roles.clone()).unwrap_or_default(),
        );
        let members = chosen(posted, "user_ids", Value::as_i64, || {
            group
                .map(|g| g.users.iter().map(|u| u.id).collect())
                .unwrap_or_default()
        });
        Self {
            chrome: Chrome::new(principal, "groups"),
            id: group.map(|g| g.id),
            name: posted
                .and_then(|p| p.get("name"))
                .and_then(Value::as_str)
                .map_or_else(
                    || group.map(|g| g.name.clone()).unwrap_or_default(),
                    str::to_owned,
                ),
            roles: roles
                .iter()
                .map(|r| (r.clone(), chosen_roles.contains(r)))
                .collect(),
            users: users
                .iter()
                .map(|u| {
                    let email = u.email.clone().unwrap_or_default();
                    (u.id, u.name.clone(), email, members.contains(&u.id))
                })
                .collect(),
            errors,
            saved,
            can_delete: principal.may("can-delete-groups"),
        }
    }

    /// Problems of no field of the form.
    #[must_use]
    pub fn other_errors(&self) -> Vec<String> {
        self.errors.others(&["name", "roles", "user_ids"])
    }
}

/// The form's fields as the groups use case's body: the checked roles and members replace the
/// group's.
#[must_use]
pub fn group_body(form: &[(String, String)]) -> Value {
    let all = |key: &'static str| -> Vec<&str> {
        form.iter()
            .filter(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
            .collect()
    };
    let name = form
        .iter()
        .rev()
        .find(|(k, _)| k == "name")
        .map(|(_, v)| v.trim())
        .unwrap_or_default();
    json!({
        "name": name,
        "roles": all("roles[]"),
        "user_ids": all("user_ids[]")
            .into_iter()
            .map(|v| v.parse::<i64>().map_or_else(|_| json!(v), Value::from))
            .collect::<Vec<_>>(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_form_is_the_groups_body() {
        let form: Vec<(String, String)> = [
            ("name", " Editors "),
            ("roles[]", "editor"),
            ("user_ids[]", "2"),
            ("user_ids[]", "x"),
        ]
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
        assert_eq!(
            group_body(&form),
            json!({"name": "Editors", "roles": ["editor"], "user_ids": [2, "x"]})
        );
    }
}
