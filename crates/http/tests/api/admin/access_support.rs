//! Helpers of the access-configuration tests (roles, permissions, API keys, settings): users
//! holding exactly the permissions a test names, ids by name, and the allowed/denied matrix.

use actix_web::http::Method;
use serde_json::{Value, json};
use vellum_policy::Role;
use vellum_storage::{permissions, role_admin, roles};

use super::{PASSWORD, Session, create_user};
use crate::support::TestApp;

/// The id of the permission row `name`.
pub async fn permission_id(app: &TestApp, name: &str) -> i64 {
    permissions::list_permissions(&app.db.conn)
        .await
        .unwrap()
        .into_iter()
        .find(|p| p.name == name)
        .unwrap_or_else(|| panic!("no permission {name}"))
        .id
}

/// The id of the role `name`.
pub async fn role_id(app: &TestApp, name: &str) -> i64 {
    roles::list_roles(&app.db.conn)
        .await
        .unwrap()
        .into_iter()
        .find(|r| r.name == name)
        .unwrap_or_else(|| panic!("no role {name}"))
        .id
}

/// Creates role `name` holding exactly `permission_names` (no matrices).
pub async fn role_with(app: &TestApp, name: &str, permission_names: &[&str]) -> i64 {
    let mut ids = Vec::new();
    for p in permission_names {
        ids.push(permission_id(app, p).await);
    }
    let role = Role::from_json(name, &json!({})).unwrap();
    let id = role_admin::create_role(&app.db.conn, &role, &ids)
        .await
        .unwrap();
    app.state.invalidate().await;
    id
}

/// A signed-in user whose one role holds exactly `permission_names`.
pub async fn signed_in_with(app: &TestApp, email: &str, permission_names: &[&str]) -> Session {
    let role = format!("holds-{email}");
    role_with(app, &role, permission_names).await;
    create_user(&app.state, email, email, &[&role]).await;
    app.sign_in(email, PASSWORD).await
}

/// One admin route: what it needs and a request that it allows.
pub struct Route {
    pub method: Method,
    pub path: String,
    pub body: Option<Value>,
}

impl Route {
    pub fn new(method: Method, path: impl Into<String>, body: Option<Value>) -> Self {
        Self {
            method,
            path: path.into(),
            body,
        }
    }
}

/// Asserts `route` is refused anonymously (401) and for `outsider` (403), with the contract's
/// bodies; neither changes anything.
pub async fn assert_denied(app: &TestApp, route: &Route, outsider: &Session) {
    let anonymous = app
        .admin(route.method.clone(), &route.path, None, route.body.clone())
        .await;
    assert_eq!(
        anonymous.status, 401,
        "{} {} anonymous",
        route.method, route.path
    );
    assert_eq!(anonymous.json(), json!({"message": "Unauthenticated."}));
    let denied = app
        .admin(
            route.method.clone(),
            &route.path,
            Some(outsider),
            route.body.clone(),
        )
        .await;
    assert_eq!(
        denied.status,
        403,
        "{} {} without the permission: {}",
        route.method,
        route.path,
        String::from_utf8_lossy(&denied.body)
    );
    assert_eq!(denied.json(), json!({"message": "Forbidden."}));
}

/// Sends `route` as `session` and asserts the status; answers the body (JSON, or null when
/// empty).
pub async fn assert_allowed(app: &TestApp, route: &Route, session: &Session, status: u16) -> Value {
    let res = app
        .admin(
            route.method.clone(),
            &route.path,
            Some(session),
            route.body.clone(),
        )
        .await;
    assert_eq!(
        res.status,
        status,
        "{} {}: {}",
        route.method,
        route.path,
        String::from_utf8_lossy(&res.body)
    );
    if res.body.is_empty() {
        Value::Null
    } else {
        res.json()
    }
}

/// The field names of a 422's `errors`, sorted.
pub fn error_fields(body: &Value) -> Vec<String> {
    assert_eq!(body["message"], "The given data was invalid.", "{body}");
    body["errors"]
        .as_object()
        .unwrap_or_else(|| panic!("no errors: {body}"))
        .keys()
        .cloned()
        .collect()
}

/// Sends a JSON admin request as `s`: the status and the body (`null` when empty).
pub async fn send(
    app: &TestApp,
    method: Method,
    path: &str,
    s: &Session,
    body: Option<Value>,
) -> (u16, Value) {
    let res = app.admin(method, path, Some(s), body).await;
    let json = if res.body.is_empty() {
        Value::Null
    } else {
        res.json()
    };
    (res.status.as_u16(), json)
}
