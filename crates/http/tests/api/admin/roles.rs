//! Roles over the admin app: every route allowed with exactly its permission and denied
//! without it, validation, the role rules of the spec, and grant sync with cache flush.

use actix_web::http::Method;
use serde_json::{Value, json};

use super::access_support::{
    Route, assert_allowed, assert_denied, error_fields, permission_id, role_id, role_with, send,
    signed_in_with,
};
use super::{Session, create_user};
use crate::support::{TestApp, blog};

const ARTICLES: &str = "/api/v1/collections/articles/items";

#[actix_web::test]
async fn every_roles_route_is_allowed_with_its_permission_and_denied_without() {
    let app = TestApp::new(blog()).await;
    let outsider = signed_in_with(&app, "outsider@example.com", &["can-show-dashboard"]).await;
    let show = signed_in_with(&app, "show@example.com", &["can-show-roles"]).await;
    let create = signed_in_with(&app, "create@example.com", &["can-create-roles"]).await;
    let edit = signed_in_with(&app, "edit@example.com", &["can-edit-roles"]).await;
    let delete = signed_in_with(&app, "delete@example.com", &["can-delete-roles"]).await;
    let editor = role_id(&app, "editor").await;
    let doomed = role_with(&app, "doomed", &[]).await;
    let bulk_doomed = role_with(&app, "bulk-doomed", &[]).await;

    let rows: Vec<(Route, &Session, u16)> = vec![
        (Route::new(Method::GET, "/settings/roles", None), &show, 200),
        (
            Route::new(Method::GET, "/settings/roles/create", None),
            &create,
            200,
        ),
        (
            Route::new(
                Method::POST,
                "/settings/roles",
                Some(json!({"name": "fresh"})),
            ),
            &create,
            201,
        ),
        (
            Route::new(
                Method::POST,
                format!("/settings/roles/{editor}/duplicate"),
                Some(json!({"name": "editor-copy"})),
            ),
            &create,
            201,
        ),
        (
            Route::new(Method::GET, format!("/settings/roles/{editor}/edit"), None),
            &edit,
            200,
        ),
        (
            Route::new(
                Method::PUT,
                format!("/settings/roles/{editor}"),
                Some(json!({"name": "editor"})),
            ),
            &edit,
            200,
        ),
        (
            Route::new(Method::DELETE, format!("/settings/roles/{doomed}"), None),
            &delete,
            204,
        ),
        (
            Route::new(
                Method::POST,
                "/settings/roles/bulk-actions",
                Some(json!({"action": "delete", "ids": [bulk_doomed]})),
            ),
            &delete,
            200,
        ),
    ];
    for (route, _, _) in &rows {
        assert_denied(&app, route, &outsider).await;
    }
    // Each roles permission opens its own routes only.
    for (route, allowed, _) in &rows {
        for other in [&show, &create, &edit, &delete] {
            if std::ptr::eq(other, *allowed) {
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
    for (route, allowed, status) in &rows {
        assert_allowed(&app, route, allowed, *status).await;
    }
    let names: Vec<String> = app
        .admin(
            Method::GET,
            "/settings/roles?per_page=100",
            Some(&show),
            None,
        )
        .await
        .json()["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap().to_owned())
        .collect();
    assert!(names.contains(&"fresh".to_owned()) && names.contains(&"editor-copy".to_owned()));
    assert!(!names.contains(&"doomed".to_owned()) && !names.contains(&"bulk-doomed".to_owned()));
}

#[actix_web::test]
async fn the_list_is_paginated_with_counts() {
    let app = TestApp::new(blog()).await;
    let admin = app.signed_in("root@example.com", &["admin"]).await;
    create_user(&app.state, "ed@example.com", "Ed", &["editor"]).await;
    let group = vellum_storage::groups::create_group(&app.db.conn, "writers")
        .await
        .unwrap();
    let member = create_user(&app.state, "gina@example.com", "Gina", &[]).await;
    vellum_storage::groups::add_user_to_group(&app.db.conn, group.id, member)
        .await
        .unwrap();
    vellum_storage::groups::attach_role_to_group(&app.db.conn, group.id, "editor")
        .await
        .unwrap();
    app.state.invalidate().await;
    let res = app
        .admin(
            Method::GET,
            "/settings/roles?per_page=2&page=3",
            Some(&admin),
            None,
        )
        .await;
    assert_eq!(res.status, 200);
    let body = res.json();
    // super-admin, admin, reader, public are seeded; the blog adds editor (public exists).
    assert_eq!(
        body["meta"],
        json!({"current_page": 3, "last_page": 3, "per_page": 2, "total": 5})
    );
    let editor = role_id(&app, "editor").await;
    assert_eq!(
        body["data"],
        json!([{"id": editor, "name": "editor", "is_system": false, "permissions_count": 0, "users_count": 2}])
    );
    let first = app
        .admin(Method::GET, "/settings/roles", Some(&admin), None)
        .await
        .json();
    let admin_row = first["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "admin")
        .unwrap()
        .clone();
    assert_eq!(admin_row["is_system"], true);
    assert_eq!(admin_row["permissions_count"], 47);
    assert_eq!(admin_row["users_count"], 1);
    for bad in ["page=0", "per_page=101", "per_page=x"] {
        let res = app
            .admin(
                Method::GET,
                &format!("/settings/roles?{bad}"),
                Some(&admin),
                None,
            )
            .await;
        assert_eq!(res.status, 422, "{bad}");
    }
}

#[actix_web::test]
async fn store_validates_every_field_and_answers_the_role() {
    let app = TestApp::new(blog()).await;
    let admin = app.signed_in("root@example.com", &["admin"]).await;
    let show_users = permission_id(&app, "can-show-users").await;
    let matrices = json!({
        "collection_permissions": {"articles": {"read": true, "update": true, "rules": {
            "fields": {"internal_notes": {"read": false}},
            "item_filter": {"status": {"_eq": "published"}}
        }}},
        "file_permissions": {"read": true}
    });
    let mut body = matrices.clone();
    body["name"] = json!("writer");
    body["permission_ids"] = json!([show_users]);
    let (status, created) = send(&app, Method::POST, "/settings/roles", &admin, Some(body)).await;
    assert_eq!(status, 201, "{created}");
    let id = created["data"]["id"].as_i64().unwrap();
    assert_eq!(
        created,
        json!({"data": {
            "id": id, "name": "writer", "is_system": false, "permission_ids": [show_users],
            "collection_permissions": {"articles": {"read": true, "update": true, "rules": {
                "fields": {"internal_notes": {"read": false}},
                "item_filter": {"status": {"_eq": "published"}}
            }}},
            "file_permissions": {"read": true}
        }})
    );
    let (status, page) = send(
        &app,
        Method::GET,
        &format!("/settings/roles/{id}/edit"),
        &admin,
        None,
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(page["data"]["role"], created["data"]);
    assert_eq!(page["data"]["permissions"].as_array().unwrap().len(), 47);
    assert_eq!(
        page["data"]["permissions"][0],
        json!({"id": page["data"]["permissions"][0]["id"], "name": "can-show-users"})
    );
    let slugs: Vec<&str> = page["data"]["collections"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["slug"].as_str().unwrap())
        .collect();
    assert_eq!(slugs, ["authors", "tags", "articles"]);
    let (_, create_page) = send(&app, Method::GET, "/settings/roles/create", &admin, None).await;
    assert_eq!(
        create_page["data"]["permissions"],
        page["data"]["permissions"]
    );
    assert_eq!(
        create_page["data"]["collections"],
        page["data"]["collections"]
    );

    let rows: Vec<(Value, Vec<&str>)> = vec![
        (json!({}), vec!["name"]),
        (json!({"name": "editor"}), vec!["name"]),
        (json!({"name": " padded"}), vec!["name"]),
        (json!({"name": "x".repeat(256)}), vec!["name"]),
        (json!({"name": 7}), vec!["name"]),
        (
            json!({"name": "r", "permission_ids": [999_999]}),
            vec!["permission_ids"],
        ),
        (
            json!({"name": "r", "permission_ids": "all"}),
            vec!["permission_ids"],
        ),
        (
            json!({"name": "r", "permission_ids": [0]}),
            vec!["permission_ids.0"],
        ),
        (
            json!({"name": "r", "collection_permissions": {"nope": {"read": true}}}),
            vec!["collection_permissions.nope"],
        ),
        (
            json!({"name": "r", "collection_permissions": {"Bad Slug": {"read": true}}}),
            vec!["collection_permissions.Bad Slug"],
        ),
        (
            json!({"name": "r", "collection_permissions": {"articles": {"read": true, "fly": true}}}),
            vec!["collection_permissions.articles.fly"],
        ),
        (
            json!({"name": "r", "collection_permissions": {"articles": {"read": true, "rules": {"fields": {"ghost": {"read": false}}}}}}),
            vec!["collection_permissions.articles.rules.fields.ghost"],
        ),
        (
            json!({"name": "r", "collection_permissions": {"articles": {"read": true, "rules": {"item_filter": {"status": {"_like": "x"}}}}}}),
            vec!["collection_permissions.articles.rules.item_filter"],
        ),
        (
            json!({"name": "r", "collection_permissions": {"articles": {"read": true, "rules": {"item_filter": {"ghost": {"_eq": "x"}}}}}}),
            vec!["collection_permissions.articles.rules.item_filter.ghost"],
        ),
        (
            json!({"name": "r", "collection_permissions": ["articles"]}),
            vec!["collection_permissions"],
        ),
        (
            json!({"name": "r", "file_permissions": {"fly": true}}),
            vec!["file_permissions.fly"],
        ),
        (
            json!({"name": "r", "file_permissions": "all"}),
            vec!["file_permissions"],
        ),
        (json!({"name": "r\u{0}x"}), vec!["name"]),
        // Every wrong field at once.
        (
            json!({"name": "", "permission_ids": [0], "file_permissions": 1}),
            vec!["file_permissions", "name", "permission_ids.0"],
        ),
        (json!([1, 2]), vec!["body"]),
    ];
    for (body, fields) in rows {
        let (status, answer) = send(
            &app,
            Method::POST,
            "/settings/roles",
            &admin,
            Some(body.clone()),
        )
        .await;
        assert_eq!(status, 422, "{body}: {answer}");
        assert_eq!(error_fields(&answer), fields, "{body}: {answer}");
    }
    let many: serde_json::Map<String, Value> = (0..1001)
        .map(|i| (format!("c{i}"), json!({"read": true})))
        .collect();
    let (status, answer) = send(
        &app,
        Method::POST,
        "/settings/roles",
        &admin,
        Some(json!({"name": "r", "collection_permissions": many})),
    )
    .await;
    assert_eq!(
        (status, error_fields(&answer)),
        (422, vec!["collection_permissions".to_owned()])
    );
    let (_, list) = send(&app, Method::GET, "/settings/roles", &admin, None).await;
    assert_eq!(
        list["meta"]["total"], 6,
        "nothing was created by a refused store"
    );
}

#[actix_web::test]
async fn an_update_syncs_the_grants_and_every_cache_sees_it_at_once() {
    let mut app = TestApp::new(blog()).await;
    app.apply(json!({"roles": [{"name": "viewer"}], "api_keys": [{"name": "viewer-key", "role": "viewer"}]})).await;
    let admin = app.signed_in("root@example.com", &["admin"]).await;
    let viewer = role_id(&app, "viewer").await;
    // The key's role has no grant yet; the refusal is remembered by the snapshot and the cache.
    assert_eq!(app.get_as("viewer-key", ARTICLES).await.status, 403);
    assert_eq!(app.get_as("viewer-key", ARTICLES).await.status, 403);
    let (status, body) = send(
        &app,
        Method::PUT,
        &format!("/settings/roles/{viewer}"),
        &admin,
        Some(json!({"name": "viewer", "collection_permissions": {"articles": {"read": true}}})),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["data"]["collection_permissions"],
        json!({"articles": {"read": true}})
    );
    let res = app.get_as("viewer-key", ARTICLES).await;
    assert_eq!(res.status, 200, "the new grant holds at once");
    assert_eq!(res.json()["meta"]["total"], 2);

    // Admin permissions: a signed-in member of the role gains them on its next request.
    create_user(&app.state, "vic@example.com", "Vic", &["viewer"]).await;
    let vic = app.sign_in("vic@example.com", super::PASSWORD).await;
    assert_eq!(
        app.admin(Method::GET, "/settings/roles", Some(&vic), None)
            .await
            .status,
        403
    );
    let show_roles = permission_id(&app, "can-show-roles").await;
    let (status, _) = send(
        &app,
        Method::PUT,
        &format!("/settings/roles/{viewer}"),
        &admin,
        Some(json!({"name": "viewer", "permission_ids": [show_roles, show_roles]})),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(
        app.admin(Method::GET, "/settings/roles", Some(&vic), None)
            .await
            .status,
        200
    );

    // Fields left out keep their values; a rename keeps everything else.
    let (status, renamed) = send(
        &app,
        Method::PUT,
        &format!("/settings/roles/{viewer}"),
        &admin,
        Some(json!({"name": "watcher"})),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(
        renamed["data"],
        json!({"id": viewer, "name": "watcher", "is_system": false, "permission_ids": [show_roles],
            "collection_permissions": {"articles": {"read": true}}, "file_permissions": {}})
    );
    assert_eq!(
        app.get_as("viewer-key", ARTICLES).await.status,
        200,
        "the key follows its role"
    );
    // Given fields replace: no grants, no permissions.
    let (status, emptied) = send(
        &app,
        Method::PUT,
        &format!("/settings/roles/{viewer}"),
        &admin,
        Some(json!({"name": "watcher", "permission_ids": [], "collection_permissions": {}, "file_permissions": null})),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(emptied["data"]["permission_ids"], json!([]));
    assert_eq!(emptied["data"]["collection_permissions"], json!({}));
    assert_eq!(app.get_as("viewer-key", ARTICLES).await.status, 403);
    assert_eq!(
        app.admin(Method::GET, "/settings/roles", Some(&vic), None)
            .await
            .status,
        403
    );

    // 404 and 422 rows of update.
    for path in [
        "/settings/roles/999999",
        "/settings/roles/abc",
        "/settings/roles/0",
    ] {
        let res = app
            .admin(Method::PUT, path, Some(&admin), Some(json!({"name": "x"})))
            .await;
        assert_eq!(res.status, 404, "{path}");
        assert_eq!(res.json(), json!({"message": "Not found."}));
    }
    for (body, field) in [
        (json!({}), "name"),
        (json!({"name": "editor"}), "name"),
        (
            json!({"name": "watcher", "collection_permissions": {"nope": {}}}),
            "collection_permissions.nope",
        ),
        // Refused by the storage's transaction after the rename and the grants were written:
        // nothing of it stays.
        (
            json!({"name": "renamed", "collection_permissions": {"tags": {"read": true}},
                "permission_ids": [999_999]}),
            "permission_ids",
        ),
    ] {
        let (status, answer) = send(
            &app,
            Method::PUT,
            &format!("/settings/roles/{viewer}"),
            &admin,
            Some(body.clone()),
        )
        .await;
        assert_eq!(
            (status, error_fields(&answer)),
            (422, vec![field.to_owned()]),
            "{body}"
        );
    }
    let (_, unchanged) = send(
        &app,
        Method::GET,
        &format!("/settings/roles/{viewer}/edit"),
        &admin,
        None,
    )
    .await;
    assert_eq!(unchanged["data"]["role"], emptied["data"]);
}

#[actix_web::test]
async fn duplicate_copies_permissions_and_matrices_but_not_memberships() {
    let app = TestApp::new(blog()).await;
    let admin = app.signed_in("root@example.com", &["admin"]).await;
    let editor = role_id(&app, "editor").await;
    let ids = [
        permission_id(&app, "can-show-users").await,
        permission_id(&app, "can-edit-users").await,
    ];
    let (status, source) = send(
        &app,
        Method::PUT,
        &format!("/settings/roles/{editor}"),
        &admin,
        Some(json!({"name": "editor", "permission_ids": ids})),
    )
    .await;
    assert_eq!(status, 200);
    create_user(&app.state, "ed@example.com", "Ed", &["editor"]).await;
    let res = app
        .admin(
            Method::POST,
            &format!("/settings/roles/{editor}/duplicate"),
            Some(&admin),
            Some(json!({"name": "editor-copy"})),
        )
        .await;
    assert_eq!(res.status, 201);
    let copy = res.json();
    let copy_id = copy["data"]["id"].as_i64().unwrap();
    assert_eq!(
        res.header("location"),
        Some(format!("/settings/roles/{copy_id}/edit").as_str())
    );
    let mut expected = source["data"].clone();
    expected["id"] = json!(copy_id);
    expected["name"] = json!("editor-copy");
    assert_eq!(copy["data"], expected);
    let list = app
        .admin(Method::GET, "/settings/roles", Some(&admin), None)
        .await
        .json();
    let users = |name: &str| {
        list["data"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == name)
            .unwrap()["users_count"]
            .clone()
    };
    assert_eq!(users("editor"), 1);
    assert_eq!(users("editor-copy"), 0, "memberships are not copied");
    // The copy's API grants are the source's.
    vellum_storage::keys::create_api_key(
        &app.db.conn,
        vellum_storage::keys::NewApiKey {
            name: "copy-key",
            role: "editor-copy",
            secret: &vellum_policy::ApiKeySecret::parse("ek_copycopycopy0123456789abcdef012345")
                .unwrap(),
            ip_allowlist: &vellum_policy::IpAllowlist::default(),
            expires_at: None,
        },
    )
    .await
    .unwrap();
    let req = TestApp::request(Method::GET, ARTICLES).insert_header((
        "authorization",
        "Bearer ek_copycopycopy0123456789abcdef012345",
    ));
    let listed = app.send(req).await;
    assert_eq!(listed.status, 200);
    assert!(
        listed.json()["data"][0]["data"]
            .get("internal_notes")
            .is_none(),
        "field rules copied"
    );

    // A browser is redirected to the copy's edit page.
    let browser = app
        .send(
            TestApp::request(Method::POST, &format!("/settings/roles/{editor}/duplicate"))
                .insert_header(("accept", "text/html"))
                .insert_header(("cookie", admin.cookie.clone()))
                .set_json(json!({"name": "editor-copy-2"})),
        )
        .await;
    assert_eq!(browser.status, 303);
    assert!(browser.header("location").unwrap().ends_with("/edit"));

    // Seeded admin and reader may be duplicated; public and super-admin may not.
    for (name, status) in [
        ("admin", 201),
        ("reader", 201),
        ("public", 403),
        ("super-admin", 403),
    ] {
        let id = role_id(&app, name).await;
        let res = app
            .admin(
                Method::POST,
                &format!("/settings/roles/{id}/duplicate"),
                Some(&admin),
                Some(json!({"name": format!("{name}-clone")})),
            )
            .await;
        assert_eq!(res.status, status, "{name}");
        if status == 201 {
            assert_eq!(
                res.json()["data"]["is_system"],
                false,
                "a copy is never a system role"
            );
        } else {
            assert_eq!(res.json(), json!({"message": "Forbidden."}));
        }
    }
    let admin_clone = role_id(&app, "admin-clone").await;
    let (_, clone) = send(
        &app,
        Method::GET,
        &format!("/settings/roles/{admin_clone}/edit"),
        &admin,
        None,
    )
    .await;
    assert_eq!(
        clone["data"]["role"]["permission_ids"]
            .as_array()
            .unwrap()
            .len(),
        47
    );
    // The name is required and unique; an unknown role is 404.
    for (body, field) in [
        (json!({}), "name"),
        (json!({"name": "editor"}), "name"),
        (json!({"name": ""}), "name"),
    ] {
        let (status, answer) = send(
            &app,
            Method::POST,
            &format!("/settings/roles/{editor}/duplicate"),
            &admin,
            Some(body),
        )
        .await;
        assert_eq!(
            (status, error_fields(&answer)),
            (422, vec![field.to_owned()])
        );
    }
    for path in [
        "/settings/roles/999999/duplicate",
        "/settings/roles/x/duplicate",
    ] {
        let res = app
            .admin(Method::POST, path, Some(&admin), Some(json!({"name": "n"})))
            .await;
        assert_eq!(res.status, 404, "{path}");
    }
}

#[actix_web::test]
async fn system_roles_keep_their_rules() {
    let mut app = TestApp::new(blog()).await;
    let admin = app.signed_in("root@example.com", &["admin"]).await;
    let public = role_id(&app, "public").await;
    let root = role_id(&app, "super-admin").await;
    let show_users = permission_id(&app, "can-show-users").await;
    // Neither is deleted nor renamed; public holds no admin permission.
    for id in [public, root] {
        let res = app
            .admin(
                Method::DELETE,
                &format!("/settings/roles/{id}"),
                Some(&admin),
                None,
            )
            .await;
        assert_eq!(
            (res.status.as_u16(), res.json()),
            (403, json!({"message": "Forbidden."}))
        );
    }
    for (id, body) in [
        (public, json!({"name": "anyone"})),
        (root, json!({"name": "root"})),
        (
            public,
            json!({"name": "public", "permission_ids": [show_users]}),
        ),
    ] {
        let (status, answer) = send(
            &app,
            Method::PUT,
            &format!("/settings/roles/{id}"),
            &admin,
            Some(body.clone()),
        )
        .await;
        assert_eq!(
            (status, answer),
            (403, json!({"message": "Forbidden."})),
            "{body}"
        );
    }
    // Only public's matrices are editable, and the public API follows at once.
    assert_eq!(app.get("/api/v1/collections/tags/items").await.status, 403);
    let (status, body) = send(
        &app,
        Method::PUT,
        &format!("/settings/roles/{public}"),
        &admin,
        Some(json!({"name": "public", "permission_ids": [], "collection_permissions": {"tags": {"read": true}}})),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["data"]["collection_permissions"],
        json!({"tags": {"read": true}})
    );
    assert_eq!(app.get("/api/v1/collections/tags/items").await.status, 200);
    assert_eq!(
        app.get("/api/v1/collections/articles/items").await.status,
        403,
        "replaced"
    );
    // super-admin keeps its name; its permissions may be edited.
    let (status, _) = send(
        &app,
        Method::PUT,
        &format!("/settings/roles/{root}"),
        &admin,
        Some(json!({"name": "super-admin", "permission_ids": [show_users]})),
    )
    .await;
    assert_eq!(status, 200);
    // Seeded admin and reader are deletable (the policy catalog); an unknown id is 404.
    for name in ["reader", "admin"] {
        let id = role_id(&app, name).await;
        let res = app
            .admin(
                Method::DELETE,
                &format!("/settings/roles/{id}"),
                Some(&admin),
                None,
            )
            .await;
        assert_eq!(res.status, 204, "{name}");
    }
    // root@ held admin, which is gone: its session now lacks every permission.
    let res = app
        .admin(Method::GET, "/settings/roles", Some(&admin), None)
        .await;
    assert_eq!(res.status, 403);
    let root_user = app.signed_in("boss@example.com", &["super-admin"]).await;
    for path in ["/settings/roles/999999", "/settings/roles/nope"] {
        let res = app
            .admin(Method::DELETE, path, Some(&root_user), None)
            .await;
        assert_eq!(res.status, 404);
    }
    let res = app
        .admin(
            Method::GET,
            "/settings/roles/999999/edit",
            Some(&root_user),
            None,
        )
        .await;
    assert_eq!(res.status, 404);

    // Deleting a role deletes its keys: they stop authenticating at once.
    app.apply(
        json!({"roles": [{"name": "temp", "collection_permissions": {"tags": {"read": true}}}],
        "api_keys": [{"name": "temp-key", "role": "temp"}]}),
    )
    .await;
    assert_eq!(
        app.get_as("temp-key", "/api/v1/collections/tags/items")
            .await
            .status,
        200
    );
    let temp = role_id(&app, "temp").await;
    let res = app
        .admin(
            Method::DELETE,
            &format!("/settings/roles/{temp}"),
            Some(&root_user),
            None,
        )
        .await;
    assert_eq!(res.status, 204);
    let after = app
        .get_as("temp-key", "/api/v1/collections/tags/items")
        .await;
    assert_eq!(
        (after.status.as_u16(), after.json()),
        (401, json!({"message": "Invalid API key."}))
    );
}

#[actix_web::test]
async fn bulk_delete_skips_super_admin_and_public() {
    let app = TestApp::new(blog()).await;
    let deleter = signed_in_with(&app, "del@example.com", &["can-delete-roles"]).await;
    let custom = role_with(&app, "custom", &[]).await;
    let other = role_with(&app, "other", &[]).await;
    let root = role_id(&app, "super-admin").await;
    let public = role_id(&app, "public").await;
    let (status, body) = send(
        &app,
        Method::POST,
        "/settings/roles/bulk-actions",
        &deleter,
        Some(json!({"action": "delete", "ids": [root, custom, public, 999_999, other, custom]})),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body,
        json!({"data": {"deleted": ["custom", "other"], "skipped": ["super-admin", "public"]}})
    );
    let left: Vec<String> = vellum_storage::roles::list_roles(&app.db.conn)
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.name)
        .collect();
    assert!(left.contains(&"super-admin".to_owned()) && left.contains(&"public".to_owned()));
    assert!(!left.contains(&"custom".to_owned()));
    let too_many: Vec<i64> = (1..=101).collect();
    for (body, fields) in [
        (json!({"action": "archive", "ids": [root]}), vec!["action"]),
        (json!({"ids": [root]}), vec!["action"]),
        (json!({"action": "delete"}), vec!["ids"]),
        (json!({"action": "delete", "ids": []}), vec!["ids"]),
        (json!({"action": "delete", "ids": "all"}), vec!["ids"]),
        (json!({"action": "delete", "ids": [-1]}), vec!["ids.0"]),
        (json!({"action": "delete", "ids": too_many}), vec!["ids"]),
        (
            json!({"action": "restore", "ids": null}),
            vec!["action", "ids"],
        ),
    ] {
        let (status, answer) = send(
            &app,
            Method::POST,
            "/settings/roles/bulk-actions",
            &deleter,
            Some(body.clone()),
        )
        .await;
        assert_eq!(status, 422, "{body}");
        assert_eq!(error_fields(&answer), fields, "{body}");
    }
}
