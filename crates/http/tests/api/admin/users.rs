//! The admin app's users (`/users…`): every route allowed with exactly its permission and refused
//! without it (403) or without a session (401); validation (422 naming each field); 404s; soft
//! delete ending sessions and sign-in, restore, force delete; password changes ending other
//! sessions; the last super-admin kept; the activity log naming keys, never values.

use actix_web::http::Method;
use serde_json::{Value, json};

use super::{PASSWORD, Session, create_user};
use crate::support::TestApp;

/// Every permission of the users area.
pub const USER_PERMISSIONS: [&str; 6] = [
    "can-show-users",
    "can-create-users",
    "can-edit-users",
    "can-delete-users",
    "can-restore-users",
    "can-force-delete-users",
];

/// A session of a new user `who@example.com` holding a new role with exactly `permissions`.
pub async fn session_with(app: &TestApp, who: &str, permissions: &[&str]) -> Session {
    super::access_support::signed_in_with(app, &format!("{who}@example.com"), permissions).await
}

/// `body` with its timestamps (strings) replaced by `"<time>"`, so bodies compare exactly.
pub fn without_times(mut body: Value) -> Value {
    fn walk(v: &mut Value) {
        match v {
            Value::Object(map) => {
                for (k, v) in map.iter_mut() {
                    if k.ends_with("_at") && v.is_string() {
                        *v = json!("<time>");
                    } else {
                        walk(v);
                    }
                }
            }
            Value::Array(items) => items.iter_mut().for_each(walk),
            _ => {}
        }
    }
    walk(&mut body);
    body
}

/// One route: method, path, the permission it needs, a body, and the status when allowed.
struct Route {
    method: Method,
    path: String,
    permission: &'static str,
    body: Option<Value>,
    allowed: u16,
}

