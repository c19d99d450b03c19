//! `GET /collections/{collection}/items/{item}/preview-as-role?role=NAME`: the payload is
//! byte for byte what the role's public API answers; `readable` is false without the read grant
//! or outside the role's item filter; the explanation names the grant, the item filter, the
//! redacted fields and the downgraded expansions.

use actix_web::http::Method;
use serde_json::{Value, json};

use super::access_support::{error_fields, send};
use super::items::app_and_root;
use super::{Session, admin_request};
use crate::support::TestApp;

async fn preview(app: &TestApp, s: &Session, item: i64, query: &str) -> (u16, Value, String) {
    let path = format!("/collections/articles/items/{item}/preview-as-role?{query}");
    let res = app
        .send(admin_request(Method::GET, &path, Some(s), None))
        .await;
    let text = String::from_utf8(res.body.clone()).unwrap();
    let json = if res.body.is_empty() {
        Value::Null
    } else {
        res.json()
    };
    (res.status.as_u16(), json, text)
}

/// The raw `data` of a public API response (`{"data":…}`), as text.
fn raw_data(body: &[u8]) -> String {
    let text = String::from_utf8(body.to_vec()).unwrap();
    text.strip_prefix("{\"data\":")
        .and_then(|t| t.strip_suffix('}'))
        .unwrap_or_else(|| panic!("not an envelope: {text}"))
        .to_owned()
}

#[actix_web::test]
async fn the_payload_is_the_roles_public_api_answer() {
    let (app, root) = app_and_root().await;
    let (status, body, text) = preview(&app, &root, 4, "role=public").await;
    assert_eq!(status, 200, "{body}");
    let public = app.get("/api/v1/collections/articles/items/4").await;
    assert_eq!(public.status, 200);
    let raw = raw_data(&public.body);
    assert!(
        text.contains(&format!("\"payload\":{raw}")),
        "{text}\nlacks\n{raw}"
    );
    let data = &body["data"];
    assert_eq!(data["role"], "public");
    assert_eq!(data["readable"], true);
    assert!(data["payload"]["data"].get("internal_notes").is_none());
    assert_eq!(data["payload"]["data"]["title"], "Hello");
    assert_eq!(
        data["explanation"],
        json!({
            "grant": {"allowed": true, "rule": "collection_grant", "reason": "allowed: the role has the read grant on collection \"articles\""},
            "item": {"allowed": true, "rule": "item_filter", "reason": data["explanation"]["item"]["reason"]},
            "item_filter": {"filter": {"status": {"_eq": "published"}}, "passes": true},
            "redacted_fields": ["internal_notes"],
            "downgraded_expansions": []
        })
    );

    // The public show's parameters pass through; tags are no collection `public` reads, so they
    // stay lean links, which the explanation lists.
    let query = "include=author,tags&locale=de";
    let (status, body, text) = preview(&app, &root, 4, &format!("role=public&{query}")).await;
    assert_eq!(status, 200);
    let public = app
        .get(&format!("/api/v1/collections/articles/items/4?{query}"))
        .await;
    let raw = raw_data(&public.body);
    assert!(
        text.contains(&format!("\"payload\":{raw}")),
        "{text}\nlacks\n{raw}"
    );
    let payload = &body["data"]["payload"]["data"];
    assert_eq!(payload["title"], "Hallo");
    assert_eq!(payload["author"]["data"]["name"], "Ada");
    let downgraded = &body["data"]["explanation"]["downgraded_expansions"];
    let lean: Vec<(Value, Value, Value)> = downgraded
        .as_array()
        .unwrap()
        .iter()
        .map(|d| (d["field"].clone(), d["id"].clone(), d["outcome"].clone()))
        .collect();
    assert_eq!(
        lean,
        [
            (json!("tags"), json!(2), json!("lean")),
            (json!("tags"), json!(3), json!("lean"))
        ]
    );
    assert!(
        downgraded[0]["reason"].as_str().unwrap().contains("tags"),
        "{downgraded}"
    );

    // The editor reads tags: nothing is downgraded for it.
    let (_, body, text) = preview(&app, &root, 4, &format!("role=editor&{query}")).await;
    assert_eq!(
        body["data"]["explanation"]["downgraded_expansions"],
        json!([])
    );
    let editor = app
        .get_as(
            "editor-key",
            &format!("/api/v1/collections/articles/items/4?{query}"),
        )
        .await;
    assert!(text.contains(&format!("\"payload\":{}", raw_data(&editor.body))));
}

#[actix_web::test]
async fn unreadable_items_have_no_payload_and_say_why() {
    let (app, root) = app_and_root().await;
    // Item 5 is a draft, outside the public role's item filter.
    assert_eq!(
        app.get("/api/v1/collections/articles/items/5").await.status,
        404
    );
    let (status, body, _) = preview(&app, &root, 5, "role=public").await;
    assert_eq!(status, 200);
    let data = &body["data"];
    assert_eq!(
        (&data["readable"], &data["payload"]),
        (&json!(false), &Value::Null)
    );
    assert_eq!(data["explanation"]["grant"]["allowed"], true);
    assert_eq!(data["explanation"]["item"]["allowed"], false);
    assert_eq!(data["explanation"]["item"]["rule"], "item_filter");
    assert_eq!(data["explanation"]["item_filter"]["passes"], false);

    // `reader` has no grant on articles: nothing readable, every field redacted.
    let (status, body, _) = preview(&app, &root, 4, "role=reader").await;
    assert_eq!(status, 200);
    let data = &body["data"];
    assert_eq!(
        (&data["readable"], &data["payload"]),
        (&json!(false), &Value::Null)
    );
    assert_eq!(data["explanation"]["grant"]["allowed"], false);
    assert_eq!(data["explanation"]["grant"]["rule"], "collection_grant");
    assert_eq!(
        data["explanation"]["item_filter"],
        json!({"filter": null, "passes": null})
    );
    let mut redacted: Vec<String> =
        serde_json::from_value(data["explanation"]["redacted_fields"].clone()).unwrap();
    redacted.sort();
    assert_eq!(
        redacted,
        [
            "author",
            "cover",
            "internal_notes",
            "status",
            "tags",
            "title",
            "views"
        ]
    );
    assert_eq!(data["explanation"]["downgraded_expansions"], json!([]));

    // super-admin reads everything.
    let (_, body, _) = preview(&app, &root, 5, "role=super-admin").await;
    let data = &body["data"];
    assert_eq!(data["readable"], true);
    assert_eq!(data["explanation"]["grant"]["rule"], "super_admin");
    assert_eq!(data["explanation"]["redacted_fields"], json!([]));
    assert_eq!(data["payload"]["data"]["internal_notes"], "wip");
}

