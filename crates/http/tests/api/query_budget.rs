//! Issue 23: every response says what it cost (`X-Query-Count`, `Server-Timing`), and no public
//! endpoint runs more than 1 + one statement per `include` relation kind once warm (the epoch's
//! first list also counts its total, remembered until the next write).

use actix_web::http::{Method, StatusCode};
use serde_json::{Value, json};

use vellum_http::HttpConfig;

use crate::support::{TestApp, jpeg, post_item};

fn catalogue() -> Value {
    json!({
        "collections": [
            {"slug": "tags", "name": "Tags", "fields": [
                {"name": "label", "type": "string", "settings": {}}
            ]},
            {"slug": "authors", "name": "Authors", "fields": [
                {"name": "name", "type": "string", "settings": {}},
                {"name": "avatar", "type": "image", "settings": {}}
            ]},
            {"slug": "pages", "name": "Pages", "fields": [
                {"name": "title", "type": "string", "settings": {}},
                {"name": "status", "type": "string", "settings": {}},
                {"name": "views", "type": "number", "settings": {}},
                {"name": "cover", "type": "image", "settings": {}},
                {"name": "author", "type": "many_to_one", "settings": {"related_collection": "authors"}},
                {"name": "tags", "type": "many_to_many", "settings": {"related_collection": "tags"}}
            ]}
        ],
        "roles": [
            {"name": "public", "collection_permissions": {
                "pages": {"read": true, "rules": {"item_filter": {"status": {"_eq": "published"}}}},
                "authors": {"read": true}, "tags": {"read": true}
            }, "file_permissions": {"read": true}},
            {"name": "reader", "collection_permissions": {
                "pages": {"read": true}, "authors": {"read": true}, "tags": {"read": true}
            }, "file_permissions": {"read": true, "read_private": true}}
        ],
        "api_keys": [
            {"name": "admin-key", "role": "super-admin"},
            {"name": "reader-key", "role": "reader"}
        ]
    })
}

/// The statements of a warm request: sent twice, the second one's `X-Query-Count`.
async fn statements(app: &TestApp, key: Option<&str>, path: &str) -> u64 {
    let mut last = 0;
    for _ in 0..2 {
        let res = app.get_with(key, path, &[]).await;
        assert_eq!(res.status, StatusCode::OK, "{path}: {:?}", res.body.len());
        let timing = res.header("server-timing").unwrap_or_default();
        for part in ["db;dur=", "render;dur=", "total;dur="] {
            assert!(timing.contains(part), "{path}: Server-Timing {timing:?}");
        }
        last = res
            .header("x-query-count")
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("{path}: no X-Query-Count"));
    }
    last
}

/// How many relation kinds a path's `include` names (`files`, `users`, each relation field).
fn include_kinds(path: &str) -> u64 {
    path.split(['?', '&'])
        .find_map(|pair| pair.strip_prefix("include="))
        .map_or(0, |list| list.split(',').count() as u64)
}

#[actix_web::test]
async fn no_public_endpoint_exceeds_one_statement_plus_one_per_include_kind() {
    let config = HttpConfig {
        cache: false,
        ..HttpConfig::default()
    };
    let app = TestApp::with_config(catalogue(), config).await;
    let image = app
        .upload_file(Some("admin-key"), "cover.jpg", &jpeg(64, 48))
        .await;
    let file = image["id"].as_i64().unwrap();
    let mut tags = Vec::new();
    for i in 0..3 {
        tags.push(post_item(&app, "tags", json!({"label": format!("t{i}")})).await);
    }
    let author = post_item(&app, "authors", json!({"name": "Ada", "avatar": file})).await;
    let mut page = 0;
    for i in 0..30 {
        let status = if i % 3 == 0 { "draft" } else { "published" };
        page = post_item(
            &app,
            "pages",
            json!({"title": format!("p{i}"), "status": status, "views": i * 10,
                   "cover": file, "author": author, "tags": [tags[i % 3], tags[(i + 1) % 3]]}),
        )
        .await;
    }
    let list = "/api/v1/collections/pages/items";
    let paths = [
        "/api/v1/collections".to_owned(),
        "/api/v1/collections/pages".to_owned(),
        list.to_owned(),
        format!("{list}?page=2&per_page=5"),
        format!("{list}?filter[views][_gt]=50&filter[title][_contains]=p&sort=-views"),
        format!("{list}?search=p1"),
        format!("{list}?include=author"),
        format!("{list}?include=tags"),
        format!("{list}?include=files"),
        format!("{list}?include=users"),
        format!("{list}?include=files,users,author,tags"),
        format!("{list}/{page}"),
        format!("{list}/{page}?include=files,users,author,tags"),
        "/api/v1/files".to_owned(),
        format!("/api/v1/files/{file}"),
        format!("/api/v1/files/{file}/content"),
        format!("/api/v1/files/{file}/transforms/size-32"),
    ];
    let mut over = Vec::new();
    for key in [None, Some("reader-key")] {
        for path in &paths {
            let spent = statements(&app, key, path).await;
            let budget = 1 + include_kinds(path);
            if path == list {
                assert_eq!(spent, 1, "a warm lean page is one statement");
            }
            if spent > budget {
                over.push(format!("{path} as {key:?}: {spent} > {budget}"));
            }
        }
    }
    assert!(
        over.is_empty(),
        "over the statement budget:\n{}",
        over.join("\n")
    );
}

