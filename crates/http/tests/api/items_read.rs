//! `GET /collections/{slug}/items` and `GET /collections/{slug}/items/{id}`: envelopes,
//! pagination, 404/403/422 answers, the filter dialect, sorting and locales.

use std::collections::BTreeMap;

use actix_web::http::StatusCode;
use serde_json::{Value, json};

use crate::support::{Response, TestApp};

/// Products with translatable names, numbers, a select and notes (one hidden from every role but
/// super-admin); a `counters` collection of 20 items for pagination; `gadgets` with booleans and
/// lists; `pages` with translatable text inside blocks; a `vault` the public role may only create
/// in. Role `fruit` sees only fruit products.
fn shop() -> Value {
    let counters: Vec<Value> = (1..=20).map(|n| json!({"data": {"n": n}})).collect();
    json!({
        "settings": {"content_locales": ["en", "de", "fr"], "default_locale": "en"},
        "collections": [
            {"slug": "products", "name": "Products", "fields": [
                {"name": "name", "type": "string", "translatable": true, "settings": {}},
                {"name": "sku", "type": "string", "settings": {}},
                {"name": "price", "type": "number", "settings": {}},
                {"name": "stock", "type": "number", "settings": {}},
                {"name": "category", "type": "select", "settings": {"options": ["fruit", "vegetable", "bakery"]}},
                {"name": "notes", "type": "textarea", "settings": {}},
                {"name": "internal_notes", "type": "textarea", "settings": {}}
            ]},
            {"slug": "counters", "name": "Counters", "fields": [
                {"name": "n", "type": "number", "settings": {}}
            ]},
            {"slug": "vault", "name": "Vault", "fields": [
                {"name": "code", "type": "string", "settings": {}}
            ]},
            {"slug": "pages", "name": "Pages", "fields": [
                {"name": "title", "type": "string", "translatable": true, "settings": {}},
                {"name": "content", "type": "blocks", "settings": {"block_types": [
                    {"key": "text", "fields": [
                        {"name": "body", "type": "markdown", "translatable": true, "settings": {}},
                        {"name": "n", "type": "number", "settings": {}}
                    ]}
                ]}}
            ]},
            {"slug": "gadgets", "name": "Gadgets", "fields": [
                {"name": "label", "type": "string", "settings": {}},
                {"name": "featured", "type": "boolean", "settings": {}},
                {"name": "colours", "type": "tag", "settings": {}},
                {"name": "rating", "type": "number", "settings": {}}
            ]}
        ],
        "roles": [
            {"name": "public", "collection_permissions": {
                "products": {"read": true, "rules": {"fields": {"internal_notes": {"read": false}}}},
                "counters": {"read": true},
                "gadgets": {"read": true},
                "pages": {"read": true},
                "vault": {"create": true, "update": true, "delete": true}
            }},
            {"name": "fruit", "collection_permissions": {
                "products": {"read": true, "rules": {
                    "fields": {"internal_notes": {"read": false}},
                    "item_filter": {"category": {"_eq": "fruit"}}
                }}
            }}
        ],
        "api_keys": [
            {"name": "admin-key", "role": "super-admin"},
            {"name": "fruit-key", "role": "fruit"}
        ],
        "items": {
            "products": [
                {"data": {"name": {"en": "Red Apple", "de": "Roter Apfel"}, "sku": "A-1", "price": 3, "stock": 10, "category": "fruit", "notes": "Crisp", "internal_notes": "INT-A1"}},
                {"data": {"name": {"en": "Green Apple"}, "sku": "A-2", "price": 4, "stock": 0, "category": "fruit", "notes": null, "internal_notes": "INT-A2"}},
                {"data": {"name": {"en": "Banana", "de": "Banane"}, "sku": "B-1", "price": 2, "stock": 5, "category": "fruit", "internal_notes": "INT-B1"}},
                {"data": {"name": {"en": "Carrot", "de": "Karotte"}, "sku": "C-1", "price": 1.5, "stock": 20, "category": "vegetable", "notes": "Orange"}},
                {"data": {"name": {"en": "Bread", "de": "Brot"}, "sku": "D-1", "price": 5, "stock": 3, "category": "bakery", "notes": ""}},
                {"data": {"name": {"en": "APPLE pie"}, "sku": "E-1", "price": 7, "stock": 3, "category": "bakery"}}
            ],
            "counters": counters,
            "vault": [{"data": {"code": "0000"}}],
            "pages": [{"data": {
                "title": {"en": "Home", "de": "Start"},
                "content": [
                    {"type": "text", "data": {"body": {"en": "Hello", "de": "Hallo"}, "n": 1}},
                    {"type": "text", "data": {"body": {"en": "Only English"}}}
                ]
            }}],
            "gadgets": [
                {"data": {"label": "g1", "featured": true, "colours": ["red", "blue"], "rating": 5}},
                {"data": {"label": "g2", "featured": false, "colours": [], "rating": null}},
                {"data": {"label": "g3", "colours": ["Blue"]}},
                {"data": {"label": "g4", "featured": true, "colours": ["green"], "rating": 1}}
            ]
        }
    })
}

const PRODUCTS: &str = "/api/v1/collections/products/items";

/// The `sku` of every item of a list response, in order.
fn skus(res: &Response) -> Vec<String> {
    assert_eq!(res.status, StatusCode::OK, "{:?}", res.json());
    res.json()["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["data"]["sku"].as_str().unwrap().to_owned())
        .collect()
}

/// Item ids by sku, read as super-admin.
async fn ids(app: &TestApp) -> BTreeMap<String, i64> {
    let res = app
        .get_as("admin-key", &format!("{PRODUCTS}?per_page=100"))
        .await;
    res.json()["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["data"]["sku"].as_str().unwrap().to_owned(),
                i["id"].as_i64().unwrap(),
            )
        })
        .collect()
}

async fn collection_id(app: &TestApp, slug: &str) -> i64 {
    app.get_as("admin-key", &format!("/api/v1/collections/{slug}"))
        .await
        .json()["data"]["id"]
        .as_i64()
        .unwrap()
}

