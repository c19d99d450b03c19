//! The API keys (`GET /settings/api-keys`): each key with its role, limits and state, the create
//! form, the secret of a key just created (shown this once, with a copy button) and revocation.

use askama::Template;
use vellum_app::api_keys::{ApiKeyResource, KeysScreen};
use vellum_app::principal::Principal;

use crate::chrome::Chrome;
use crate::format::moment;
use crate::forms::FieldErrors;
use crate::paging::Pager;

#[derive(Debug, Clone, Template)]
#[template(path = "api_keys.html")]
pub struct ApiKeysPage {
    pub chrome: Chrome,
    pub rows: Vec<KeyRow>,
    pub total: u64,
    pub pager: Pager,
    pub can_manage: bool,
    pub roles: Vec<String>,
    /// The key just created and its secret.
    pub created: Option<(String, String)>,
    /// The create form as posted, when it was refused.
    pub form: KeyForm,
    pub errors: FieldErrors,
    /// "Key revoked." after a revocation (`?revoked=1`).
    pub revoked: bool,
}

/// One key as the table shows it.
#[derive(Debug, Clone)]
pub struct KeyRow {
    pub id: i64,
    pub name: String,
    pub key_id: String,
    pub role: String,
    pub ip_allowlist: String,
    pub expires: String,
    pub last_used: String,
    pub created: String,
    /// `active`, `revoked` or `expired`.
    pub state: &'static str,
}

/// The create form's fields as the user typed them.
#[derive(Debug, Clone, Default)]
pub struct KeyForm {
    pub name: String,
    pub role: String,
    pub ip_allowlist: String,
    pub expires_on: String,
}

impl ApiKeysPage {
    #[must_use]
    pub fn new(principal: &Principal, screen: KeysScreen, query: &str) -> Self {
        let now = time::OffsetDateTime::now_utc()
            .format(&time::format_description::well_known::Rfc3339)
            .unwrap_or_default();
        Self {
            chrome: Chrome::new(principal, "api-keys"),
            total: screen.page.meta.total,
            pager: Pager::new(
                "/settings/api-keys",
                query,
                screen.page.meta.current_page,
                screen.page.meta.last_page,
            ),
            rows: screen.page.data.iter().map(|k| row(k, &now)).collect(),
            can_manage: screen.can_manage,
            roles: screen.roles,
            created: None,
            form: KeyForm::default(),
            errors: FieldErrors::default(),
            revoked: crate::paging::param(query, "revoked").is_some(),
        }
    }

    /// The page after a key was created: its secret, shown this once.
    #[must_use]
    pub fn with_created(mut self, name: String, secret: String) -> Self {
        self.created = Some((name, secret));
        self
    }

    /// The page after a refused create: the form as posted, each problem next to its field.
    #[must_use]
    pub fn with_refusal(mut self, form: KeyForm, errors: FieldErrors) -> Self {
        self.form = form;
        self.errors = errors;
        self
    }

    /// Problems of no field of the form.
    #[must_use]
    pub fn other_errors(&self) -> Vec<String> {
        self.errors
            .others(&["name", "role", "ip_allowlist", "expires_at"])
    }
}

fn row(key: &ApiKeyResource, now: &str) -> KeyRow {
    let expired = key.expires_at.as_str().is_some_and(|at| at <= now);
    KeyRow {
        id: key.id,
        name: key.name.clone(),
        key_id: key.key_id.clone(),
        role: key.role.clone(),
        ip_allowlist: key.ip_allowlist.join(", "),
        expires: moment(&key.expires_at),
        last_used: moment(&key.last_used_at),
        created: moment(&key.created_at),
        state: if !key.revoked_at.is_null() {
            "revoked"
        } else if expired {
            "expired"
        } else {
            "active"
        },
    }
}
