//! Admin permissions over the admin app: every route allowed with exactly its permission and
//! denied without it; names limited to the catalog; delete removes from every role; sync.

use actix_web::http::Method;
use sea_orm::ConnectionTrait;
use serde_json::{Value, json};

use super::access_support::{
    Route, assert_allowed, assert_denied, error_fields, permission_id, send, signed_in_with,
};
use crate::support::TestApp;

#[actix_web::test]
async fn every_permissions_route_is_allowed_with_its_permission_and_denied_without() {
    let app = TestApp::new(json!({})).await;
    let outsider = signed_in_with(&app, "outsider@example.com", &["can-show-roles"]).await;
    let show = signed_in_with(&app, "show@example.com", &["can-show-permissions"]).await;
    let create = signed_in_with(&app, "create@example.com", &["can-create-permissions"]).await;
    let edit = signed_in_with(&app, "edit@example.com", &["can-edit-permissions"]).await;
    let delete = signed_in_with(&app, "delete@example.com", &["can-delete-permissions"]).await;
    let use_ai = permission_id(&app, "can-use-ai").await;
    let jobs = permission_id(&app, "can-show-jobs").await;
    let chat = permission_id(&app, "can-show-chat").await;

    let delete_ai = Route::new(
        Method::DELETE,
        format!("/settings/permissions/{use_ai}"),
        None,
    );
    let delete_jobs = Route::new(
        Method::DELETE,
        format!("/settings/permissions/{jobs}"),
        None,
    );
    let create_ai = Route::new(
        Method::POST,
        "/settings/permissions",
        Some(json!({"name": "can-use-ai"})),
    );
    let list = Route::new(Method::GET, "/settings/permissions", None);
    let sync = Route::new(Method::POST, "/settings/permissions/sync", Some(json!({})));
    let rename_chat = Route::new(
        Method::PUT,
        format!("/settings/permissions/{chat}"),
        Some(json!({"name": "can-show-chat"})),
    );
    for route in [&list, &create_ai, &rename_chat, &delete_ai, &sync] {
        assert_denied(&app, route, &outsider).await;
    }
    for (route, allowed) in [
        (&list, &show),
        (&create_ai, &create),
        (&rename_chat, &edit),
        (&delete_ai, &delete),
        (&sync, &edit),
    ] {
        for other in [&show, &create, &edit, &delete] {
            if std::ptr::eq(other, allowed) {
                continue;
            }
            let res = app
                .admin(
                    route.method.clone(),
                    &route.path,
                    Some(other),
                    route.body.clone(),
                )
                .await;
            assert_eq!(res.status, 403, "{} {}", route.method, route.path);
        }
    }
    let listed = assert_allowed(&app, &list, &show, 200).await;
    assert_eq!(listed["data"].as_array().unwrap().len(), 47);
    assert_allowed(&app, &delete_ai, &delete, 204).await;
    assert_allowed(&app, &delete_jobs, &delete, 204).await;
    let created = assert_allowed(&app, &create_ai, &create, 201).await;
    let new_id = created["data"]["id"].as_i64().unwrap();
    assert_eq!(
        created,
        json!({"data": {"id": new_id, "name": "can-use-ai", "roles_count": 0}})
    );
    let rename = Route::new(
        Method::PUT,
        format!("/settings/permissions/{new_id}"),
        Some(json!({"name": "can-show-jobs"})),
    );
    let renamed = assert_allowed(&app, &rename, &edit, 200).await;
    assert_eq!(
        renamed,
        json!({"data": {"id": new_id, "name": "can-show-jobs", "roles_count": 0}})
    );
    // A rename to its own name changes nothing.
    assert_allowed(&app, &rename_chat, &edit, 200).await;
    let synced = assert_allowed(&app, &sync, &edit, 200).await;
    assert_eq!(
        synced,
        json!({"data": {"created": 1, "pruned": 0}}),
        "can-use-ai again"
    );
}

#[actix_web::test]
async fn names_are_limited_to_the_catalog() {
    let app = TestApp::new(json!({})).await;
    let root = app.signed_in("root@example.com", &["super-admin"]).await;
    let (status, list) = send(&app, Method::GET, "/settings/permissions", &root, None).await;
    assert_eq!(status, 200);
    let show_users = permission_id(&app, "can-show-users").await;
    // super-admin, admin and reader hold it (the seed).
    assert_eq!(
        list["data"][0],
        json!({"id": show_users, "name": "can-show-users", "roles_count": 3})
    );
    let use_ai = permission_id(&app, "can-use-ai").await;
    assert!(
        list["data"]
            .as_array()
            .unwrap()
            .contains(&json!({"id": use_ai, "name": "can-use-ai", "roles_count": 2}))
    );
    for body in [
        json!({"name": "can-fly"}),
        json!({"name": "can-show-users"}),
        json!({}),
        json!({"name": ""}),
        json!({"name": ["can-use-ai"]}),
        json!({"name": "x".repeat(300)}),
    ] {
        let (status, answer) = send(
            &app,
            Method::POST,
            "/settings/permissions",
            &root,
            Some(body.clone()),
        )
        .await;
        assert_eq!(
            (status, error_fields(&answer)),
            (422, vec!["name".to_owned()]),
            "{body}"
        );
    }
    for body in [
        json!({"name": "can-fly"}),
        json!({"name": "can-use-ai"}),
        json!({}),
    ] {
        let (status, answer) = send(
            &app,
            Method::PUT,
            &format!("/settings/permissions/{show_users}"),
            &root,
            Some(body.clone()),
        )
        .await;
        assert_eq!(
            (status, error_fields(&answer)),
            (422, vec!["name".to_owned()]),
            "{body}"
        );
    }
    for path in ["/settings/permissions/999999", "/settings/permissions/abc"] {
        let res = app
            .admin(
                Method::PUT,
                path,
                Some(&root),
                Some(json!({"name": "can-use-ai"})),
            )
            .await;
        assert_eq!(
            (res.status.as_u16(), res.json()),
            (404, json!({"message": "Not found."})),
            "{path}"
        );
        let res = app.admin(Method::DELETE, path, Some(&root), None).await;
        assert_eq!(res.status, 404, "{path}");
    }
    let (_, after) = send(&app, Method::GET, "/settings/permissions", &root, None).await;
    assert_eq!(after, list, "nothing changed");
}