/// Asserts the nine keys of CollectionItemResource (no more, no fewer) and their types.
fn assert_item_shape(item: &Value) {
    let obj = item
        .as_object()
        .unwrap_or_else(|| panic!("not an object: {item}"));
    let mut keys: Vec<&str> = obj.keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "collection_id",
            "created_at",
            "data",
            "id",
            "updated_at",
            "user_created",
            "user_created_id",
            "user_updated",
            "user_updated_id"
        ],
        "{item}"
    );
    assert!(obj["id"].is_i64(), "{item}");
    assert!(obj["collection_id"].is_i64(), "{item}");
    assert!(obj["data"].is_object(), "{item}");
    for key in ["created_at", "updated_at"] {
        let at = obj[key]
            .as_str()
            .unwrap_or_else(|| panic!("{key} is not a string: {item}"));
        assert!(
            time::OffsetDateTime::parse(at, &time::format_description::well_known::Rfc3339).is_ok(),
            "{key} is not RFC 3339: {at}"
        );
    }
}

/// Asserts a 422 whose `errors` names exactly `params`, with the contract's message.
fn assert_invalid(res: &Response, params: &[&str]) {
    assert_eq!(
        res.status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "{:?}",
        String::from_utf8_lossy(&res.body)
    );
    let body = res.json();
    assert_eq!(body["message"], "The given data was invalid.", "{body}");
    let errors = body["errors"]
        .as_object()
        .unwrap_or_else(|| panic!("no errors: {body}"));
    let mut named: Vec<&str> = errors.keys().map(String::as_str).collect();
    named.sort_unstable();
    let mut expected = params.to_vec();
    expected.sort_unstable();
    assert_eq!(named, expected, "{body}");
    for (param, messages) in errors {
        let messages = messages
            .as_array()
            .unwrap_or_else(|| panic!("{param}: {body}"));
        assert!(!messages.is_empty(), "{body}");
        assert!(
            messages
                .iter()
                .all(|m| m.as_str().is_some_and(|m| !m.is_empty())),
            "{body}"
        );
    }
    assert_eq!(
        body.as_object().unwrap().len(),
        2,
        "only message and errors: {body}"
    );
}

// ---------------------------------------------------------------------------------------------
// Envelope and pagination

#[actix_web::test]
async fn list_is_a_paginated_envelope_with_integer_meta_and_lean_resources() {
    let app = TestApp::new(shop()).await;
    let res = app.get(PRODUCTS).await;
    assert_eq!(res.status, StatusCode::OK);
    let body = res.json();
    let obj = body.as_object().unwrap();
    assert_eq!(obj.len(), 2, "{body}");
    assert_eq!(
        body["meta"],
        json!({"current_page": 1, "last_page": 1, "per_page": 15, "total": 6})
    );
    for key in ["current_page", "last_page", "per_page", "total"] {
        assert!(
            body["meta"][key].is_u64(),
            "{key} must be an integer: {body}"
        );
    }
    let data = body["data"].as_array().unwrap();
    assert_eq!(data.len(), 6);
    let products = collection_id(&app, "products").await;
    for item in data {
        assert_item_shape(item);
        assert_eq!(item["collection_id"], products);
        assert_eq!(item["user_created"], Value::Null);
        assert_eq!(item["user_updated"], Value::Null);
        assert!(item["data"].get("internal_notes").is_none(), "{item}");
    }
    // Default order: id ascending.
    let ids: Vec<i64> = data.iter().map(|i| i["id"].as_i64().unwrap()).collect();
    let mut sorted = ids.clone();
    sorted.sort_unstable();
    assert_eq!(ids, sorted);
    assert_eq!(skus(&res), ["A-1", "A-2", "B-1", "C-1", "D-1", "E-1"]);
}

#[actix_web::test]
async fn show_returns_the_whole_resource_equal_to_its_list_entry() {
    let app = TestApp::new(shop()).await;
    let ids = ids(&app).await;
    let id = ids["A-1"];
    let res = app.get(&format!("{PRODUCTS}/{id}")).await;
    assert_eq!(res.status, StatusCode::OK, "{:?}", res.json());
    let body = res.json();
    assert_eq!(body.as_object().unwrap().len(), 1, "only data: {body}");
    let item = &body["data"];
    assert_item_shape(item);
    let products = collection_id(&app, "products").await;
    assert_eq!(
        *item,
        json!({
            "id": id,
            "collection_id": products,
            "data": {
                "name": "Red Apple",
                "sku": "A-1",
                "price": 3,
                "stock": 10,
                "category": "fruit",
                "notes": "Crisp"
            },
            "created_at": item["created_at"],
            "updated_at": item["updated_at"],
            "user_created_id": null,
            "user_updated_id": null,
            "user_created": null,
            "user_updated": null
        })
    );
    let list = app.get(PRODUCTS).await.json();
    assert_eq!(list["data"][0], *item);
    // Super-admin sees the hidden field; absent values of the schema read as null.
    let admin = app
        .get_as("admin-key", &format!("{PRODUCTS}/{}", ids["B-1"]))
        .await
        .json();
    assert_eq!(
        admin["data"]["data"],
        json!({
            "name": "Banana", "sku": "B-1", "price": 2, "stock": 5, "category": "fruit",
            "notes": null, "internal_notes": "INT-B1"
        })
    );
}