#[actix_web::test]
async fn the_role_must_exist_and_the_item_be_live() {
    let (app, root) = app_and_root().await;
    for (query, field) in [
        ("", "role"),
        ("role=", "role"),
        ("role=nobody", "role"),
        ("role=public&locale=fr", "locale"),
    ] {
        let (status, body, _) = preview(&app, &root, 4, query).await;
        assert_eq!(status, 422, "{query}: {body}");
        assert_eq!(error_fields(&body), [field], "{query}");
    }
    let (status, _) = send(
        &app,
        Method::DELETE,
        "/collections/articles/items/4",
        &root,
        None,
    )
    .await;
    assert_eq!(status, 204);
    let (status, body, _) = preview(&app, &root, 4, "role=public").await;
    assert_eq!((status, body), (404, json!({"message": "Not found."})));
}

/// Files in the preview: a private file is `hidden` from a role without `read_private`, a
/// public one `denied` to a role without the file read grant, and one the role reads is not
/// listed; a relation the role's field rules hide is a `hidden_field`. Each payload stays the
/// role's own public API answer.
#[actix_web::test]
async fn file_and_hidden_field_downgrades_are_explained() {
    use vellum_storage::files::{NewFile, Visibility, create_file, create_folder};
    let mut manifest = super::items::manifest();
    manifest["roles"].as_array_mut().unwrap().push(json!({
        "name": "nofiles", "collection_permissions": {
            "articles": {"read": true, "rules": {"fields": {"author": {"read": false}}}},
            "authors": {"read": true}
        }
    }));
    let app = TestApp::new(manifest).await;
    let root = app.signed_in("root@example.com", &["super-admin"]).await;
    let conn = &app.db.conn;
    let op = crate::support::op(vellum_policy::FileAction::Create);
    let private = create_folder(conn, &op, None, "private", Some(Visibility::Private))
        .await
        .unwrap();
    let file = |parent: Option<i64>, name: &str| NewFile {
        parent_id: parent,
        filename: name.to_owned(),
        mime_type: Some("image/png".to_owned()),
        extension: Some("png".to_owned()),
        filesize: Some(100),
        width: Some(4),
        height: Some(4),
        content_hash: None,
        storage_key: None,
        title: None,
    };
    let open = create_file(conn, &op, file(None, "open.png"))
        .await
        .unwrap()
        .id;
    let hidden = create_file(conn, &op, file(Some(private.id), "hidden.png"))
        .await
        .unwrap()
        .id;
    let cover = |article: i64, file: i64| {
        let app = &app;
        async move {
            let res = app
                .json(
                    Method::PATCH,
                    Some("admin-key"),
                    &format!("/api/v1/collections/articles/items/{article}"),
                    json!({"data": {"cover": file}}),
                )
                .await;
            assert_eq!(res.status, 200, "{:?}", res.json());
        }
    };
    let outcomes = |body: &Value| -> Vec<(Value, Value, Value)> {
        body["data"]["explanation"]["downgraded_expansions"]
            .as_array()
            .unwrap_or_else(|| panic!("{body}"))
            .iter()
            .map(|d| (d["field"].clone(), d["id"].clone(), d["outcome"].clone()))
            .collect()
    };

    // `public` reads files but not private ones.
    cover(4, hidden).await;
    let (status, body, _) = preview(&app, &root, 4, "role=public&include=files").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        outcomes(&body),
        [(json!("cover"), json!(hidden), json!("hidden"))]
    );
    assert_eq!(body["data"]["payload"]["data"]["cover"], Value::Null);
    cover(4, open).await;
    let (_, body, _) = preview(&app, &root, 4, "role=public&include=files").await;
    assert_eq!(outcomes(&body), []);
    assert_eq!(body["data"]["payload"]["data"]["cover"]["id"], open);

    // `nofiles` has no file grant: the public file is a denied marker; its field rules hide
    // `author`, so asking to expand it is a hidden field.
    let (status, body, _) = preview(&app, &root, 4, "role=nofiles&include=files,author").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        outcomes(&body),
        [
            (json!("cover"), json!(open), json!("denied")),
            (json!("author"), Value::Null, json!("hidden_field"))
        ]
    );
    let reasons = &body["data"]["explanation"]["downgraded_expansions"];
    assert!(
        reasons[1]["reason"].as_str().unwrap().contains("author"),
        "{reasons}"
    );
    assert!(body["data"]["payload"]["data"].get("author").is_none());
    assert_eq!(body["data"]["payload"]["data"]["cover"]["id"], open);
    assert!(
        body["data"]["payload"]["data"]["cover"]
            .get("url")
            .is_none()
    );
}
