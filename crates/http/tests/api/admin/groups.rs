//! The admin app's groups (`/groups…`): every route allowed with exactly its permission and
//! refused without it; validation; 404s; a group's roles reach its members while it is not
//! deleted; members bounded; the last super-admin kept through groups too.

use actix_web::http::Method;
use serde_json::{Value, json};

use super::users::{check_routes, without_times};
use super::{PASSWORD, create_user};
use crate::support::TestApp;

const GROUP_PERMISSIONS: [&str; 6] = [
    "can-show-groups",
    "can-create-groups",
    "can-edit-groups",
    "can-delete-groups",
    "can-restore-groups",
    "can-force-delete-groups",
];

async fn group(app: &TestApp, name: &str) -> i64 {
    vellum_storage::groups::create_group(&app.db.conn, name)
        .await
        .unwrap()
        .id
}

#[actix_web::test]
async fn every_route_needs_its_permission() {
    let app = TestApp::new(json!({})).await;
    let shown = group(&app, "shown").await;
    let deleted = group(&app, "deleted").await;
    let forced = group(&app, "forced").await;
    check_routes(
        &app,
        &GROUP_PERMISSIONS,
        vec![
            (Method::GET, "/groups".into(), "can-show-groups", None, 200),
            (
                Method::GET,
                "/groups/create".into(),
                "can-create-groups",
                None,
                200,
            ),
            (
                Method::POST,
                "/groups".into(),
                "can-create-groups",
                Some(json!({"name": "new"})),
                201,
            ),
            (
                Method::GET,
                format!("/groups/{shown}"),
                "can-show-groups",
                None,
                200,
            ),
            (
                Method::GET,
                format!("/groups/{shown}/edit"),
                "can-edit-groups",
                None,
                200,
            ),
            (
                Method::PUT,
                format!("/groups/{shown}"),
                "can-edit-groups",
                Some(json!({"name": "shown again"})),
                200,
            ),
            (
                Method::DELETE,
                format!("/groups/{deleted}"),
                "can-delete-groups",
                None,
                204,
            ),
            (
                Method::POST,
                format!("/groups/{deleted}/restore"),
                "can-restore-groups",
                None,
                200,
            ),
            (
                Method::DELETE,
                format!("/groups/{forced}/force"),
                "can-force-delete-groups",
                None,
                204,
            ),
        ],
    )
    .await;
}

#[actix_web::test]
async fn create_edit_and_the_forms() {
    let app = TestApp::new(json!({})).await;
    let admin = app.signed_in("root@example.com", &["admin"]).await;
    let ada = create_user(&app.state, "ada@example.com", "Ada", &[]).await;
    let bob = create_user(&app.state, "bob@example.com", "Bob", &[]).await;
    let res = app
        .admin(
            Method::POST,
            "/groups",
            Some(&admin),
            Some(json!({"name": " Editors ", "user_ids": [bob, ada, ada], "roles": ["reader"]})),
        )
        .await;
    assert_eq!(res.status, 201, "{}", String::from_utf8_lossy(&res.body));
    let body = res.json();
    let id = body["data"]["id"].as_i64().unwrap();
    assert_eq!(
        body,
        json!({"data": {
            "id": id,
            "name": "Editors",
            "deleted_at": null,
            "roles": ["reader"],
            "users": [
                {"id": ada, "name": "Ada", "email": "ada@example.com"},
                {"id": bob, "name": "Bob", "email": "bob@example.com"},
            ],
            "users_count": 2,
        }})
    );
    let shown = app
        .admin(Method::GET, &format!("/groups/{id}"), Some(&admin), None)
        .await;
    assert_eq!(shown.json(), body);
    // The users' side shows the membership.
    let user = app
        .admin(Method::GET, &format!("/users/{ada}"), Some(&admin), None)
        .await
        .json();
    assert_eq!(
        user["data"]["groups"],
        json!([{"id": id, "name": "Editors"}])
    );
    // Edit replaces members and roles.
    let res = app
        .admin(
            Method::PUT,
            &format!("/groups/{id}"),
            Some(&admin),
            Some(json!({"name": "Writers", "user_ids": [bob], "roles": ["admin", "reader"]})),
        )
        .await;
    assert_eq!(res.status, 200, "{}", String::from_utf8_lossy(&res.body));
    let edited = res.json()["data"].clone();
    assert_eq!(edited["name"], "Writers");
    assert_eq!(edited["roles"], json!(["admin", "reader"]));
    assert_eq!(edited["users_count"], 1);
    // The forms.
    let form = app
        .admin(Method::GET, "/groups/create", Some(&admin), None)
        .await
        .json();
    let roles = form["data"]["roles"].as_array().unwrap();
    assert!(!roles.contains(&json!("public")));
    assert_eq!(form["data"]["users"].as_array().unwrap().len(), 3);
    let edit = app
        .admin(
            Method::GET,
            &format!("/groups/{id}/edit"),
            Some(&admin),
            None,
        )
        .await
        .json();
    assert_eq!(edit["data"]["group"], edited);
    assert_eq!(edit["data"]["roles"], form["data"]["roles"]);
    assert_eq!(edit["data"]["users"], form["data"]["users"]);
    // Same name as itself: fine; another group's name: taken.
    group(&app, "Other").await;
    let res = app
        .admin(
            Method::PUT,
            &format!("/groups/{id}"),
            Some(&admin),
            Some(json!({"name": "Writers"})),
        )
        .await;
    assert_eq!(res.status, 200);
    let res = app
        .admin(
            Method::PUT,
            &format!("/groups/{id}"),
            Some(&admin),
            Some(json!({"name": "Other", "roles": ["public"]})),
        )
        .await;
    assert_eq!(
        res.json(),
        json!({"message": "The given data was invalid.", "errors": {
            "name": ["The name has already been taken."],
            "roles": ["The public role cannot be assigned."],
        }})
    );
}

