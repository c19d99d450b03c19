//! A user's form (`GET /users/create`, `GET /users/{user}/edit`): name, email, a new password,
//! direct roles, groups and whether the email is verified; created by a form post, saved with
//! htmx; delete after a confirmation (restore and delete for good are on the deleted users' list).

use askama::Template;
use serde_json::{Value, json};
use vellum_app::principal::Principal;
use vellum_app::users::{GroupRef, UserResource};

use crate::chrome::Chrome;
use crate::forms::{FieldErrors, chosen};

#[derive(Debug, Clone, Template)]
#[template(path = "user.html")]
pub struct UserPage {
    pub chrome: Chrome,
    pub id: Option<i64>,
    pub name: String,
    pub email: String,
    pub verified: bool,
    /// `(role, chosen)`.
    pub roles: Vec<(String, bool)>,
    /// `(id, name, chosen)`.
    pub groups: Vec<(i64, String, bool)>,
    pub errors: FieldErrors,
    pub saved: bool,
    pub can_delete: bool,
}

impl UserPage {
    /// The form of `user` (none: a new user) with the roles and groups it may hold; `posted` is
    /// a refused body, shown again as typed.
    #[must_use]
    pub fn new(
        principal: &Principal,
        user: Option<&UserResource>,
        roles: &[String],
        groups: &[GroupRef],
        posted: Option<&Value>,
        errors: FieldErrors,
        saved: bool,
    ) -> Self {
        let text = |key: &str, stored: Option<&str>| {
            posted
                .and_then(|p| p.get(key))
                .and_then(Value::as_str)
                .or(stored)
                .unwrap_or_default()
                .to_owned()
        };
        let chosen_roles = chosen(
            posted,
            "roles",
            |v| v.as_str().map(str::to_owned),
            || user.map(|u| u.roles.clone()).unwrap_or_default(),
        );
        let chosen_groups = chosen(posted, "group_ids", Value::as_i64, || {
            user.map(|u| u.groups.iter().map(|g| g.id).collect())
                .unwrap_or_default()
        });
        Self {
            chrome: Chrome::new(principal, "users"),
            id: user.map(|u| u.id),
            name: text("name", user.map(|u| u.name.as_str())),
            email: text("email", user.and_then(|u| u.email.as_deref())),
            verified: match posted.and_then(|p| p.get("email_verified")) {
                Some(v) => v.as_bool() == Some(true),
                None => user.is_some_and(|u| u.email_verified_at.is_some()),
            },
            roles: roles
                .iter()
                .map(|r| (r.clone(), chosen_roles.contains(r)))
                .collect(),
            groups: groups
                .iter()
                .map(|g| (g.id, g.name.clone(), chosen_groups.contains(&g.id)))
                .collect(),
            errors,
            saved,
            can_delete: principal.may("can-delete-users"),
        }
    }

    /// Problems of no field of the form.
    #[must_use]
    pub fn other_errors(&self) -> Vec<String> {
        self.errors.others(&[
            "name",
            "email",
            "password",
            "roles",
            "group_ids",
            "email_verified",
        ])
    }
}

/// The form's fields as the users use case's body: an empty password is left out (unchanged),
/// the checked roles and groups replace the user's.
#[must_use]
pub fn user_body(form: &[(String, String)]) -> Value {
    let last = |key: &str| {
        form.iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
    };
    let all = |key: &'static str| -> Vec<&str> {
        form.iter()
            .filter(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
            .collect()
    };
    let mut body = json!({
        "name": last("name").unwrap_or_default().trim(),
        "email": last("email").unwrap_or_default().trim(),
        "roles": all("roles[]"),
        "group_ids": all("group_ids[]")
            .into_iter()
            .map(|v| v.parse::<i64>().map_or_else(|_| json!(v), Value::from))
            .collect::<Vec<_>>(),
        "email_verified": last("email_verified").as_deref() == Some("true"),
    });
    if let (Some(password), Value::Object(map)) = (last("password"), &mut body)
        && !password.is_empty()
    {
        map.insert("password".to_owned(), Value::String(password));
    }
    body
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_form_is_the_users_body() {
        let form: Vec<(String, String)> = [
            ("name", " Ada "),
            ("email", "ada@example.com"),
            ("password", ""),
            ("roles[]", "editor"),
            ("group_ids[]", "4"),
            ("email_verified", "false"),
            ("email_verified", "true"),
        ]
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
        assert_eq!(
            user_body(&form),
            json!({"name": "Ada", "email": "ada@example.com", "roles": ["editor"], "group_ids": [4], "email_verified": true})
        );
    }
}