#[actix_web::test]
async fn default_page_size_is_15_and_per_page_is_bounded_1_to_100() {
    let app = TestApp::new(shop()).await;
    let path = "/api/v1/collections/counters/items";
    let first = app.get(path).await.json();
    assert_eq!(
        first["meta"],
        json!({"current_page": 1, "last_page": 2, "per_page": 15, "total": 20})
    );
    let ns: Vec<i64> = first["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["data"]["n"].as_i64().unwrap())
        .collect();
    assert_eq!(ns, (1..=15).collect::<Vec<_>>());

    let second = app.get(&format!("{path}?page=2")).await.json();
    assert_eq!(
        second["meta"],
        json!({"current_page": 2, "last_page": 2, "per_page": 15, "total": 20})
    );
    let ns: Vec<i64> = second["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["data"]["n"].as_i64().unwrap())
        .collect();
    assert_eq!(ns, (16..=20).collect::<Vec<_>>());

    let one = app.get(&format!("{path}?per_page=1&page=7")).await.json();
    assert_eq!(
        one["meta"],
        json!({"current_page": 7, "last_page": 20, "per_page": 1, "total": 20})
    );
    assert_eq!(one["data"].as_array().unwrap().len(), 1);
    assert_eq!(one["data"][0]["data"]["n"], 7);

    let max = app.get(&format!("{path}?per_page=100")).await.json();
    assert_eq!(
        max["meta"],
        json!({"current_page": 1, "last_page": 1, "per_page": 100, "total": 20})
    );
    assert_eq!(max["data"].as_array().unwrap().len(), 20);

    let seven = app.get(&format!("{path}?per_page=7&page=3")).await.json();
    assert_eq!(
        seven["meta"],
        json!({"current_page": 3, "last_page": 3, "per_page": 7, "total": 20})
    );
    assert_eq!(seven["data"].as_array().unwrap().len(), 6);
}

#[actix_web::test]
async fn a_page_beyond_the_last_is_empty_with_correct_meta() {
    let app = TestApp::new(shop()).await;
    let res = app
        .get("/api/v1/collections/counters/items?per_page=8&page=4")
        .await;
    assert_eq!(res.status, StatusCode::OK);
    assert_eq!(
        res.json(),
        json!({"data": [], "meta": {"current_page": 4, "last_page": 3, "per_page": 8, "total": 20}})
    );
    let far = app
        .get("/api/v1/collections/counters/items?page=1000000")
        .await;
    assert_eq!(
        far.json(),
        json!({"data": [], "meta": {"current_page": 1000000, "last_page": 2, "per_page": 15, "total": 20}})
    );
    // An empty result still has one page.
    let none = app.get(&format!("{PRODUCTS}?filter[sku][_eq]=nope")).await;
    assert_eq!(
        none.json(),
        json!({"data": [], "meta": {"current_page": 1, "last_page": 1, "per_page": 15, "total": 0}})
    );
}

// ---------------------------------------------------------------------------------------------
// Show: 404 and 403

#[actix_web::test]
async fn show_answers_404_for_unknown_malformed_and_foreign_ids() {
    let app = TestApp::new(shop()).await;
    let counter = app
        .get("/api/v1/collections/counters/items?per_page=1")
        .await
        .json()["data"][0]["id"]
        .as_i64()
        .unwrap();
    for id in [
        "999999".to_owned(),
        "abc".to_owned(),
        "0".to_owned(),
        "-1".to_owned(),
        "1.5".to_owned(),
        "99999999999999999999".to_owned(),
        // An item of another collection is not an item of this one.
        counter.to_string(),
    ] {
        let res = app.get(&format!("{PRODUCTS}/{id}")).await;
        assert_eq!(res.status, StatusCode::NOT_FOUND, "id {id}");
        assert_eq!(res.json(), json!({"message": "Not found."}), "id {id}");
    }
}

#[actix_web::test]
async fn show_answers_404_outside_the_role_item_filter() {
    let app = TestApp::new(shop()).await;
    let ids = ids(&app).await;
    let inside = app
        .get_as("fruit-key", &format!("{PRODUCTS}/{}", ids["A-1"]))
        .await;
    assert_eq!(inside.status, StatusCode::OK);
    for sku in ["C-1", "D-1", "E-1"] {
        let res = app
            .get_as("fruit-key", &format!("{PRODUCTS}/{}", ids[sku]))
            .await;
        assert_eq!(res.status, StatusCode::NOT_FOUND, "{sku}");
        assert_eq!(res.json(), json!({"message": "Not found."}));
        // The public role has no item filter and sees it.
        assert_eq!(
            app.get(&format!("{PRODUCTS}/{}", ids[sku])).await.status,
            StatusCode::OK
        );
    }
}

#[actix_web::test]
async fn soft_deleted_items_are_404_and_leave_the_list() {
    let app = TestApp::new(shop()).await;
    let ids = ids(&app).await;
    let path = format!("{PRODUCTS}/{}", ids["B-1"]);
    let deleted = app.delete(Some("admin-key"), &path).await;
    assert_eq!(deleted.status, StatusCode::NO_CONTENT);
    let res = app.get(&path).await;
    assert_eq!(res.status, StatusCode::NOT_FOUND);
    assert_eq!(res.json(), json!({"message": "Not found."}));
    let admin = app.get_as("admin-key", &path).await;
    assert_eq!(admin.status, StatusCode::NOT_FOUND);
    let list = app.get(PRODUCTS).await;
    assert_eq!(skus(&list), ["A-1", "A-2", "C-1", "D-1", "E-1"]);
    assert_eq!(list.json()["meta"]["total"], 5);
}

#[actix_web::test]
async fn reading_without_a_read_grant_is_403_and_unknown_collections_are_404() {
    let app = TestApp::new(shop()).await;
    let vault_item = app
        .get_as("admin-key", "/api/v1/collections/vault/items")
        .await
        .json()["data"][0]["id"]
        .as_i64()
        .unwrap();
    // `public` may create in vault but not read it.
    for path in [
        "/api/v1/collections/vault/items".to_owned(),
        format!("/api/v1/collections/vault/items/{vault_item}"),
        "/api/v1/collections/vault/items/999999".to_owned(),
    ] {
        let res = app.get(&path).await;
        assert_eq!(res.status, StatusCode::FORBIDDEN, "{path}");
        assert_eq!(res.json(), json!({"message": "Forbidden."}), "{path}");
    }
    // `fruit` has no grant at all on counters.
    let res = app
        .get_as("fruit-key", "/api/v1/collections/counters/items")
        .await;
    assert_eq!(res.status, StatusCode::FORBIDDEN);
    assert_eq!(res.json(), json!({"message": "Forbidden."}));
    for path in [
        "/api/v1/collections/nope/items",
        "/api/v1/collections/nope/items/1",
        "/api/v1/collections/Products/items",
    ] {
        let res = app.get(path).await;
        assert_eq!(res.status, StatusCode::NOT_FOUND, "{path}");
        assert_eq!(res.json(), json!({"message": "Not found."}), "{path}");
        let admin = app.get_as("admin-key", path).await;
        assert_eq!(admin.status, StatusCode::NOT_FOUND, "{path}");
    }
}

// ---------------------------------------------------------------------------------------------
// 422 on malformed known parameters

#[actix_web::test]
async fn malformed_paging_and_locale_parameters_are_422_naming_them() {
    let app = TestApp::new(shop()).await;
    let rows: &[(&str, &[&str])] = &[
        ("page=abc", &["page"]),
        ("page=0", &["page"]),
        ("page=-1", &["page"]),
        ("page=1.5", &["page"]),
        ("page=", &["page"]),
        ("per_page=0", &["per_page"]),
        ("per_page=101", &["per_page"]),
        ("per_page=1e99", &["per_page"]),
        ("per_page=-5", &["per_page"]),
        ("per_page=ten", &["per_page"]),
        ("locale=xx", &["locale"]),
        ("locale=EN-GB", &["locale"]),
        (
            "include_all_translations=maybe",
            &["include_all_translations"],
        ),
        // Every problem is reported at once.
        (
            "page=0&per_page=101&locale=xx",
            &["page", "per_page", "locale"],
        ),
    ];
    for (query, params) in rows {
        let res = app.get(&format!("{PRODUCTS}?{query}")).await;
        assert_invalid(&res, params);
    }
}

#[actix_web::test]
async fn show_validates_locale_and_translation_flags_too() {
    let app = TestApp::new(shop()).await;
    let ids = ids(&app).await;
    let path = format!("{PRODUCTS}/{}", ids["A-1"]);
    assert_invalid(&app.get(&format!("{path}?locale=xx")).await, &["locale"]);
    assert_invalid(
        &app.get(&format!("{path}?include_all_translations=maybe"))
            .await,
        &["include_all_translations"],
    );
}

#[actix_web::test]
async fn malformed_filters_are_422_naming_the_parameter() {
    let app = TestApp::new(shop()).await;
    let rows: &[(&str, &str)] = &[
        ("filter[price][_bogus]=1", "filter[price][_bogus]"),
        ("filter[price][eq]=1", "filter[price][eq]"),
        ("filter[notes][_null]=maybe", "filter[notes][_null]"),
        ("filter[price=1", "filter[price"),
        ("filter[price][_eq][x]=1", "filter[price][_eq][x]"),
        ("filter[]=1", "filter[]"),
        ("filter=1", "filter"),
    ];
    for (query, param) in rows {
        let res = app.get(&format!("{PRODUCTS}?{query}")).await;
        assert_invalid(&res, &[param]);
    }
}

/// A comparison whose operand cannot be a value of the field's type matches nothing; it is a
/// 422 naming the parameter rather than an empty page that hides the mistake (issue 18).
#[actix_web::test]
async fn an_operand_of_the_wrong_type_is_a_422_naming_the_parameter() {
    let app = TestApp::new(shop()).await;
    let gadgets = "/api/v1/collections/gadgets/items";
    let rows: &[(&str, &str, &str)] = &[
        (PRODUCTS, "filter[price][_eq]=abc", "must be a number"),
        (PRODUCTS, "filter[price][_neq]=abc", "must be a number"),
        (PRODUCTS, "filter[price][_gt]=abc", "must be a number"),
        (PRODUCTS, "filter[price][_gte]=1x", "must be a number"),
        (PRODUCTS, "filter[price][_lt]=", "must be a number"),
        (PRODUCTS, "filter[stock][_lte]=NaN", "must be a number"),
        (
            PRODUCTS,
            "filter[price][_in]=2,abc,7",
            "must list only numbers: \"abc\" is not one",
        ),
        (PRODUCTS, "filter[id][_eq]=first", "must be a number"),
        (
            PRODUCTS,
            "filter[created_at][_gt]=yesterday",
            "must be a date-time (RFC 3339) or a date (YYYY-MM-DD)",
        ),
        (
            gadgets,
            "filter[featured][_eq]=yes",
            "must be true, false, 1 or 0",
        ),
        (
            gadgets,
            "filter[featured][_in]=true,maybe",
            "must list only true, false, 1 or 0: \"maybe\" is not one",
        ),
    ];
    for (path, query, message) in rows {
        let res = app.get(&format!("{path}?{query}")).await;
        let param = query.split_once('=').unwrap().0;
        assert_invalid(&res, &[param]);
        assert_eq!(res.json()["errors"][param], json!([message]), "{query}");
    }
    // Every bad operand is named at once.
    let res = app
        .get(&format!(
            "{PRODUCTS}?filter[price][_eq]=abc&filter[stock][_gt]=x&filter[sku][_eq]=abc"
        ))
        .await;
    assert_invalid(&res, &["filter[price][_eq]", "filter[stock][_gt]"]);
    // Operands that are numbers, booleans or instants as the dialect reads them still answer,
    // and text fields, `_contains` and `_null` take any operand.
    for query in [
        "filter[price][_eq]=3.0",
        "filter[price][_in]=2,%207",
        "filter[price][_gt]=1e0",
        "filter[created_at][_lt]=2999-01-01",
        "filter[created_at][_gt]=2020-01-01T00:00:00%2B02:00",
        "filter[sku][_eq]=123",
        "filter[price][_contains]=abc",
        "filter[price]=abc",
        "filter[price][_null]=1",
    ] {
        let res = app.get(&format!("{PRODUCTS}?{query}")).await;
        assert_eq!(res.status, StatusCode::OK, "{query}: {:?}", res.json());
    }
    assert_eq!(
        filtered(&app, "filter[price][_in]=2,%207").await,
        ["B-1", "E-1"]
    );
    let res = app
        .get(&format!("{gadgets}?filter[featured][_in]=1,false"))
        .await;
    assert_eq!(res.status, StatusCode::OK, "{:?}", res.json());
}

#[actix_web::test]
async fn filtering_on_a_hidden_or_unknown_field_is_the_same_422() {
    let app = TestApp::new(shop()).await;
    let hidden = app
        .get(&format!("{PRODUCTS}?filter[internal_notes]=INT"))
        .await;
    let unknown = app
        .get(&format!("{PRODUCTS}?filter[no_such_field]=INT"))
        .await;
    assert_invalid(&hidden, &["filter[internal_notes]"]);
    assert_invalid(&unknown, &["filter[no_such_field]"]);
    let rewritten = serde_json::to_string(&unknown.json())
        .unwrap()
        .replace("no_such_field", "internal_notes");
    assert_eq!(serde_json::to_string(&hidden.json()).unwrap(), rewritten);
    // The answer does not depend on the hidden values: matching and not matching look alike.
    for op in [
        "_eq]=INT-A1",
        "_eq]=nothing",
        "_null]=1",
        "_nnull]=1",
        "_contains]=A",
    ] {
        let res = app
            .get(&format!("{PRODUCTS}?filter[internal_notes][{op}"))
            .await;
        assert_invalid(&res, &["filter[internal_notes]"]);
        assert_eq!(res.body, hidden.body, "{op}");
    }
    // Super-admin reads the field and may filter on it.
    let admin = app
        .get_as(
            "admin-key",
            &format!("{PRODUCTS}?filter[internal_notes]=int-a"),
        )
        .await;
    assert_eq!(skus(&admin), ["A-1", "A-2"]);
}

#[actix_web::test]
async fn sorting_on_a_hidden_or_unknown_field_is_422_naming_sort() {
    let app = TestApp::new(shop()).await;
    let hidden = app.get(&format!("{PRODUCTS}?sort=-internal_notes")).await;
    let unknown = app.get(&format!("{PRODUCTS}?sort=-no_such_field")).await;
    assert_invalid(&hidden, &["sort"]);
    assert_invalid(&unknown, &["sort"]);
    let rewritten = serde_json::to_string(&unknown.json())
        .unwrap()
        .replace("no_such_field", "internal_notes");
    assert_eq!(serde_json::to_string(&hidden.json()).unwrap(), rewritten);
    assert_invalid(
        &app.get(&format!("{PRODUCTS}?sort=price,internal_notes"))
            .await,
        &["sort"],
    );
    assert_invalid(
        &app.get(&format!("{PRODUCTS}?sort=na%20me")).await,
        &["sort"],
    );
    let admin = app
        .get_as(
            "admin-key",
            &format!("{PRODUCTS}?sort=internal_notes&filter[internal_notes][_nnull]=1"),
        )
        .await;
    assert_eq!(skus(&admin), ["A-1", "A-2", "B-1"]);
}

#[actix_web::test]
async fn unknown_query_parameters_are_ignored() {
    let app = TestApp::new(shop()).await;
    let plain = app.get(PRODUCTS).await;
    for query in [
        "foo=bar",
        "filters[price][_bogus]=1",
        "filtered=1",
        "Page=abc&PER_PAGE=0",
        "direction=sideways",
        "include=nothing_known",
    ] {
        let res = app.get(&format!("{PRODUCTS}?{query}")).await;
        assert_eq!(res.status, StatusCode::OK, "{query}: {:?}", res.json());
        assert_eq!(res.json(), plain.json(), "{query}");
    }
}

// ---------------------------------------------------------------------------------------------
// The filter dialect

async fn filtered(app: &TestApp, query: &str) -> Vec<String> {
    skus(&app.get(&format!("{PRODUCTS}?{query}")).await)
}

#[actix_web::test]
async fn plain_filter_and_contains_match_substrings_ignoring_case() {
    let app = TestApp::new(shop()).await;
    assert_eq!(
        filtered(&app, "filter[name]=apple").await,
        ["A-1", "A-2", "E-1"]
    );
    assert_eq!(
        filtered(&app, "filter[name]=APPLE").await,
        ["A-1", "A-2", "E-1"]
    );
    assert_eq!(
        filtered(&app, "filter[name][_contains]=aPpLe").await,
        ["A-1", "A-2", "E-1"]
    );
    assert_eq!(
        filtered(&app, "filter[sku]=-1").await,
        ["A-1", "B-1", "C-1", "D-1", "E-1"]
    );
    assert_eq!(filtered(&app, "filter[notes]=rang").await, ["C-1"]);
    // LIKE metacharacters are literal.
    assert!(filtered(&app, "filter[name]=%25").await.is_empty());
    assert!(filtered(&app, "filter[name]=_").await.is_empty());
    // Translatable values are compared in the request's locale, like the data shown.
    assert_eq!(
        filtered(&app, "locale=de&filter[name]=apfel").await,
        ["A-1"]
    );
    assert_eq!(
        filtered(&app, "locale=de&filter[name]=apple").await,
        ["A-2", "E-1"]
    );
}

#[actix_web::test]
async fn eq_neq_and_in() {
    let app = TestApp::new(shop()).await;
    assert_eq!(filtered(&app, "filter[sku][_eq]=A-1").await, ["A-1"]);
    assert!(
        filtered(&app, "filter[sku][_eq]=A").await.is_empty(),
        "_eq is not contains"
    );
    assert_eq!(filtered(&app, "filter[price][_eq]=4").await, ["A-2"]);
    assert_eq!(filtered(&app, "filter[price][_eq]=1.5").await, ["C-1"]);
    assert_eq!(
        filtered(&app, "filter[category][_eq]=bakery").await,
        ["D-1", "E-1"]
    );
    assert_eq!(
        filtered(&app, "filter[category][_neq]=fruit").await,
        ["C-1", "D-1", "E-1"]
    );
    assert_eq!(
        filtered(&app, "filter[price][_neq]=3").await,
        ["A-2", "B-1", "C-1", "D-1", "E-1"]
    );
    assert_eq!(
        filtered(&app, "filter[sku][_in]=A-1,C-1,Z-9").await,
        ["A-1", "C-1"]
    );
    assert_eq!(
        filtered(&app, "filter[price][_in]=2,7").await,
        ["B-1", "E-1"]
    );
    assert_eq!(
        filtered(&app, "filter[id][_in]=999999").await,
        Vec::<String>::new()
    );
}

#[actix_web::test]
async fn comparisons_on_numbers_are_numeric() {
    let app = TestApp::new(shop()).await;
    assert_eq!(
        filtered(&app, "filter[price][_gt]=3").await,
        ["A-2", "D-1", "E-1"]
    );
    assert_eq!(
        filtered(&app, "filter[price][_gte]=3").await,
        ["A-1", "A-2", "D-1", "E-1"]
    );
    assert_eq!(filtered(&app, "filter[price][_lt]=2").await, ["C-1"]);
    assert_eq!(
        filtered(&app, "filter[price][_lte]=2").await,
        ["B-1", "C-1"]
    );
    // As text "7" > "10" and "20" < "3"; numerically they are not.
    assert_eq!(filtered(&app, "filter[price][_lt]=10").await.len(), 6);
    assert!(filtered(&app, "filter[price][_gt]=10").await.is_empty());
    assert_eq!(
        filtered(&app, "filter[stock][_gte]=10").await,
        ["A-1", "C-1"]
    );
    assert_eq!(
        filtered(&app, "filter[stock][_gt]=3&filter[stock][_lt]=20").await,
        ["A-1", "B-1"]
    );
}

#[actix_web::test]
async fn null_and_nnull() {
    let app = TestApp::new(shop()).await;
    // null, missing and blank text are "empty".
    assert_eq!(
        filtered(&app, "filter[notes][_null]=1").await,
        ["A-2", "B-1", "D-1", "E-1"]
    );
    assert_eq!(
        filtered(&app, "filter[notes][_nnull]=1").await,
        ["A-1", "C-1"]
    );
    assert_eq!(
        filtered(&app, "filter[notes][_null]=0").await,
        ["A-1", "C-1"]
    );
    assert!(filtered(&app, "filter[sku][_null]=1").await.is_empty());
    assert_eq!(filtered(&app, "filter[sku][_nnull]=true").await.len(), 6);
}

#[actix_web::test]
async fn several_conditions_are_anded_and_meta_counts_the_matches() {
    let app = TestApp::new(shop()).await;
    let res = app
        .get(&format!(
            "{PRODUCTS}?filter[category]=fruit&filter[price][_gte]=3"
        ))
        .await;
    assert_eq!(skus(&res), ["A-1", "A-2"]);
    assert_eq!(
        res.json()["meta"],
        json!({"current_page": 1, "last_page": 1, "per_page": 15, "total": 2})
    );
    assert_eq!(
        filtered(&app, "filter[name]=apple&filter[category][_eq]=bakery").await,
        ["E-1"]
    );
    let paged = app
        .get(&format!(
            "{PRODUCTS}?filter[category]=fruit&per_page=2&page=2"
        ))
        .await;
    assert_eq!(skus(&paged), ["B-1"]);
    assert_eq!(
        paged.json()["meta"],
        json!({"current_page": 2, "last_page": 2, "per_page": 2, "total": 3})
    );
}

#[actix_web::test]
async fn the_role_item_filter_is_anded_with_the_query_filter() {
    let app = TestApp::new(shop()).await;
    let all = app.get_as("fruit-key", PRODUCTS).await;
    assert_eq!(skus(&all), ["A-1", "A-2", "B-1"]);
    assert_eq!(all.json()["meta"]["total"], 3);
    let narrowed = app
        .get_as("fruit-key", &format!("{PRODUCTS}?filter[price][_gte]=3"))
        .await;
    assert_eq!(skus(&narrowed), ["A-1", "A-2"]);
    assert_eq!(
        narrowed.json()["meta"],
        json!({"current_page": 1, "last_page": 1, "per_page": 15, "total": 2})
    );
    // The query filter cannot widen the role's filter.
    let other = app
        .get_as(
            "fruit-key",
            &format!("{PRODUCTS}?filter[category][_eq]=bakery"),
        )
        .await;
    assert!(skus(&other).is_empty());
    assert_eq!(other.json()["meta"]["total"], 0);
    let neq = app
        .get_as(
            "fruit-key",
            &format!("{PRODUCTS}?filter[category][_neq]=fruit"),
        )
        .await;
    assert!(skus(&neq).is_empty());
    let paged = app
        .get_as("fruit-key", &format!("{PRODUCTS}?per_page=2&page=2"))
        .await;
    assert_eq!(skus(&paged), ["B-1"]);
    assert_eq!(
        paged.json()["meta"],
        json!({"current_page": 2, "last_page": 2, "per_page": 2, "total": 3})
    );
}

// ---------------------------------------------------------------------------------------------
// Sorting

#[actix_web::test]
async fn sort_by_several_keys_numbers_numerically() {
    let app = TestApp::new(shop()).await;
    assert_eq!(
        filtered(&app, "sort=-stock,name").await,
        ["C-1", "A-1", "B-1", "E-1", "D-1", "A-2"]
    );
    assert_eq!(
        filtered(&app, "sort=-price").await,
        ["E-1", "D-1", "A-2", "A-1", "B-1", "C-1"]
    );
    assert_eq!(
        filtered(&app, "sort=price").await,
        ["C-1", "B-1", "A-1", "A-2", "D-1", "E-1"]
    );
    assert_eq!(
        filtered(&app, "sort=id").await,
        ["A-1", "A-2", "B-1", "C-1", "D-1", "E-1"]
    );
    assert_eq!(
        filtered(&app, "sort=-id").await,
        ["E-1", "D-1", "C-1", "B-1", "A-2", "A-1"]
    );
    assert_eq!(
        filtered(&app, "sort=-created_at,-id").await,
        ["E-1", "D-1", "C-1", "B-1", "A-2", "A-1"]
    );
    assert_eq!(
        filtered(&app, "sort=category,-price").await,
        ["E-1", "D-1", "A-2", "A-1", "B-1", "C-1"]
    );
    // Sorting composes with filters and paging.
    let res = app
        .get(&format!(
            "{PRODUCTS}?sort=-price&filter[category]=fruit&per_page=2"
        ))
        .await;
    assert_eq!(skus(&res), ["A-2", "A-1"]);
    assert_eq!(res.json()["meta"]["total"], 3);
}

#[actix_web::test]
async fn sort_on_a_translatable_field_uses_the_request_locale() {
    let app = TestApp::new(shop()).await;
    assert_eq!(
        filtered(&app, "sort=name").await,
        ["E-1", "B-1", "D-1", "C-1", "A-2", "A-1"]
    );
    // de: APPLE pie (fallback), Banane, Brot, Green Apple (fallback), Karotte, Roter Apfel.
    assert_eq!(
        filtered(&app, "sort=name&locale=de").await,
        ["E-1", "B-1", "D-1", "A-2", "C-1", "A-1"]
    );
}

// ---------------------------------------------------------------------------------------------
// Locales

#[actix_web::test]
async fn locale_flattens_with_fallback_to_the_default_locale() {
    let app = TestApp::new(shop()).await;
    let names = |res: &Response| -> Vec<Value> {
        res.json()["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["data"]["name"].clone())
            .collect()
    };
    let en = app.get(PRODUCTS).await;
    assert_eq!(
        names(&en),
        [
            json!("Red Apple"),
            json!("Green Apple"),
            json!("Banana"),
            json!("Carrot"),
            json!("Bread"),
            json!("APPLE pie")
        ]
    );
    let explicit_en = app.get(&format!("{PRODUCTS}?locale=en")).await;
    assert_eq!(explicit_en.json(), en.json());
    let de = app.get(&format!("{PRODUCTS}?locale=de")).await;
    assert_eq!(
        names(&de),
        [
            json!("Roter Apfel"),
            json!("Green Apple"),
            json!("Banane"),
            json!("Karotte"),
            json!("Brot"),
            json!("APPLE pie")
        ]
    );
    let fr = app.get(&format!("{PRODUCTS}?locale=fr")).await;
    assert_eq!(
        fr.json(),
        en.json(),
        "no fr translations at all: everything falls back"
    );
    // Non-translatable values are untouched.
    let de_body = de.json();
    assert_eq!(de_body["data"][0]["data"]["sku"], "A-1");
    assert_eq!(de_body["data"][0]["data"]["price"], 3);
    // Show flattens the same way.
    let ids = ids(&app).await;
    let show = app
        .get(&format!("{PRODUCTS}/{}?locale=de", ids["A-1"]))
        .await
        .json();
    assert_eq!(show["data"], de_body["data"][0]);
}

#[actix_web::test]
async fn include_all_translations_returns_locale_maps() {
    let app = TestApp::new(shop()).await;
    let res = app
        .get(&format!("{PRODUCTS}?include_all_translations=true"))
        .await;
    assert_eq!(res.status, StatusCode::OK);
    let body = res.json();
    let names: Vec<Value> = body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["data"]["name"].clone())
        .collect();
    assert_eq!(
        names,
        [
            json!({"en": "Red Apple", "de": "Roter Apfel"}),
            json!({"en": "Green Apple"}),
            json!({"en": "Banana", "de": "Banane"}),
            json!({"en": "Carrot", "de": "Karotte"}),
            json!({"en": "Bread", "de": "Brot"}),
            json!({"en": "APPLE pie"}),
        ]
    );
    // Other fields keep their plain values, and hidden fields stay hidden.
    assert_eq!(
        body["data"][0]["data"],
        json!({
            "name": {"en": "Red Apple", "de": "Roter Apfel"},
            "sku": "A-1", "price": 3, "stock": 10, "category": "fruit", "notes": "Crisp"
        })
    );
    // With a locale too, all translations still win; false means flattened.
    let with_locale = app
        .get(&format!(
            "{PRODUCTS}?include_all_translations=true&locale=de"
        ))
        .await;
    assert_eq!(with_locale.json()["data"], body["data"]);
    let off = app
        .get(&format!("{PRODUCTS}?include_all_translations=false"))
        .await;
    assert_eq!(off.json(), app.get(PRODUCTS).await.json());
    let ids = ids(&app).await;
    let show = app
        .get(&format!(
            "{PRODUCTS}/{}?include_all_translations=true",
            ids["A-2"]
        ))
        .await
        .json();
    assert_eq!(show["data"]["data"]["name"], json!({"en": "Green Apple"}));
    assert_invalid(
        &app.get(&format!("{PRODUCTS}?include_all_translations=maybe"))
            .await,
        &["include_all_translations"],
    );
}

#[actix_web::test]
async fn neq_counts_null_and_missing_values_as_not_equal() {
    let app = TestApp::new(shop()).await;
    assert_eq!(
        filtered(&app, "filter[notes][_neq]=Crisp").await,
        ["A-2", "B-1", "C-1", "D-1", "E-1"]
    );
}

/// The labels of a gadgets list response.
async fn gadgets(app: &TestApp, query: &str) -> Vec<String> {
    let res = app
        .get(&format!("/api/v1/collections/gadgets/items?{query}"))
        .await;
    assert_eq!(res.status, StatusCode::OK, "{query}: {:?}", res.json());
    res.json()["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["data"]["label"].as_str().unwrap().to_owned())
        .collect()
}

#[actix_web::test]
async fn booleans_and_lists_filter_by_truth_and_by_element() {
    let app = TestApp::new(shop()).await;
    assert_eq!(
        gadgets(&app, "filter[featured][_eq]=true").await,
        ["g1", "g4"]
    );
    assert_eq!(gadgets(&app, "filter[featured][_eq]=1").await, ["g1", "g4"]);
    assert_eq!(gadgets(&app, "filter[featured][_eq]=false").await, ["g2"]);
    assert_eq!(
        gadgets(&app, "filter[featured][_neq]=true").await,
        ["g2", "g3"]
    );
    assert_eq!(gadgets(&app, "filter[featured][_null]=1").await, ["g3"]);
    // A list matches when any element does.
    assert_eq!(gadgets(&app, "filter[colours]=BLU").await, ["g1", "g3"]);
    assert_eq!(gadgets(&app, "filter[colours][_eq]=blue").await, ["g1"]);
    assert_eq!(
        gadgets(&app, "filter[colours][_in]=green,red").await,
        ["g1", "g4"]
    );
    // An empty list is empty.
    assert_eq!(gadgets(&app, "filter[colours][_null]=1").await, ["g2"]);
    assert_eq!(
        gadgets(&app, "filter[colours][_nnull]=1").await,
        ["g1", "g3", "g4"]
    );
    assert_eq!(gadgets(&app, "filter[rating][_null]=1").await, ["g2", "g3"]);
    assert_eq!(
        gadgets(&app, "filter[rating][_gte]=1&filter[featured][_eq]=true").await,
        ["g1", "g4"]
    );
}

#[actix_web::test]
async fn a_cached_answer_is_the_answer_the_request_would_get() {
    // The same parameters in another order, repeated: whatever the server makes of repeats, the
    // cache must not answer one request with another's response.
    let cached = TestApp::new(shop()).await;
    let uncached = TestApp::with_config(
        shop(),
        vellum_http::HttpConfig {
            cache: false,
            ..vellum_http::HttpConfig::default()
        },
    )
    .await;
    for (first, second) in [
        ("locale=de&locale=en", "locale=en&locale=de"),
        ("per_page=2&per_page=3", "per_page=3&per_page=2"),
        ("sort=-price&sort=price", "sort=price&sort=-price"),
    ] {
        let warm = cached.get(&format!("{PRODUCTS}?{first}")).await;
        assert_eq!(warm.status, StatusCode::OK);
        let answer = cached.get(&format!("{PRODUCTS}?{second}")).await;
        let expected = uncached.get(&format!("{PRODUCTS}?{second}")).await;
        assert_eq!(answer.status, expected.status, "{second}");
        // Two databases: everything but the timestamps is comparable.
        let untimed = |mut body: Value| {
            for item in body["data"].as_array_mut().unwrap() {
                let item = item.as_object_mut().unwrap();
                item.remove("created_at");
                item.remove("updated_at");
            }
            body
        };
        assert_eq!(
            untimed(answer.json()),
            untimed(expected.json()),
            "{second} after {first}"
        );
    }
}

/// 320 rows: past the offset where SQLite lists pick ids from the collection's scalar index.
fn rows() -> Value {
    let items: Vec<Value> = (1..=320)
        .map(|n| json!({"data": {"n": n, "parity": if n % 2 == 0 { "even" } else { "odd" }}}))
        .collect();
    json!({
        "collections": [{"slug": "rows", "name": "Rows", "fields": [
            {"name": "n", "type": "number", "settings": {}},
            {"name": "parity", "type": "string", "settings": {}}
        ]}],
        "roles": [{"name": "public", "collection_permissions": {"rows": {"read": true}}}],
        "items": {"rows": items}
    })
}

#[actix_web::test]
async fn deep_filtered_pages_hold_the_same_items_as_shallow_ones() {
    let app = TestApp::new(rows()).await;
    let ns = |body: &Value| -> Vec<i64> {
        body["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["data"]["n"].as_i64().unwrap())
            .collect()
    };
    let path = "/api/v1/collections/rows/items";
    let deep = app
        .get(&format!("{path}?filter[n][_gt]=0&per_page=10&page=31"))
        .await
        .json();
    assert_eq!(ns(&deep), (301..=310).collect::<Vec<_>>());
    assert_eq!(
        deep["meta"],
        json!({"current_page": 31, "last_page": 32, "per_page": 10, "total": 320})
    );
    let desc = app
        .get(&format!(
            "{path}?filter[n][_gt]=0&sort=-id&per_page=10&page=31"
        ))
        .await
        .json();
    assert_eq!(ns(&desc), (11..=20).rev().collect::<Vec<_>>());
    let odd = app
        .get(&format!(
            "{path}?filter[n][_gt]=0&filter[parity][_eq]=odd&per_page=2&page=76"
        ))
        .await
        .json();
    assert_eq!(ns(&odd), [301, 303]);
    assert_eq!(
        odd["meta"],
        json!({"current_page": 76, "last_page": 80, "per_page": 2, "total": 160})
    );
    let sorted = app
        .get(&format!(
            "{path}?filter[n][_gt]=0&sort=-n&per_page=10&page=31"
        ))
        .await
        .json();
    assert_eq!(ns(&sorted), (11..=20).rev().collect::<Vec<_>>());
    let unfiltered = app.get(&format!("{path}?per_page=10&page=32")).await.json();
    assert_eq!(ns(&unfiltered), (311..=320).collect::<Vec<_>>());
    let beyond = app
        .get(&format!("{path}?filter[n][_gt]=0&per_page=10&page=33"))
        .await
        .json();
    assert_eq!(
        beyond,
        json!({"data": [], "meta": {"current_page": 33, "last_page": 32, "per_page": 10, "total": 320}})
    );
}

#[actix_web::test]
async fn translatable_fields_inside_blocks_follow_the_locale_too() {
    let app = TestApp::new(shop()).await;
    let read = |query: &'static str| {
        let app = &app;
        async move {
            let res = app
                .get(&format!("/api/v1/collections/pages/items?{query}"))
                .await;
            assert_eq!(res.status, StatusCode::OK, "{query}");
            let mut data = res.json()["data"][0]["data"].clone();
            for block in data["content"].as_array_mut().unwrap() {
                assert!(block["id"].is_string(), "{block}");
                block.as_object_mut().unwrap().remove("id");
            }
            data
        }
    };
    assert_eq!(
        read("").await,
        json!({"title": "Home", "content": [
            {"type": "text", "data": {"body": "Hello", "n": 1}},
            {"type": "text", "data": {"body": "Only English"}}
        ]})
    );
    assert_eq!(
        read("locale=de").await,
        json!({"title": "Start", "content": [
            {"type": "text", "data": {"body": "Hallo", "n": 1}},
            {"type": "text", "data": {"body": "Only English"}}
        ]})
    );
    assert_eq!(
        read("include_all_translations=true").await,
        json!({"title": {"en": "Home", "de": "Start"}, "content": [
            {"type": "text", "data": {"body": {"en": "Hello", "de": "Hallo"}, "n": 1}},
            {"type": "text", "data": {"body": {"en": "Only English"}}}
        ]})
    );
}