#[actix_web::test]
async fn bad_input_is_422_naming_each_field() {
    let app = TestApp::new(json!({})).await;
    let admin = app.signed_in("root@example.com", &["admin"]).await;
    group(&app, "taken").await;
    let rows: Vec<(Value, &[&str])> = vec![
        (json!({}), &["name"]),
        (json!({"name": "  "}), &["name"]),
        (json!({"name": "x".repeat(256)}), &["name"]),
        (json!({"name": "taken"}), &["name"]),
        (json!({"name": "a\u{7}b"}), &["name"]),
        (json!({"name": "ok", "roles": ["public"]}), &["roles"]),
        (json!({"name": "ok", "roles": ["ghost"]}), &["roles"]),
        (json!({"name": "ok", "user_ids": [999_999]}), &["user_ids"]),
        (json!({"name": "ok", "user_ids": ["1"]}), &["user_ids.0"]),
        (
            json!({"name": "ok", "user_ids": vec![1; 1001]}),
            &["user_ids"],
        ),
        (json!("name"), &["body"]),
    ];
    for (body, fields) in rows {
        let res = app
            .admin(Method::POST, "/groups", Some(&admin), Some(body.clone()))
            .await;
        assert_eq!(res.status, 422, "{body}");
        let answer = res.json();
        let keys: Vec<&str> = answer["errors"]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(keys, fields, "{body}: {answer}");
    }
    let list = app
        .admin(Method::GET, "/groups", Some(&admin), None)
        .await
        .json();
    assert_eq!(list["meta"]["total"], 1, "nothing was created");
}