/// Runs each route refused without a session (401), refused for a user holding every other
/// permission of the area (403), then allowed for a user holding exactly its permission.
pub async fn check_routes(
    app: &TestApp,
    area: &[&'static str],
    routes: Vec<(Method, String, &'static str, Option<Value>, u16)>,
) {
    let routes: Vec<Route> = routes
        .into_iter()
        .map(|(method, path, permission, body, allowed)| Route {
            method,
            path,
            permission,
            body,
            allowed,
        })
        .collect();
    for (i, route) in routes.iter().enumerate() {
        let anonymous = app
            .admin(route.method.clone(), &route.path, None, route.body.clone())
            .await;
        assert_eq!(anonymous.status, 401, "{} {}", route.method, route.path);
        assert_eq!(anonymous.json(), json!({"message": "Unauthenticated."}));
        let others: Vec<&str> = area
            .iter()
            .copied()
            .filter(|p| *p != route.permission)
            .collect();
        let denied = session_with(app, &format!("denied{i}"), &others).await;
        let res = app
            .admin(
                route.method.clone(),
                &route.path,
                Some(&denied),
                route.body.clone(),
            )
            .await;
        assert_eq!(res.status, 403, "{} {}", route.method, route.path);
        assert_eq!(res.json(), json!({"message": "Forbidden."}));
    }
    for (i, route) in routes.iter().enumerate() {
        let allowed = session_with(app, &format!("allowed{i}"), &[route.permission]).await;
        let res = app
            .admin(
                route.method.clone(),
                &route.path,
                Some(&allowed),
                route.body.clone(),
            )
            .await;
        assert_eq!(
            res.status,
            route.allowed,
            "{} {}: {}",
            route.method,
            route.path,
            String::from_utf8_lossy(&res.body)
        );
    }
}

#[actix_web::test]
async fn every_route_needs_its_permission() {
    let app = TestApp::new(json!({})).await;
    let shown = create_user(&app.state, "shown@example.com", "Shown", &[]).await;
    let deleted = create_user(&app.state, "deleted@example.com", "Deleted", &[]).await;
    let forced = create_user(&app.state, "forced@example.com", "Forced", &[]).await;
    check_routes(
        &app,
        &USER_PERMISSIONS,
        vec![
            (Method::GET, "/users".into(), "can-show-users", None, 200),
            (
                Method::GET,
                "/users/create".into(),
                "can-create-users",
                None,
                200,
            ),
            (
                Method::POST,
                "/users".into(),
                "can-create-users",
                Some(json!({"name": "New", "email": "new@example.com"})),
                201,
            ),
            (
                Method::GET,
                format!("/users/{shown}"),
                "can-show-users",
                None,
                200,
            ),
            (
                Method::GET,
                format!("/users/{shown}/edit"),
                "can-edit-users",
                None,
                200,
            ),
            (
                Method::PUT,
                format!("/users/{shown}"),
                "can-edit-users",
                Some(json!({"name": "Shown again"})),
                200,
            ),
            (
                Method::DELETE,
                format!("/users/{deleted}"),
                "can-delete-users",
                None,
                204,
            ),
            (
                Method::POST,
                format!("/users/{deleted}/restore"),
                "can-restore-users",
                None,
                200,
            ),
            (
                Method::DELETE,
                format!("/users/{forced}/force"),
                "can-force-delete-users",
                None,
                204,
            ),
        ],
    )
    .await;
}

#[actix_web::test]
async fn create_answers_the_user_without_its_password_and_it_can_sign_in() {
    let app = TestApp::new(json!({})).await;
    let admin = app.signed_in("root@example.com", &["admin"]).await;
    let group = vellum_storage::groups::create_group(&app.db.conn, "staff")
        .await
        .unwrap();
    let res = app
        .admin(
            Method::POST,
            "/users",
            Some(&admin),
            Some(json!({
                "name": "  Grace Hopper ",
                "email": " Grace@Example.com ",
                "password": "a long enough password",
                "roles": ["reader", "reader"],
                "group_ids": [group.id],
                "email_verified": true,
            })),
        )
        .await;
    assert_eq!(res.status, 201, "{}", String::from_utf8_lossy(&res.body));
    let body = res.json();
    let id = body["data"]["id"].as_i64().unwrap();
    assert_eq!(
        without_times(body.clone()),
        json!({"data": {
            "id": id,
            "name": "Grace Hopper",
            "email": "Grace@Example.com",
            "email_verified_at": "<time>",
            "deleted_at": null,
            "created_at": "<time>",
            "updated_at": "<time>",
            "roles": ["reader"],
            "groups": [{"id": group.id, "name": "staff"}],
        }})
    );
    assert!(!String::from_utf8_lossy(&res.body).contains("argon2"));
    // Shown the same by GET, and in the list.
    let shown = app
        .admin(Method::GET, &format!("/users/{id}"), Some(&admin), None)
        .await;
    assert_eq!(shown.json(), body);
    // The new user signs in with its password and holds what the role gives.
    let grace = app
        .sign_in("grace@example.com", "a long enough password")
        .await;
    let account = app
        .admin(Method::GET, "/account", Some(&grace), None)
        .await
        .json();
    assert_eq!(account["data"]["roles"], json!(["reader"]));
    // Without a password the account exists but cannot sign in by password.
    let res = app
        .admin(
            Method::POST,
            "/users",
            Some(&admin),
            Some(json!({"name": "Linus", "email": "linus@example.com"})),
        )
        .await;
    assert_eq!(res.status, 201);
    assert_eq!(res.json()["data"]["email_verified_at"], Value::Null);
    assert_eq!(res.json()["data"]["roles"], json!([]));
}

#[actix_web::test]
async fn the_forms_offer_assignable_roles_and_groups() {
    let app = TestApp::new(json!({})).await;
    let admin = app.signed_in("root@example.com", &["admin"]).await;
    let staff = vellum_storage::groups::create_group(&app.db.conn, "staff")
        .await
        .unwrap();
    let gone = vellum_storage::groups::create_group(&app.db.conn, "gone")
        .await
        .unwrap();
    vellum_storage::groups::soft_delete_group(&app.db.conn, gone.id)
        .await
        .unwrap();
    let form = app
        .admin(Method::GET, "/users/create", Some(&admin), None)
        .await;
    assert_eq!(form.status, 200);
    let body = form.json();
    let roles = body["data"]["roles"].as_array().unwrap();
    assert!(roles.contains(&json!("super-admin")) && roles.contains(&json!("reader")));
    assert!(!roles.contains(&json!("public")), "{roles:?}");
    assert_eq!(
        body["data"]["groups"],
        json!([{"id": staff.id, "name": "staff"}])
    );
    let me = app
        .admin(Method::GET, "/account", Some(&admin), None)
        .await
        .json()["data"]["id"]
        .as_i64()
        .unwrap();
    let edit = app
        .admin(
            Method::GET,
            &format!("/users/{me}/edit"),
            Some(&admin),
            None,
        )
        .await;
    assert_eq!(edit.status, 200);
    let edit = edit.json();
    assert_eq!(edit["data"]["user"]["id"], me);
    assert_eq!(edit["data"]["roles"], body["data"]["roles"]);
    assert_eq!(edit["data"]["groups"], body["data"]["groups"]);
}

#[actix_web::test]
async fn bad_input_is_422_naming_each_field() {
    let app = TestApp::new(json!({})).await;
    let admin = app.signed_in("root@example.com", &["admin"]).await;
    create_user(&app.state, "Taken@Example.com", "Taken", &[]).await;
    let long = "x".repeat(256);
    let rows: Vec<(Value, &[&str])> = vec![
        (json!({}), &["email", "name"]),
        (json!({"name": " ", "email": ""}), &["email", "name"]),
        (
            json!({"name": long, "email": format!("{}@example.com", "a".repeat(250))}),
            &["email", "name"],
        ),
        (json!({"name": "A", "email": "not an email"}), &["email"]),
        (
            json!({"name": "A", "email": "taken@EXAMPLE.com"}),
            &["email"],
        ),
        (
            json!({"name": "A", "email": "a@example.com", "password": "short"}),
            &["password"],
        ),
        (
            json!({"name": "A", "email": "a@example.com", "password": "p".repeat(257)}),
            &["password"],
        ),
        (
            json!({"name": "A", "email": "a@example.com", "roles": ["public"]}),
            &["roles"],
        ),
        (
            json!({"name": "A", "email": "a@example.com", "roles": ["ghost"]}),
            &["roles"],
        ),
        (
            json!({"name": "A", "email": "a@example.com", "roles": "admin"}),
            &["roles"],
        ),
        (
            json!({"name": "A", "email": "a@example.com", "group_ids": [999_999]}),
            &["group_ids"],
        ),
        (
            json!({"name": "A", "email": "a@example.com", "group_ids": vec![1; 1001]}),
            &["group_ids"],
        ),
        (
            json!({"name": "A\u{0}", "email": "a@example.com", "roles": ["x\u{0}"]}),
            &["name", "roles"],
        ),
        (
            json!({"name": "A", "email": "a@example.com", "email_verified": "maybe"}),
            &["email_verified"],
        ),
        (json!([1, 2]), &["body"]),
    ];
    for (body, fields) in rows {
        let res = app
            .admin(Method::POST, "/users", Some(&admin), Some(body.clone()))
            .await;
        assert_eq!(res.status, 422, "{body}");
        let answer = res.json();
        assert_eq!(answer["message"], "The given data was invalid.");
        let keys: Vec<&str> = answer["errors"]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(keys, fields, "{body}: {answer}");
    }
    // The exact messages of the rows the brief names.
    let res = app
        .admin(
            Method::POST,
            "/users",
            Some(&admin),
            Some(
                json!({"name": "A", "email": "TAKEN@example.com", "password": "short",
                "roles": ["public", "ghost"]}),
            ),
        )
        .await;
    assert_eq!(
        res.json(),
        json!({"message": "The given data was invalid.", "errors": {
            "email": ["The email has already been taken."],
            "password": ["The password must be 8 to 256 characters."],
            "roles": [
                "The public role cannot be assigned.",
                "The role \"ghost\" does not exist."
            ],
        }})
    );
    // Nothing was created by any of them.
    let list = app
        .admin(Method::GET, "/users?per_page=100", Some(&admin), None)
        .await
        .json();
    assert_eq!(list["meta"]["total"], 2);
    // The same rules on edit.
    let id = create_user(&app.state, "edit@example.com", "Edit", &[]).await;
    let res = app
        .admin(
            Method::PUT,
            &format!("/users/{id}"),
            Some(&admin),
            Some(
                json!({"name": "", "email": "taken@example.com", "roles": ["public"],
                "password": "short"}),
            ),
        )
        .await;
    assert_eq!(res.status, 422);
    let errors = res.json()["errors"].clone();
    for field in ["name", "email", "roles", "password"] {
        assert!(errors.get(field).is_some(), "{field}: {errors}");
    }
    // Its own email in another case is not "taken".
    let res = app
        .admin(
            Method::PUT,
            &format!("/users/{id}"),
            Some(&admin),
            Some(json!({"email": "EDIT@example.com"})),
        )
        .await;
    assert_eq!(res.status, 200, "{}", String::from_utf8_lossy(&res.body));
    assert_eq!(res.json()["data"]["email"], "EDIT@example.com");
}

#[actix_web::test]
async fn the_list_searches_pages_and_shows_the_trash() {
    let app = TestApp::new(json!({})).await;
    let admin = app.signed_in("root@example.com", &["super-admin"]).await;
    let mut ids = Vec::new();
    for i in 0..5 {
        ids.push(
            create_user(
                &app.state,
                &format!("member{i}@example.com"),
                &format!("Member {i}"),
                &[],
            )
            .await,
        );
    }
    let odd = create_user(&app.state, "odd_one@example.com", "100% Odd", &["reader"]).await;
    let get = |q: &str| {
        let q = q.to_owned();
        let app = &app;
        let admin = admin.clone();
        async move {
            let res = app.admin(Method::GET, &q, Some(&admin), None).await;
            assert_eq!(
                res.status,
                200,
                "{q}: {}",
                String::from_utf8_lossy(&res.body)
            );
            res.json()
        }
    };
    let all = get("/users").await;
    assert_eq!(
        all["meta"],
        json!({"current_page": 1, "last_page": 1, "per_page": 15, "total": 7})
    );
    // Newest first.
    assert_eq!(all["data"][0]["id"], odd);
    assert_eq!(all["data"][0]["roles"], json!(["reader"]));
    let page = get("/users?per_page=2&page=2").await;
    assert_eq!(
        page["meta"],
        json!({"current_page": 2, "last_page": 4, "per_page": 2, "total": 7})
    );
    assert_eq!(page["data"][0]["id"], ids[3]);
    // Name or email, any case; wildcards are literal.
    let found = get("/users?search=MEMBER%203").await;
    assert_eq!(found["meta"]["total"], 1);
    assert_eq!(found["data"][0]["id"], ids[3]);
    assert_eq!(get("/users?search=member4%40").await["meta"]["total"], 1);
    assert_eq!(get("/users?search=100%25").await["meta"]["total"], 1);
    assert_eq!(get("/users?search=%25").await["meta"]["total"], 1);
    assert_eq!(get("/users?search=_one").await["meta"]["total"], 1);
    // Trash.
    for id in [ids[0], ids[1]] {
        let res = app
            .admin(Method::DELETE, &format!("/users/{id}"), Some(&admin), None)
            .await;
        assert_eq!(res.status, 204);
    }
    assert_eq!(get("/users").await["meta"]["total"], 5);
    let only = get("/users?trashed=only").await;
    assert_eq!(only["meta"]["total"], 2);
    assert!(only["data"][0]["deleted_at"].is_string());
    assert_eq!(get("/users?trashed=with").await["meta"]["total"], 7);
    // Bad parameters.
    for (q, field) in [
        ("/users?trashed=all", "trashed"),
        ("/users?per_page=101", "per_page"),
        ("/users?page=0", "page"),
    ] {
        let res = app.admin(Method::GET, q, Some(&admin), None).await;
        assert_eq!(res.status, 422, "{q}");
        assert!(res.json()["errors"].get(field).is_some(), "{q}");
    }
    let res = app
        .admin(
            Method::GET,
            &format!("/users?search={}", "x".repeat(256)),
            Some(&admin),
            None,
        )
        .await;
    assert_eq!(res.status, 422);
    assert!(res.json()["errors"].get("search").is_some());
}

#[actix_web::test]
async fn unknown_users_are_404() {
    let app = TestApp::new(json!({})).await;
    let admin = app.signed_in("root@example.com", &["super-admin"]).await;
    let deleted = create_user(&app.state, "gone@example.com", "Gone", &[]).await;
    app.admin(
        Method::DELETE,
        &format!("/users/{deleted}"),
        Some(&admin),
        None,
    )
    .await;
    for id in ["999999", "abc", "0", "-1", "99999999999"] {
        for (method, path, body) in [
            (Method::GET, format!("/users/{id}"), None),
            (Method::GET, format!("/users/{id}/edit"), None),
            (
                Method::PUT,
                format!("/users/{id}"),
                Some(json!({"name": "X"})),
            ),
            (Method::DELETE, format!("/users/{id}"), None),
            (Method::POST, format!("/users/{id}/restore"), None),
            (Method::DELETE, format!("/users/{id}/force"), None),
        ] {
            let res = app.admin(method.clone(), &path, Some(&admin), body).await;
            assert_eq!(res.status, 404, "{method} {path}");
            assert_eq!(res.json(), json!({"message": "Not found."}));
        }
    }
    // A deleted user is shown (with deleted_at) but not edited or deleted again.
    let shown = app
        .admin(
            Method::GET,
            &format!("/users/{deleted}"),
            Some(&admin),
            None,
        )
        .await;
    assert_eq!(shown.status, 200);
    assert!(shown.json()["data"]["deleted_at"].is_string());
    for (method, path, body) in [
        (Method::GET, format!("/users/{deleted}/edit"), None),
        (
            Method::PUT,
            format!("/users/{deleted}"),
            Some(json!({"name": "X"})),
        ),
        (Method::DELETE, format!("/users/{deleted}"), None),
    ] {
        let res = app.admin(method.clone(), &path, Some(&admin), body).await;
        assert_eq!(res.status, 404, "{method} {path}");
    }
}

#[actix_web::test]
async fn soft_delete_ends_sessions_and_sign_in_until_restored() {
    let app = TestApp::new(json!({})).await;
    let admin = app.signed_in("root@example.com", &["admin"]).await;
    let victim = app.signed_in("victim@example.com", &["reader"]).await;
    let id = app
        .admin(Method::GET, "/account", Some(&victim), None)
        .await
        .json()["data"]["id"]
        .as_i64()
        .unwrap();
    assert_eq!(
        app.admin(Method::GET, "/users", Some(&victim), None)
            .await
            .status,
        200
    );
    let res = app
        .admin(Method::DELETE, &format!("/users/{id}"), Some(&admin), None)
        .await;
    assert_eq!(res.status, 204);
    assert!(res.body.is_empty());
    // The session is gone from the store, not only refused.
    let token = vellum_app::identity::token::SessionToken::from_cookie(victim.token()).unwrap();
    assert!(
        app.state
            .identity()
            .sessions
            .get(&token.id())
            .await
            .unwrap()
            .is_none()
    );
    // At once: the next request of its session is 401.
    let res = app.admin(Method::GET, "/users", Some(&victim), None).await;
    assert_eq!(res.status, 401);
    let signin = app
        .admin(
            Method::POST,
            "/login",
            None,
            Some(json!({"email": "victim@example.com", "password": PASSWORD})),
        )
        .await;
    assert_eq!(signin.status, 422);
    assert!(signin.json()["errors"].get("email").is_some());
    // Restore: it signs in again.
    let res = app
        .admin(
            Method::POST,
            &format!("/users/{id}/restore"),
            Some(&admin),
            None,
        )
        .await;
    assert_eq!(res.status, 200);
    assert_eq!(res.json()["data"]["deleted_at"], Value::Null);
    assert_eq!(res.json()["data"]["roles"], json!(["reader"]));
    let again = app.sign_in("victim@example.com", PASSWORD).await;
    assert_eq!(
        app.admin(Method::GET, "/users", Some(&again), None)
            .await
            .status,
        200
    );
    // Restoring a user that is not deleted changes nothing.
    let res = app
        .admin(
            Method::POST,
            &format!("/users/{id}/restore"),
            Some(&admin),
            None,
        )
        .await;
    assert_eq!(res.status, 200);
}

#[actix_web::test]
async fn force_delete_is_for_good_and_ends_sessions() {
    let app = TestApp::new(json!({})).await;
    let admin = app.signed_in("root@example.com", &["admin"]).await;
    let victim = app.signed_in("victim@example.com", &["reader"]).await;
    let id = app
        .admin(Method::GET, "/account", Some(&victim), None)
        .await
        .json()["data"]["id"]
        .as_i64()
        .unwrap();
    let res = app
        .admin(
            Method::DELETE,
            &format!("/users/{id}/force"),
            Some(&admin),
            None,
        )
        .await;
    assert_eq!(res.status, 204);
    assert_eq!(
        app.admin(Method::GET, "/account", Some(&victim), None)
            .await
            .status,
        401
    );
    for path in [format!("/users/{id}"), format!("/users/{id}/restore")] {
        let method = if path.ends_with("restore") {
            Method::POST
        } else {
            Method::GET
        };
        assert_eq!(
            app.admin(method, &path, Some(&admin), None).await.status,
            404
        );
    }
    // The address is free again.
    let res = app
        .admin(
            Method::POST,
            "/users",
            Some(&admin),
            Some(json!({"name": "Victim", "email": "victim@example.com"})),
        )
        .await;
    assert_eq!(res.status, 201);
}

#[actix_web::test]
async fn a_user_cannot_delete_itself() {
    let app = TestApp::new(json!({})).await;
    let admin = app.signed_in("root@example.com", &["admin"]).await;
    let me = app
        .admin(Method::GET, "/account", Some(&admin), None)
        .await
        .json()["data"]["id"]
        .as_i64()
        .unwrap();
    for path in [format!("/users/{me}"), format!("/users/{me}/force")] {
        let res = app.admin(Method::DELETE, &path, Some(&admin), None).await;
        assert_eq!(res.status, 422, "{path}");
        assert_eq!(
            res.json(),
            json!({"message": "The given data was invalid.", "errors": {
                "user": ["You cannot delete your own account."]
            }})
        );
    }
    assert_eq!(
        app.admin(Method::GET, "/account", Some(&admin), None)
            .await
            .status,
        200
    );
}

#[actix_web::test]
async fn the_last_super_admin_cannot_be_removed() {
    let app = TestApp::new(json!({})).await;
    let root = create_user(&app.state, "root@example.com", "Root", &["super-admin"]).await;
    let root_session = app.sign_in("root@example.com", PASSWORD).await;
    // The only super-admin cannot give its role up.
    let res = app
        .admin(
            Method::PUT,
            &format!("/users/{root}"),
            Some(&root_session),
            Some(json!({"roles": ["admin"]})),
        )
        .await;
    assert_eq!(res.status, 422);
    assert_eq!(
        res.json()["errors"]["roles"],
        json!([
            "The last super-admin cannot be removed: at least one active user must keep the super-admin role."
        ])
    );
    // An admin holds every permission but is not a super-admin: it may not touch one at all.
    let admin = app.signed_in("admin@example.com", &["admin"]).await;
    for (method, path) in [
        (Method::DELETE, format!("/users/{root}")),
        (Method::DELETE, format!("/users/{root}/force")),
        (Method::POST, format!("/users/{root}/restore")),
    ] {
        let res = app.admin(method.clone(), &path, Some(&admin), None).await;
        assert_eq!(res.status, 403, "{method} {path}");
        assert_eq!(res.json(), json!({"message": "Forbidden."}));
    }
    let res = app
        .admin(
            Method::PUT,
            &format!("/users/{root}"),
            Some(&admin),
            Some(json!({"password": "taken over, then signed in"})),
        )
        .await;
    assert_eq!(res.status, 403, "no password takeover of a super-admin");
    // Nor grant the role, to itself or anyone.
    let second = create_user(&app.state, "second@example.com", "Second", &[]).await;
    let res = app
        .admin(
            Method::PUT,
            &format!("/users/{second}"),
            Some(&admin),
            Some(json!({"roles": ["super-admin"]})),
        )
        .await;
    assert_eq!(res.status, 403);
    // A super-admin may: then the first may give the role up, and the second is the last.
    let res = app
        .admin(
            Method::PUT,
            &format!("/users/{second}"),
            Some(&root_session),
            Some(json!({"roles": ["super-admin"]})),
        )
        .await;
    assert_eq!(res.status, 200);
    let res = app
        .admin(
            Method::PUT,
            &format!("/users/{root}"),
            Some(&root_session),
            Some(json!({"roles": ["admin"]})),
        )
        .await;
    assert_eq!(res.status, 200);
    let shown = app
        .admin(Method::GET, &format!("/users/{second}"), Some(&admin), None)
        .await
        .json();
    assert_eq!(shown["data"]["roles"], json!(["super-admin"]));
    assert_eq!(shown["data"]["deleted_at"], Value::Null);
}

#[actix_web::test]
async fn edit_replaces_roles_and_groups_and_a_new_password_ends_other_sessions() {
    let app = TestApp::new(json!({})).await;
    let admin = app.signed_in("root@example.com", &["super-admin"]).await;
    let staff = vellum_storage::groups::create_group(&app.db.conn, "staff")
        .await
        .unwrap();
    let ops = vellum_storage::groups::create_group(&app.db.conn, "ops")
        .await
        .unwrap();
    let first = app.signed_in("ada@example.com", &["admin"]).await;
    let second = app.sign_in("ada@example.com", PASSWORD).await;
    let id = app
        .admin(Method::GET, "/account", Some(&first), None)
        .await
        .json()["data"]["id"]
        .as_i64()
        .unwrap();
    let res = app
        .admin(
            Method::PUT,
            &format!("/users/{id}"),
            Some(&admin),
            Some(json!({"name": "Ada L.", "roles": ["reader", "admin"],
                "group_ids": [ops.id, staff.id], "email_verified": false})),
        )
        .await;
    assert_eq!(res.status, 200, "{}", String::from_utf8_lossy(&res.body));
    let user = res.json()["data"].clone();
    assert_eq!(user["name"], "Ada L.");
    assert_eq!(user["roles"], json!(["admin", "reader"]));
    assert_eq!(
        user["groups"],
        json!([{"id": staff.id, "name": "staff"}, {"id": ops.id, "name": "ops"}])
    );
    assert_eq!(user["email_verified_at"], Value::Null);
    // No password change: both sessions live on.
    for session in [&first, &second] {
        assert_eq!(
            app.admin(Method::GET, "/account", Some(session), None)
                .await
                .status,
            200
        );
    }
    // Editing itself with a new password keeps the session that asked, ends the other.
    let res = app
        .admin(
            Method::PUT,
            &format!("/users/{id}"),
            Some(&first),
            Some(json!({"password": "a brand new password", "roles": ["admin"], "group_ids": []})),
        )
        .await;
    assert_eq!(res.status, 200, "{}", String::from_utf8_lossy(&res.body));
    assert_eq!(res.json()["data"]["roles"], json!(["admin"]));
    assert_eq!(res.json()["data"]["groups"], json!([]));
    assert_eq!(
        app.admin(Method::GET, "/account", Some(&first), None)
            .await
            .status,
        200
    );
    assert_eq!(
        app.admin(Method::GET, "/account", Some(&second), None)
            .await
            .status,
        401
    );
    // Changed by someone else: every session of the user ends.
    let res = app
        .admin(
            Method::PUT,
            &format!("/users/{id}"),
            Some(&admin),
            Some(json!({"password": "yet another password"})),
        )
        .await;
    assert_eq!(res.status, 200);
    assert_eq!(
        app.admin(Method::GET, "/account", Some(&first), None)
            .await
            .status,
        401
    );
    app.sign_in("ada@example.com", "yet another password").await;
}

#[actix_web::test]
async fn the_activity_log_names_keys_never_values() {
    let app = TestApp::new(json!({})).await;
    let admin = app.signed_in("root@example.com", &["super-admin"]).await;
    let secret = "do not log this password";
    let res = app
        .admin(
            Method::POST,
            "/users",
            Some(&admin),
            Some(
                json!({"name": "Logged", "email": "logged@example.com", "password": secret,
                "roles": ["reader"]}),
            ),
        )
        .await;
    let id = res.json()["data"]["id"].as_i64().unwrap();
    app.admin(
        Method::PUT,
        &format!("/users/{id}"),
        Some(&admin),
        Some(json!({"password": "another secret value", "name": "Logged 2"})),
    )
    .await;
    app.admin(Method::DELETE, &format!("/users/{id}"), Some(&admin), None)
        .await;
    app.admin(
        Method::POST,
        &format!("/users/{id}/restore"),
        Some(&admin),
        None,
    )
    .await;
    app.admin(
        Method::DELETE,
        &format!("/users/{id}/force"),
        Some(&admin),
        None,
    )
    .await;
    let entries = vellum_storage::activity::list(
        &app.db.conn,
        &vellum_storage::activity::ActivityFilter {
            log_name: Some("users".to_owned()),
            ..Default::default()
        },
        1,
        100,
    )
    .await
    .unwrap()
    .items;
    let mut events: Vec<(String, Value)> = entries
        .iter()
        .map(|e| (e.event.clone(), e.properties["changed"].clone()))
        .collect();
    events.reverse();
    assert_eq!(
        events,
        [
            (
                "created".to_owned(),
                json!(["name", "email", "password", "roles"])
            ),
            ("updated".to_owned(), json!(["name", "password"])),
            ("deleted".to_owned(), json!(["deleted_at"])),
            ("restored".to_owned(), json!(["deleted_at"])),
            ("force_deleted".to_owned(), json!([])),
        ]
    );
    for entry in &entries {
        assert_eq!(entry.subject_type.as_deref(), Some("user"));
        assert_eq!(entry.subject_id, Some(id.to_string()));
        let text = entry.properties.to_string();
        assert!(
            !text.contains(secret) && !text.contains("another secret"),
            "{text}"
        );
    }
}