#[actix_web::test]
async fn delete_removes_a_permission_from_every_role_at_once() {
    let app = TestApp::new(json!({})).await;
    let root = app.signed_in("root@example.com", &["super-admin"]).await;
    let reader = app.signed_in("reader@example.com", &["reader"]).await;
    assert_eq!(
        app.admin(Method::GET, "/settings/roles", Some(&reader), None)
            .await
            .status,
        200
    );
    let show_roles = permission_id(&app, "can-show-roles").await;
    let (status, _) = send(
        &app,
        Method::DELETE,
        &format!("/settings/permissions/{show_roles}"),
        &root,
        None,
    )
    .await;
    assert_eq!(status, 204);
    assert_eq!(
        app.admin(Method::GET, "/settings/roles", Some(&reader), None)
            .await
            .status,
        403,
        "the reader's session lost it on its next request"
    );
    let (_, roles) = send(&app, Method::GET, "/settings/roles", &root, None).await;
    let count = |name: &str| {
        roles["data"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == name)
            .unwrap()["permissions_count"]
            .clone()
    };
    assert_eq!((count("admin"), count("reader")), (json!(46), json!(7)));
    let account = app
        .admin(Method::GET, "/account", Some(&reader), None)
        .await
        .json();
    assert!(
        !account["data"]["permissions"]
            .as_array()
            .unwrap()
            .contains(&json!("can-show-roles"))
    );
}

#[actix_web::test]
async fn sync_upserts_the_catalog_and_prunes_on_request() {
    let app = TestApp::new(json!({})).await;
    let root = app.signed_in("root@example.com", &["super-admin"]).await;
    // A row from an older catalog, held by admin.
    app.db
        .conn
        .execute_unprepared(
            "INSERT INTO permissions (name) VALUES ('can-legacy'); \
             INSERT INTO role_permissions (role_id, permission_id) \
             SELECT r.id, p.id FROM roles r, permissions p WHERE r.name = 'admin' AND p.name = 'can-legacy'",
        )
        .await
        .unwrap();
    for name in ["can-use-ai", "can-show-chat"] {
        let id = permission_id(&app, name).await;
        let (status, _) = send(
            &app,
            Method::DELETE,
            &format!("/settings/permissions/{id}"),
            &root,
            None,
        )
        .await;
        assert_eq!(status, 204);
    }
    let (status, body) = send(
        &app,
        Method::POST,
        "/settings/permissions/sync",
        &root,
        None,
    )
    .await;
    assert_eq!(
        (status, body),
        (200, json!({"data": {"created": 2, "pruned": 0}}))
    );
    let names = |list: &Value| -> Vec<String> {
        list["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["name"].as_str().unwrap().to_owned())
            .collect()
    };
    let (_, list) = send(&app, Method::GET, "/settings/permissions", &root, None).await;
    assert_eq!(list["data"].as_array().unwrap().len(), 48);
    assert!(
        names(&list).contains(&"can-legacy".to_owned()),
        "kept without prune"
    );
    let (status, body) = send(
        &app,
        Method::POST,
        "/settings/permissions/sync",
        &root,
        Some(json!({"prune": true})),
    )
    .await;
    assert_eq!(
        (status, body),
        (200, json!({"data": {"created": 0, "pruned": 1}}))
    );
    let (_, list) = send(&app, Method::GET, "/settings/permissions", &root, None).await;
    assert_eq!(list["data"].as_array().unwrap().len(), 47);
    assert!(!names(&list).contains(&"can-legacy".to_owned()));
    let (_, roles) = send(&app, Method::GET, "/settings/roles", &root, None).await;
    let admin = roles["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "admin")
        .unwrap()
        .clone();
    assert_eq!(
        admin["permissions_count"], 45,
        "pruned from admin; the two recreated rows are new"
    );
    let (status, body) = send(
        &app,
        Method::POST,
        "/settings/permissions/sync",
        &root,
        Some(json!({"prune": "maybe"})),
    )
    .await;
    assert_eq!(
        (status, error_fields(&body)),
        (422, vec!["prune".to_owned()])
    );
}