#[actix_web::test]
async fn the_list_searches_and_shows_the_trash_and_unknown_groups_are_404() {
    let app = TestApp::new(json!({})).await;
    let admin = app.signed_in("root@example.com", &["super-admin"]).await;
    let a = group(&app, "Alpha team").await;
    let b = group(&app, "Beta_team").await;
    let c = group(&app, "gamma").await;
    let get = |q: &'static str| {
        let app = &app;
        let admin = admin.clone();
        async move {
            let res = app.admin(Method::GET, q, Some(&admin), None).await;
            assert_eq!(res.status, 200, "{q}");
            res.json()
        }
    };
    let all = get("/groups").await;
    assert_eq!(
        all["meta"],
        json!({"current_page": 1, "last_page": 1, "per_page": 15, "total": 3})
    );
    let ids: Vec<i64> = all["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["id"].as_i64().unwrap())
        .collect();
    assert_eq!(ids, [c, b, a]);
    assert_eq!(get("/groups?search=TEAM").await["meta"]["total"], 2);
    assert_eq!(get("/groups?search=a_t").await["meta"]["total"], 1);
    app.admin(Method::DELETE, &format!("/groups/{a}"), Some(&admin), None)
        .await;
    assert_eq!(get("/groups").await["meta"]["total"], 2);
    let only = get("/groups?trashed=only").await;
    assert_eq!(only["data"][0]["id"], a);
    assert!(only["data"][0]["deleted_at"].is_string());
    assert_eq!(get("/groups?trashed=with").await["meta"]["total"], 3);
    assert_eq!(
        app.admin(Method::GET, "/groups?trashed=x", Some(&admin), None)
            .await
            .status,
        422
    );
    for id in ["999999", "abc"] {
        for (method, path, body) in [
            (Method::GET, format!("/groups/{id}"), None),
            (Method::GET, format!("/groups/{id}/edit"), None),
            (
                Method::PUT,
                format!("/groups/{id}"),
                Some(json!({"name": "x"})),
            ),
            (Method::DELETE, format!("/groups/{id}"), None),
            (Method::POST, format!("/groups/{id}/restore"), None),
            (Method::DELETE, format!("/groups/{id}/force"), None),
        ] {
            let res = app.admin(method.clone(), &path, Some(&admin), body).await;
            assert_eq!(res.status, 404, "{method} {path}");
            assert_eq!(res.json(), json!({"message": "Not found."}));
        }
    }
    // A deleted group is shown but not edited or deleted again; restore brings it back.
    for (method, path) in [
        (Method::GET, format!("/groups/{a}/edit")),
        (Method::PUT, format!("/groups/{a}")),
        (Method::DELETE, format!("/groups/{a}")),
    ] {
        let res = app
            .admin(method.clone(), &path, Some(&admin), Some(json!({})))
            .await;
        assert_eq!(res.status, 404, "{method} {path}");
    }
    let res = app
        .admin(
            Method::POST,
            &format!("/groups/{a}/restore"),
            Some(&admin),
            None,
        )
        .await;
    assert_eq!(res.status, 200);
    assert_eq!(res.json()["data"]["deleted_at"], Value::Null);
    let res = app
        .admin(
            Method::DELETE,
            &format!("/groups/{a}/force"),
            Some(&admin),
            None,
        )
        .await;
    assert_eq!(res.status, 204);
    assert_eq!(get("/groups?trashed=with").await["meta"]["total"], 2);
}

#[actix_web::test]
async fn a_groups_roles_reach_its_members_until_it_is_deleted() {
    let app = TestApp::new(json!({})).await;
    let admin = app.signed_in("root@example.com", &["admin"]).await;
    // No role of its own.
    let member = app.signed_in("member@example.com", &[]).await;
    let member_id = app
        .admin(Method::GET, "/account", Some(&member), None)
        .await
        .json()["data"]["id"]
        .as_i64()
        .unwrap();
    assert_eq!(
        app.admin(Method::GET, "/users", Some(&member), None)
            .await
            .status,
        403
    );
    let res = app
        .admin(
            Method::POST,
            "/groups",
            Some(&admin),
            Some(json!({"name": "readers", "user_ids": [member_id], "roles": ["reader"]})),
        )
        .await;
    assert_eq!(res.status, 201);
    let id = res.json()["data"]["id"].as_i64().unwrap();
    // At once, through the group.
    assert_eq!(
        app.admin(Method::GET, "/users", Some(&member), None)
            .await
            .status,
        200
    );
    let account = app
        .admin(Method::GET, "/account", Some(&member), None)
        .await
        .json();
    assert_eq!(account["data"]["roles"], json!(["reader"]));
    // A soft-deleted group gives nothing.
    assert_eq!(
        app.admin(Method::DELETE, &format!("/groups/{id}"), Some(&admin), None)
            .await
            .status,
        204
    );
    assert_eq!(
        app.admin(Method::GET, "/users", Some(&member), None)
            .await
            .status,
        403
    );
    // Restored, it gives its roles again; removing the member takes them away.
    app.admin(
        Method::POST,
        &format!("/groups/{id}/restore"),
        Some(&admin),
        None,
    )
    .await;
    assert_eq!(
        app.admin(Method::GET, "/users", Some(&member), None)
            .await
            .status,
        200
    );
    let res = app
        .admin(
            Method::PUT,
            &format!("/groups/{id}"),
            Some(&admin),
            Some(json!({"user_ids": []})),
        )
        .await;
    assert_eq!(res.status, 200);
    assert_eq!(
        app.admin(Method::GET, "/users", Some(&member), None)
            .await
            .status,
        403
    );
}

