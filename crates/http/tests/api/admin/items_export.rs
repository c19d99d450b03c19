//! `GET /collections/{collection}/items/export?format=csv|json`: the list's filter, sort,
//! direction and trash; the headers (`X-Export-Rows`, `X-Export-Total-Matched`,
//! `X-Export-Truncated`, the attachment's name); CSV escaping (RFC 4180) and formula defusing;
//! the 5,000-row cap.

use actix_web::http::Method;
use sea_orm::{ConnectionTrait, DbBackend, Statement};
use serde_json::{Value, json};

use super::access_support::{error_fields, send};
use super::items::{app_and_root, create, ids};
use super::{Session, admin_request};
use crate::support::{Response, TestApp};

async fn export(app: &TestApp, s: &Session, query: &str) -> Response {
    let path = format!("/collections/products/items/export?{query}");
    app.send(admin_request(Method::GET, &path, Some(s), None))
        .await
}

fn text(res: &Response) -> String {
    String::from_utf8(res.body.clone()).unwrap()
}

fn headers(res: &Response) -> (String, String, String, String) {
    let h = |name: &str| res.header(name).unwrap_or_default().to_owned();
    (
        h("content-disposition"),
        h("x-export-rows"),
        h("x-export-total-matched"),
        h("x-export-truncated"),
    )
}

/// A CSV cell as the export must write it (an oracle written apart from the server's).
fn cell(value: &Value) -> String {
    let (raw, is_text) = match value {
        Value::Null => return String::new(),
        Value::String(s) => (s.clone(), true),
        Value::Number(_) | Value::Bool(_) => return value.to_string(),
        other => (other.to_string(), true),
    };
    let mut out = raw.clone();
    if is_text
        && ["=", "+", "-", "@", "\t", "\r"]
            .iter()
            .any(|p| raw.starts_with(p))
    {
        out = format!("'{out}");
    }
    if raw.contains([',', '"', '\n', '\r']) {
        out = format!("\"{}\"", out.replace('"', "\"\""));
    }
    out
}

/// The CSV rows the list response `list` must export as, for `fields`.
fn expected_csv(list: &Value, fields: &[&str]) -> String {
    let mut out = format!("id,{},created_at,updated_at\r\n", fields.join(","));
    for item in list["data"].as_array().unwrap() {
        let mut cells = vec![item["id"].to_string()];
        cells.extend(fields.iter().map(|f| cell(&item["data"][f])));
        cells.push(cell(&item["created_at"]));
        cells.push(cell(&item["updated_at"]));
        out.push_str(&cells.join(","));
        out.push_str("\r\n");
    }
    out
}

const PRODUCT_FIELDS: [&str; 4] = ["sku", "name", "price", "note"];

#[actix_web::test]
async fn csv_cells_are_escaped_and_formulas_defused() {
    let (app, root) = app_and_root().await;
    let first = create(&app, &root, "products", json!({"sku": "p1", "name": "=HYPERLINK(\"http://evil\",\"x\")", "price": 5, "note": "line one\nline two"})).await;
    create(
        &app,
        &root,
        "products",
        json!({"sku": "p2", "name": "a,b", "price": -5, "note": "say \"hi\""}),
    )
    .await;
    create(
        &app,
        &root,
        "products",
        json!({"sku": "p3", "name": "@SUM(A1)", "price": 2.5, "note": "+1"}),
    )
    .await;
    create(
        &app,
        &root,
        "products",
        json!({"sku": "p4", "name": "-2", "note": "plain"}),
    )
    .await;

    let res = export(&app, &root, "format=csv").await;
    assert_eq!(res.status, 200, "{}", text(&res));
    assert_eq!(res.header("content-type"), Some("text/csv; charset=utf-8"));
    assert_eq!(
        headers(&res),
        (
            "attachment; filename=\"products.csv\"".into(),
            "4".into(),
            "4".into(),
            "false".into()
        )
    );
    let body = text(&res);
    let (_, list) = send(
        &app,
        Method::GET,
        "/collections/products/items?per_page=100",
        &root,
        None,
    )
    .await;
    assert_eq!(body, expected_csv(&list, &PRODUCT_FIELDS));
    let lines: Vec<&str> = body.split("\r\n").collect();
    assert_eq!(lines[0], "id,sku,name,price,note,created_at,updated_at");
    assert!(
        lines[1].starts_with(&format!(
            "{first},p1,\"'=HYPERLINK(\"\"http://evil\"\",\"\"x\"\")\",5,\"line one\nline two\","
        )),
        "{}",
        lines[1]
    );
    assert!(
        lines[2].contains(",p2,\"a,b\",-5,\"say \"\"hi\"\"\","),
        "{}",
        lines[2]
    );
    assert!(lines[3].contains(",p3,'@SUM(A1),2.5,'+1,"), "{}", lines[3]);
    assert!(lines[4].contains(",p4,'-2,1,plain,"), "{}", lines[4]);
    assert_eq!(lines[5], "", "the file ends with a line end");
}

