//! `POST /collections/{collection}/items/bulk`: each action gated by its own permission, the
//! body validated, every id handled on its own with failures reported per id.

use actix_web::http::Method;
use serde_json::{Value, json};

use super::access_support::{error_fields, send};
use super::items::{app_and_root, create, ids, item_activity};
use super::users::session_with;

const BULK: &str = "/collections/articles/items/bulk";

#[actix_web::test]
async fn each_action_needs_its_own_permission() {
    let (app, root) = app_and_root().await;
    let deleter = session_with(&app, "deleter", &["can-delete-collections"]).await;
    let restorer = session_with(&app, "restorer", &["can-restore-collections"]).await;
    let forcer = session_with(&app, "forcer", &["can-force-delete-collections"]).await;
    let forbidden = json!({"message": "Forbidden."});
    for (session, action) in [
        (&deleter, "restore"),
        (&deleter, "force_delete"),
        (&restorer, "delete"),
        (&restorer, "force_delete"),
        (&forcer, "delete"),
        (&forcer, "restore"),
    ] {
        let body = json!({"action": action, "ids": [5]});
        let (status, answer) = send(&app, Method::POST, BULK, session, Some(body)).await;
        assert_eq!((status, &answer), (403, &forbidden), "{action}");
    }
    let anonymous = app
        .admin(
            Method::POST,
            BULK,
            None,
            Some(json!({"action": "delete", "ids": [5]})),
        )
        .await;
    assert_eq!(anonymous.status, 401);
    // Nothing was deleted by the refusals.
    let (_, live) = send(
        &app,
        Method::GET,
        "/collections/articles/items",
        &root,
        None,
    )
    .await;
    assert_eq!(ids(&live), [4, 5]);

    let ok = json!({"data": {"succeeded": [5], "failed": []}});
    for (session, action) in [
        (&deleter, "delete"),
        (&restorer, "restore"),
        (&forcer, "force_delete"),
    ] {
        let body = json!({"action": action, "ids": [5]});
        let answer = send(&app, Method::POST, BULK, session, Some(body)).await;
        assert_eq!(answer, (200, ok.clone()), "{action}");
    }
    let (_, live) = send(
        &app,
        Method::GET,
        "/collections/articles/items",
        &root,
        None,
    )
    .await;
    assert_eq!(ids(&live), [4]);
}

#[actix_web::test]
async fn partial_failures_are_reported_per_id() {
    let (app, root) = app_and_root().await;
    let extra = create(&app, &root, "articles", json!({"title": "extra"})).await;
    let bulk = |action: &str, ids: Value| {
        let body = json!({"action": action, "ids": ids});
        let (app, root) = (&app, &root);
        async move {
            let (status, body) = send(app, Method::POST, BULK, root, Some(body)).await;
            assert_eq!(status, 200, "{body}");
            body["data"].clone()
        }
    };
    // An unknown id, an author's id (another collection), a repeated id.
    assert_eq!(
        bulk("delete", json!([4, 999, 1, 5, 4])).await,
        json!({"succeeded": [4, 5], "failed": [
            {"id": 999, "message": "Not found."},
            {"id": 1, "message": "Not found."}
        ]})
    );
    // Already deleted.
    assert_eq!(
        bulk("delete", json!([4, extra])).await,
        json!({"succeeded": [extra], "failed": [{"id": 4, "message": "Not found."}]})
    );
    let (_, trash) = send(
        &app,
        Method::GET,
        "/collections/articles/items?trashed=1",
        &root,
        None,
    )
    .await;
    assert_eq!(ids(&trash), [4, 5, extra]);
    assert_eq!(
        bulk("restore", json!([4, 999])).await,
        json!({"succeeded": [4], "failed": [{"id": 999, "message": "Not found."}]})
    );
    // Not in the trash.
    assert_eq!(
        bulk("restore", json!([4, 5])).await,
        json!({"succeeded": [5], "failed": [{"id": 4, "message": "The item is not deleted."}]})
    );
    assert_eq!(
        bulk("force_delete", json!([extra, 999, 5])).await,
        json!({"succeeded": [extra, 5], "failed": [{"id": 999, "message": "Not found."}]})
    );
    let (_, live) = send(
        &app,
        Method::GET,
        "/collections/articles/items",
        &root,
        None,
    )
    .await;
    assert_eq!(ids(&live), [4]);
    let (_, trash) = send(
        &app,
        Method::GET,
        "/collections/articles/items?trashed=1",
        &root,
        None,
    )
    .await;
    assert_eq!(ids(&trash), Vec::<i64>::new());
    // One activity entry per item changed, none for the failures.
    let events: Vec<(String, String)> = item_activity(&app, &root)
        .await
        .into_iter()
        .filter(|(e, ..)| e != "created")
        .map(|(e, id, _)| (e, id))
        .collect();
    let expected: Vec<(String, String)> = [
        ("force_deleted", "5"),
        ("force_deleted", &extra.to_string()),
        ("restored", "5"),
        ("restored", "4"),
        ("deleted", &extra.to_string()),
        ("deleted", "5"),
        ("deleted", "4"),
    ]
    .into_iter()
    .map(|(e, id)| (e.to_owned(), id.to_owned()))
    .collect();
    assert_eq!(events, expected);
}

#[actix_web::test]
async fn the_body_is_validated() {
    let (app, root) = app_and_root().await;
    let many: Vec<i64> = (1..=101).collect();
    for (body, field) in [
        (json!({"ids": [4]}), "action"),
        (json!({"action": "purge", "ids": [4]}), "action"),
        (json!({"action": 1, "ids": [4]}), "action"),
        (json!({"action": "delete"}), "ids"),
        (json!({"action": "delete", "ids": []}), "ids"),
        (json!({"action": "delete", "ids": many}), "ids"),
        (json!({"action": "delete", "ids": [0]}), "ids"),
        (json!({"action": "delete", "ids": [-4]}), "ids"),
        (json!({"action": "delete", "ids": ["4"]}), "ids"),
        (json!({"action": "delete", "ids": [4.5]}), "ids"),
        (json!({"action": "delete", "ids": 4}), "ids"),
    ] {
        let (status, answer) = send(&app, Method::POST, BULK, &root, Some(body.clone())).await;
        assert_eq!(status, 422, "{body}: {answer}");
        assert_eq!(error_fields(&answer), [field], "{body}");
    }
    let (status, _) = send(
        &app,
        Method::POST,
        "/collections/nope/items/bulk",
        &root,
        Some(json!({"action": "delete", "ids": [4]})),
    )
    .await;
    assert_eq!(status, 404);
    // 100 ids is the most, and allowed.
    let hundred: Vec<i64> = (1..=100).collect();
    let (status, body) = send(
        &app,
        Method::POST,
        BULK,
        &root,
        Some(json!({"action": "restore", "ids": hundred})),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(body["data"]["failed"].as_array().unwrap().len(), 100);
    let (_, live) = send(
        &app,
        Method::GET,
        "/collections/articles/items",
        &root,
        None,
    )
    .await;
    assert_eq!(ids(&live), [4, 5], "nothing changed");
}