#[actix_web::test]
async fn members_shown_are_bounded_and_counted() {
    let app = TestApp::new(json!({})).await;
    let admin = app.signed_in("root@example.com", &["admin"]).await;
    let id = group(&app, "crowd").await;
    let mut members = Vec::new();
    for i in 0..101 {
        let user = vellum_storage::users::create_user(
            &app.db.conn,
            &format!("User {i}"),
            Some(&format!("user{i}@example.com")),
        )
        .await
        .unwrap();
        vellum_storage::groups::add_user_to_group(&app.db.conn, id, user.id)
            .await
            .unwrap();
        members.push(user.id);
    }
    for path in [format!("/groups/{id}"), "/groups".to_owned()] {
        let body = app
            .admin(Method::GET, &path, Some(&admin), None)
            .await
            .json();
        let group = if body["data"].is_array() {
            body["data"][0].clone()
        } else {
            body["data"].clone()
        };
        assert_eq!(group["users_count"], 101, "{path}");
        let shown: Vec<i64> = group["users"]
            .as_array()
            .unwrap()
            .iter()
            .map(|u| u["id"].as_i64().unwrap())
            .collect();
        assert_eq!(shown, members[..100], "{path}");
    }
    // Replacing the members with 100 of them.
    let res = app
        .admin(
            Method::PUT,
            &format!("/groups/{id}"),
            Some(&admin),
            Some(json!({"user_ids": members[1..]})),
        )
        .await;
    assert_eq!(res.status, 200);
    assert_eq!(res.json()["data"]["users_count"], 100);
}

#[actix_web::test]
async fn the_last_super_admin_through_a_group_is_kept() {
    let app = TestApp::new(json!({})).await;
    let root = create_user(&app.state, "root@example.com", "Root", &["super-admin"]).await;
    let session = app.sign_in("root@example.com", PASSWORD).await;
    let res = app
        .admin(
            Method::POST,
            "/groups",
            Some(&session),
            Some(json!({"name": "owners", "user_ids": [root], "roles": ["super-admin"]})),
        )
        .await;
    assert_eq!(res.status, 201);
    let id = res.json()["data"]["id"].as_i64().unwrap();
    // Root gives up its direct role: it is now super-admin through the group alone.
    let res = app
        .admin(
            Method::PUT,
            &format!("/users/{root}"),
            Some(&session),
            Some(json!({"roles": []})),
        )
        .await;
    assert_eq!(res.status, 200);
    for (method, path, body, field) in [
        (Method::DELETE, format!("/groups/{id}"), None, "group"),
        (Method::DELETE, format!("/groups/{id}/force"), None, "group"),
        (
            Method::PUT,
            format!("/groups/{id}"),
            Some(json!({"roles": ["reader"]})),
            "roles",
        ),
        (
            Method::PUT,
            format!("/groups/{id}"),
            Some(json!({"user_ids": []})),
            "user_ids",
        ),
        (
            Method::PUT,
            format!("/users/{root}"),
            Some(json!({"group_ids": []})),
            "group_ids",
        ),
    ] {
        let res = app.admin(method.clone(), &path, Some(&session), body).await;
        assert_eq!(res.status, 422, "{method} {path}");
        assert_eq!(
            res.json()["errors"][field],
            json!([
                "The last super-admin cannot be removed: at least one active user must keep the super-admin role."
            ]),
            "{method} {path}"
        );
    }
    // An admin (every permission, not super-admin) may not touch a group holding super-admin,
    // nor make one.
    let admin = app.signed_in("admin@example.com", &["admin"]).await;
    for (method, path, body) in [
        (Method::DELETE, format!("/groups/{id}"), None),
        (
            Method::PUT,
            format!("/groups/{id}"),
            Some(json!({"name": "mine"})),
        ),
        (
            Method::POST,
            "/groups".to_owned(),
            Some(json!({"name": "escalate", "roles": ["super-admin"]})),
        ),
    ] {
        let res = app.admin(method.clone(), &path, Some(&admin), body).await;
        assert_eq!(res.status, 403, "{method} {path}");
    }
    let shown = app
        .admin(Method::GET, &format!("/groups/{id}"), Some(&admin), None)
        .await
        .json();
    assert_eq!(
        without_times(shown)["data"]["roles"],
        json!(["super-admin"])
    );
    // A direct super-admin elsewhere: now the group may go.
    create_user(&app.state, "other@example.com", "Other", &["super-admin"]).await;
    assert_eq!(
        app.admin(
            Method::DELETE,
            &format!("/groups/{id}"),
            Some(&session),
            None
        )
        .await
        .status,
        204
    );
}