#[actix_web::test]
async fn csv_flattens_to_the_locale_and_writes_lists_as_json() {
    let (app, root) = app_and_root().await;
    let fields = [
        "title",
        "status",
        "views",
        "cover",
        "author",
        "tags",
        "internal_notes",
    ];
    for locale in ["", "&locale=de"] {
        let path = format!("/collections/articles/items/export?format=csv{locale}");
        let res = app
            .send(admin_request(Method::GET, &path, Some(&root), None))
            .await;
        assert_eq!(res.status, 200);
        assert_eq!(
            res.header("content-disposition"),
            Some("attachment; filename=\"articles.csv\"")
        );
        let list_path = format!("/collections/articles/items?per_page=100{locale}");
        let (_, list) = send(&app, Method::GET, &list_path, &root, None).await;
        assert_eq!(text(&res), expected_csv(&list, &fields));
    }
    let res = app
        .send(admin_request(
            Method::GET,
            "/collections/articles/items/export?format=csv&locale=de",
            Some(&root),
            None,
        ))
        .await;
    let body = text(&res);
    let rows: Vec<&str> = body.split("\r\n").collect();
    assert!(
        rows[1].starts_with("4,Hallo,published,10,,1,\"["),
        "{}",
        rows[1]
    );
    // No German title: the default locale's.
    assert!(rows[2].starts_with("5,Draft,draft,5,"), "{}", rows[2]);
}

#[actix_web::test]
async fn json_is_an_array_of_the_lists_items() {
    let (app, root) = app_and_root().await;
    for i in 0..3 {
        create(
            &app,
            &root,
            "products",
            json!({"sku": format!("s{i}"), "price": i}),
        )
        .await;
    }
    let query = "filter[price][_gte]=1&sort=price&direction=desc";
    let res = export(&app, &root, &format!("format=json&{query}")).await;
    assert_eq!(res.status, 200);
    assert_eq!(res.header("content-type"), Some("application/json"));
    assert_eq!(
        headers(&res),
        (
            "attachment; filename=\"products.json\"".into(),
            "2".into(),
            "2".into(),
            "false".into()
        )
    );
    let (_, list) = send(
        &app,
        Method::GET,
        &format!("/collections/products/items?{query}"),
        &root,
        None,
    )
    .await;
    assert_eq!(res.json(), list["data"]);
    assert_eq!(ids(&json!({"data": res.json()})).len(), 2);
    // Nothing matched: an empty array, and a CSV of only its header.
    let res = export(&app, &root, "format=json&filter[price][_gt]=100").await;
    assert_eq!((res.json(), headers(&res).1), (json!([]), "0".to_owned()));
    let res = export(&app, &root, "format=csv&filter[price][_gt]=100").await;
    assert_eq!(
        text(&res),
        "id,sku,name,price,note,created_at,updated_at\r\n"
    );
}

