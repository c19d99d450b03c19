//! Project settings, the dashboard and the activity log over the admin app: each route allowed
//! with exactly its permission and denied without it; settings validated like the manifest and
//! applied at once; the log records every change by name of the keys, never values of secrets.

use actix_web::http::Method;
use serde_json::{Value, json};

use super::access_support::{
    Route, assert_allowed, assert_denied, error_fields, role_id, send, signed_in_with,
};
use crate::support::{TestApp, blog};

#[actix_web::test]
async fn every_route_is_allowed_with_its_permission_and_denied_without() {
    let app = TestApp::new(blog()).await;
    let outsider = signed_in_with(&app, "outsider@example.com", &["can-show-roles"]).await;
    let rows = [
        (
            Route::new(Method::GET, "/settings/project", None),
            "can-manage-project-settings",
        ),
        (
            Route::new(
                Method::PUT,
                "/settings/project",
                Some(json!({"daily_prompt_limit": 7})),
            ),
            "can-manage-project-settings",
        ),
        (Route::new(Method::GET, "/", None), "can-show-dashboard"),
        (
            Route::new(Method::GET, "/activity-logs", None),
            "can-show-activity-logs",
        ),
    ];
    for (i, (route, permission)) in rows.iter().enumerate() {
        assert_denied(&app, route, &outsider).await;
        let allowed =
            signed_in_with(&app, &format!("allowed{i}@example.com"), &[*permission]).await;
        assert_allowed(&app, route, &allowed, 200).await;
    }
}

#[actix_web::test]
async fn settings_are_read_and_written_with_the_manifest_s_validation() {
    let app = TestApp::new(json!({})).await;
    let admin = app.signed_in("root@example.com", &["admin"]).await;
    let defaults = json!({"data": {
        "content_locales": ["en"], "default_locale": "en", "public_api_allowed_origins": [],
        "files_max_upload_bytes": 52_428_800, "chat_max_upload_bytes": 10_485_760,
        "daily_prompt_limit": 100
    }});
    let (status, body) = send(&app, Method::GET, "/settings/project", &admin, None).await;
    assert_eq!((status, &body), (200, &defaults));
    // Both locale keys at once (neither alone could move the project from en to de); origins
    // stored canonical; the rest keeps its values.
    let (status, body) = send(
        &app,
        Method::PUT,
        "/settings/project",
        &admin,
        Some(
            json!({"content_locales": ["de", "fr"], "default_locale": "de",
            "public_api_allowed_origins": "HTTPS://App.Example.com:443\nhttp://localhost:3000"}),
        ),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body,
        json!({"data": {
            "content_locales": ["de", "fr"], "default_locale": "de",
            "public_api_allowed_origins": ["https://app.example.com", "http://localhost:3000"],
            "files_max_upload_bytes": 52_428_800, "chat_max_upload_bytes": 10_485_760,
            "daily_prompt_limit": 100
        }})
    );
    let (_, again) = send(&app, Method::GET, "/settings/project", &admin, None).await;
    assert_eq!(again, body);
    // An empty object changes nothing.
    let (status, same) = send(
        &app,
        Method::PUT,
        "/settings/project",
        &admin,
        Some(json!({})),
    )
    .await;
    assert_eq!((status, &same), (200, &body));

    let rows: Vec<(Value, Vec<&str>)> = vec![
        (json!({"theme": "dark"}), vec!["theme"]),
        (json!({"hash_key": "00"}), vec!["hash_key"]),
        (json!({"default_locale": "en"}), vec!["default_locale"]),
        (json!({"content_locales": ["EN"]}), vec!["content_locales"]),
        (json!({"content_locales": "de"}), vec!["content_locales"]),
        (
            json!({"public_api_allowed_origins": ["https://a.test/app"]}),
            vec!["public_api_allowed_origins"],
        ),
        (
            json!({"files_max_upload_bytes": -1, "daily_prompt_limit": "5", "chat_max_upload_bytes": 1.5}),
            vec![
                "chat_max_upload_bytes",
                "daily_prompt_limit",
                "files_max_upload_bytes",
            ],
        ),
        (
            json!({"content_locales": vec!["de"; 101]}),
            vec!["content_locales"],
        ),
        (json!({"default_locale": "d\u{0}e"}), vec!["default_locale"]),
        (json!(["de"]), vec!["body"]),
    ];
    for (payload, fields) in rows {
        let (status, answer) = send(
            &app,
            Method::PUT,
            "/settings/project",
            &admin,
            Some(payload.clone()),
        )
        .await;
        assert_eq!(status, 422, "{payload}: {answer}");
        assert_eq!(error_fields(&answer), fields, "{payload}: {answer}");
    }
    let (_, after) = send(&app, Method::GET, "/settings/project", &admin, None).await;
    assert_eq!(after, body, "nothing written by a refused update");
}