#[actix_web::test]
async fn every_response_says_its_statements_and_timing_errors_included() {
    let app = TestApp::new(catalogue()).await;
    for (path, status) in [
        ("/api/v1/collections/pages/items", StatusCode::OK),
        ("/api/v1/collections/nope/items", StatusCode::NOT_FOUND),
        ("/health/live", StatusCode::OK),
    ] {
        let res = app.get(path).await;
        assert_eq!(res.status, status, "{path}");
        assert!(res.header("x-query-count").is_some(), "{path}");
        let timing = res.header("server-timing").unwrap();
        let total: f64 = timing
            .split(", ")
            .find_map(|p| p.strip_prefix("total;dur="))
            .unwrap()
            .parse()
            .unwrap();
        assert!((0.0..60_000.0).contains(&total), "{path}: {timing}");
    }
    // A write counts its transaction's statements too.
    let res = app
        .json(
            Method::POST,
            Some("admin-key"),
            "/api/v1/collections/tags/items",
            json!({"data": {"label": "x"}}),
        )
        .await;
    assert_eq!(res.status, StatusCode::CREATED);
    let writes: u64 = res.header("x-query-count").unwrap().parse().unwrap();
    assert!(writes >= 3, "BEGIN, INSERT, COMMIT at least: {writes}");
}

/// The ids of a list page's items, as `path` answers them anonymously.
async fn page_ids(app: &TestApp, path: &str) -> Vec<i64> {
    let res = app.get(path).await;
    assert_eq!(res.status, StatusCode::OK, "{path}");
    res.json()["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["id"].as_i64().unwrap())
        .collect()
}

/// Pages seek from where earlier pages of the same list ended (remembered until the next
/// write): in any order of asking, ascending and descending, they hold what one large page
/// holds, and after a delete the deep pages move with it.
#[actix_web::test]
async fn pages_read_from_remembered_positions_agree_with_one_large_page() {
    let config = HttpConfig {
        cache: false,
        ..HttpConfig::default()
    };
    let app = TestApp::with_config(catalogue(), config).await;
    let mut ids = Vec::new();
    for i in 0..30 {
        let status = if i % 3 == 0 { "draft" } else { "published" };
        let data = json!({"title": format!("p{i}"), "status": status, "views": i});
        ids.push(post_item(&app, "pages", data).await);
    }
    let list = "/api/v1/collections/pages/items";
    for sort in ["", "&sort=-id"] {
        let all = page_ids(&app, &format!("{list}?per_page=100{sort}")).await;
        assert_eq!(all.len(), 20, "the public role sees the published pages");
        for pages in [[1_usize, 2, 3, 4, 5, 6, 7], [6, 2, 5, 7, 1, 4, 3]] {
            for page in pages {
                let got = page_ids(&app, &format!("{list}?per_page=3&page={page}{sort}")).await;
                let want: Vec<i64> = all.iter().copied().skip((page - 1) * 3).take(3).collect();
                assert_eq!(got, want, "page {page}{sort}");
            }
        }
    }
    // Page 6 was read (and its position remembered); a delete on page 1 moves it by one.
    let before = page_ids(&app, &format!("{list}?per_page=3&page=6")).await;
    let res = app
        .delete(Some("admin-key"), &format!("{list}/{}", ids[1]))
        .await;
    assert_eq!(res.status, StatusCode::NO_CONTENT);
    let all = page_ids(&app, &format!("{list}?per_page=100")).await;
    assert_eq!(all.len(), 19);
    let after = page_ids(&app, &format!("{list}?per_page=3&page=6")).await;
    assert_eq!(after, all[15..18].to_vec());
    assert_eq!(after[..2], before[1..], "shifted by the deleted item");
}