#[actix_web::test]
async fn the_list_parameters_apply_and_bad_ones_are_refused() {
    let (app, root) = app_and_root().await;
    let a = create(&app, &root, "products", json!({"sku": "a", "price": 3})).await;
    let b = create(&app, &root, "products", json!({"sku": "b", "price": 30})).await;
    let c = create(&app, &root, "products", json!({"sku": "c", "price": 10})).await;
    let (status, _) = send(
        &app,
        Method::DELETE,
        &format!("/collections/products/items/{c}"),
        &root,
        None,
    )
    .await;
    assert_eq!(status, 204);
    let first_column = |res: &Response| -> Vec<i64> {
        text(res)
            .split("\r\n")
            .skip(1)
            .filter(|l| !l.is_empty())
            .map(|l| l.split(',').next().unwrap().parse().unwrap())
            .collect()
    };
    let res = export(&app, &root, "format=csv&sort=price&direction=desc").await;
    assert_eq!(first_column(&res), [b, a]);
    let res = export(&app, &root, "format=CSV&trashed=1").await;
    assert_eq!(first_column(&res), [c]);
    let res = export(&app, &root, "format=csv&filter[sku]=b").await;
    assert_eq!(
        (first_column(&res), headers(&res).2),
        (vec![b], "1".to_owned())
    );

    for (query, fields) in [
        ("", vec!["format"]),
        ("format=xml", vec!["format"]),
        ("format=csv&sort=nope", vec!["sort"]),
        (
            "format=pdf&direction=up&filter[nope]=1",
            vec!["direction", "filter[nope]", "format"],
        ),
        ("format=json&trashed=2", vec!["trashed"]),
    ] {
        let res = export(&app, &root, query).await;
        assert_eq!(res.status, 422, "{query}");
        assert_eq!(error_fields(&res.json()), fields, "{query}");
    }
}

/// Inserts `count` products (`sku` `s<i>`, `price` i) in a few statements.
async fn seed_products(app: &TestApp, count: usize) {
    let snapshot = app.state.snapshot().await.unwrap();
    let cid = snapshot.collection("products").unwrap().id;
    let db = &app.db.conn;
    let backend = db.get_database_backend();
    let now = time::OffsetDateTime::now_utc();
    let mut start = 0;
    while start < count {
        let end = (start + 500).min(count);
        let mut sql =
            String::from("INSERT INTO items (collection_id, data, created_at, updated_at) VALUES ");
        let mut values: Vec<sea_orm::Value> = Vec::new();
        for i in start..end {
            let mut slot = |value: sea_orm::Value| {
                values.push(value);
                match backend {
                    DbBackend::Postgres => format!("${}", values.len()),
                    _ => "?".to_owned(),
                }
            };
            let data = slot(
                json!({"sku": format!("s{i}"), "price": i})
                    .to_string()
                    .into(),
            );
            let data = match backend {
                DbBackend::Postgres => format!("CAST({data} AS jsonb)"),
                _ => format!("jsonb({data})"),
            };
            let created = slot(now.into());
            let updated = slot(now.into());
            if i > start {
                sql.push_str(", ");
            }
            sql.push_str(&format!("({cid}, {data}, {created}, {updated})"));
        }
        db.execute_raw(Statement::from_sql_and_values(backend, sql, values))
            .await
            .unwrap();
        start = end;
    }
    app.state
        .content_changed(vellum_app::cache::Scope::Collection(cid))
        .await;
}

#[actix_web::test]
async fn exports_are_capped_at_5000_rows() {
    let (app, root) = app_and_root().await;
    seed_products(&app, 5001).await;
    let res = export(&app, &root, "format=csv").await;
    assert_eq!(res.status, 200);
    assert_eq!(
        headers(&res),
        (
            "attachment; filename=\"products.csv\"".into(),
            "5000".into(),
            "5001".into(),
            "true".into()
        )
    );
    let body = text(&res);
    let rows: Vec<&str> = body.split("\r\n").filter(|l| !l.is_empty()).collect();
    assert_eq!(rows.len(), 5001, "the header and 5,000 rows");
    assert!(rows[1].contains(",s0,"), "{}", rows[1]);
    assert!(rows[5000].contains(",s4999,"), "{}", rows[5000]);

    let res = export(&app, &root, "format=json&sort=price&direction=desc").await;
    assert_eq!(headers(&res).3, "true");
    let items = res.json();
    let items = items.as_array().unwrap();
    assert_eq!(items.len(), 5000);
    assert_eq!(items[0]["data"]["sku"], "s5000");
    assert_eq!(items[4999]["data"]["sku"], "s1");

    let res = export(&app, &root, "format=json&filter[price][_lt]=5000").await;
    assert_eq!(
        headers(&res),
        (
            "attachment; filename=\"products.json\"".into(),
            "5000".into(),
            "5000".into(),
            "false".into()
        )
    );
    assert_eq!(res.json().as_array().unwrap().len(), 5000);
}