#[actix_web::test]
async fn an_origin_allowlist_takes_effect_on_the_public_api_at_once() {
    let app = TestApp::new(blog()).await;
    let admin = app.signed_in("root@example.com", &["admin"]).await;
    let path = "/api/v1/collections/articles/items";
    assert_eq!(app.get(path).await.status, 200);
    let (status, _) = send(
        &app,
        Method::PUT,
        "/settings/project",
        &admin,
        Some(json!({"public_api_allowed_origins": ["https://app.example.com"]})),
    )
    .await;
    assert_eq!(status, 200);
    let res = app.get(path).await;
    assert_eq!(
        (res.status.as_u16(), res.json()),
        (403, json!({"message": "Origin required or API key."}))
    );
    let res = app
        .send(
            TestApp::request(Method::GET, path)
                .insert_header(("origin", "https://app.example.com")),
        )
        .await;
    assert_eq!(res.status, 200);
    let (status, _) = send(
        &app,
        Method::PUT,
        "/settings/project",
        &admin,
        Some(json!({"public_api_allowed_origins": []})),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(app.get(path).await.status, 200, "the gate is off again");
}

#[actix_web::test]
async fn the_dashboard_counts_what_is_not_deleted() {
    let mut app = TestApp::new(blog()).await;
    app.apply(json!({"folders": [{"name": "press", "parent": null, "access": null}]}))
        .await;
    let viewer = signed_in_with(&app, "dash@example.com", &["can-show-dashboard"]).await;
    let (status, body) = send(&app, Method::GET, "/", &viewer, None).await;
    assert_eq!(
        (status, body),
        (
            200,
            json!({"data": {"collections": 3, "items": 5, "files": 0, "users": 1}})
        )
    );
    app.upload_file(Some("editor-key"), "a.txt", b"hello").await;
    let uploaded = app.upload_file(Some("editor-key"), "b.txt", b"world").await;
    let deleted = app
        .delete(Some("editor-key"), "/api/v1/collections/articles/items/5")
        .await;
    assert_eq!(deleted.status, 204);
    let _ = uploaded;
    app.signed_in("second@example.com", &[]).await;
    let (_, body) = send(&app, Method::GET, "/", &viewer, None).await;
    assert_eq!(
        body,
        json!({"data": {"collections": 3, "items": 4, "files": 2, "users": 2}})
    );
}

#[actix_web::test]
async fn the_activity_log_records_every_change_newest_first() {
    let app = TestApp::new(blog()).await;
    let admin = app.signed_in("root@example.com", &["admin"]).await;
    let auditor = signed_in_with(&app, "audit@example.com", &["can-show-activity-logs"]).await;
    let admin_id = app
        .admin(Method::GET, "/account", Some(&admin), None)
        .await
        .json()["data"]["id"]
        .clone();
    // One change of each kind.
    let (_, role) = send(
        &app,
        Method::POST,
        "/settings/roles",
        &admin,
        Some(json!({"name": "r", "file_permissions": {"read": true}})),
    )
    .await;
    let role = role["data"]["id"].as_i64().unwrap();
    send(
        &app,
        Method::PUT,
        &format!("/settings/roles/{role}"),
        &admin,
        Some(json!({"name": "r2"})),
    )
    .await;
    send(
        &app,
        Method::POST,
        &format!("/settings/roles/{role}/duplicate"),
        &admin,
        Some(json!({"name": "r3"})),
    )
    .await;
    let (_, key) = send(
        &app,
        Method::POST,
        "/settings/api-keys",
        &admin,
        Some(json!({"name": "k", "role": "r2"})),
    )
    .await;
    let key_id = key["data"]["id"].as_i64().unwrap();
    let secret = key["data"]["secret"].as_str().unwrap().to_owned();
    send(
        &app,
        Method::DELETE,
        &format!("/settings/api-keys/{key_id}"),
        &admin,
        None,
    )
    .await;
    send(
        &app,
        Method::PUT,
        "/settings/project",
        &admin,
        Some(json!({"daily_prompt_limit": 5, "default_locale": "en"})),
    )
    .await;
    let perm = super::access_support::permission_id(&app, "can-use-ai").await;
    send(
        &app,
        Method::DELETE,
        &format!("/settings/permissions/{perm}"),
        &admin,
        None,
    )
    .await;
    send(
        &app,
        Method::POST,
        "/settings/permissions/sync",
        &admin,
        None,
    )
    .await;
    send(
        &app,
        Method::DELETE,
        &format!("/settings/roles/{role}"),
        &admin,
        None,
    )
    .await;
    let r3 = role_id(&app, "r3").await;
    send(
        &app,
        Method::POST,
        "/settings/roles/bulk-actions",
        &admin,
        Some(json!({"action": "delete", "ids": [r3]})),
    )
    .await;

    let res = app
        .admin(
            Method::GET,
            &format!("/activity-logs?user_id={admin_id}&per_page=100"),
            Some(&auditor),
            None,
        )
        .await;
    assert_eq!(res.status, 200);
    let text = String::from_utf8_lossy(&res.body).into_owned();
    assert!(!text.contains(&secret), "no secret in the log");
    assert!(!text.contains(admin.token()), "no session token in the log");
    let log = res.json();
    let events: Vec<(String, String)> = log["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["log_name"].as_str().unwrap().to_owned(),
                e["event"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let expected: Vec<(String, String)> = [
        ("roles", "deleted"),
        ("roles", "deleted"),
        ("permissions", "synced"),
        ("permissions", "deleted"),
        ("settings", "updated"),
        ("api_keys", "revoked"),
        ("api_keys", "created"),
        ("roles", "duplicated"),
        ("roles", "updated"),
        ("roles", "created"),
        ("auth", "signed_in"),
    ]
    .iter()
    .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
    .collect();
    assert_eq!(events, expected);
    let settings = &log["data"][4];
    assert_eq!(
        settings["properties"],
        json!({"changed": ["daily_prompt_limit"]}),
        "only what changed"
    );
    // The shape of one entry, and the subject filter.
    let res = app
        .admin(
            Method::GET,
            &format!("/activity-logs?subject_type=role&subject_id={role}&log_name=roles"),
            Some(&auditor),
            None,
        )
        .await;
    let page = res.json();
    assert_eq!(
        page["meta"],
        json!({"current_page": 1, "last_page": 1, "per_page": 15, "total": 3})
    );
    let created = page["data"][2].clone();
    assert_eq!(
        created,
        json!({"id": created["id"], "log_name": "roles", "event": "created", "subject_type": "role",
            "subject_id": role.to_string(),
            "properties": {"changed": ["name", "file_permissions"]},
            "created_at": created["created_at"],
            "user": {"id": admin_id, "name": "root@example.com"}})
    );
    assert_eq!(page["data"][1]["properties"], json!({"changed": ["name"]}));
    assert_eq!(
        page["data"][0]["properties"],
        json!({"changed": [], "name": "r2"})
    );
    let res = app
        .admin(
            Method::GET,
            "/activity-logs?per_page=2&page=2",
            Some(&auditor),
            None,
        )
        .await;
    assert_eq!(res.json()["data"].as_array().unwrap().len(), 2);
    for bad in [
        "user_id=abc",
        "user_id=0",
        "per_page=0",
        "page=x",
        &format!("subject_type={}", "x".repeat(256)),
        "log_name=a%00b",
    ] {
        let res = app
            .admin(
                Method::GET,
                &format!("/activity-logs?{bad}"),
                Some(&auditor),
                None,
            )
            .await;
        assert_eq!(res.status, 422, "{bad}");
    }
    let res = app
        .admin(
            Method::GET,
            "/activity-logs?user_id=999999",
            Some(&auditor),
            None,
        )
        .await;
    assert_eq!(res.json()["meta"]["total"], 0);
}
