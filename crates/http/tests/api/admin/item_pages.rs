//! The web UI's collections and items list pages (issue 19): the collections with their counts,
//! the list's columns (picked, saved or the first fields), sort links, the filter builder's
//! redirect to a URL that can be shared, the trash view, the bulk form with its confirmation
//! before a deletion for good, export links that keep the query, empty states and refusals.

use actix_web::http::Method;
use serde_json::json;

use super::Session;
use super::items::{app_and_root, create};
use super::pages::{assert_page, browser, form, htmx_form, open, text};
use crate::support::TestApp;

/// Three products: a, b (price 5) and c (price 9).
async fn products(app: &TestApp, s: &Session) -> [i64; 3] {
    [
        create(
            app,
            s,
            "products",
            json!({"sku": "a", "name": "Apple", "price": 1}),
        )
        .await,
        create(
            app,
            s,
            "products",
            json!({"sku": "b", "name": "Banana", "price": 5}),
        )
        .await,
        create(
            app,
            s,
            "products",
            json!({"sku": "c", "name": "Cherry", "price": 9}),
        )
        .await,
    ]
}

#[actix_web::test]
async fn the_collections_page_lists_each_collection_with_its_counts() {
    let (app, root) = app_and_root().await;
    products(&app, &root).await;
    let page = open(&app, &root, "/collections").await;
    assert!(
        page.contains(r#"<a href="/collections/products/items">Products</a>"#),
        "{page}"
    );
    // products: 4 fields, 3 items.
    assert!(page.contains("<td>4</td>\n      <td>3</td>"), "{page}");
    // JSON clients keep the JSON list.
    let res = app
        .admin(Method::GET, "/collections", Some(&root), None)
        .await;
    assert_eq!(res.status, 200);
    assert!(res.json()["data"].as_array().is_some());
}

#[actix_web::test]
async fn the_list_shows_the_first_fields_or_the_picked_columns_with_sort_links() {
    let (app, root) = app_and_root().await;
    let [a, _, _] = products(&app, &root).await;
    let page = open(&app, &root, "/collections/products/items").await;
    assert!(page.contains("3 items"), "{page}");
    for column in ["sku", "name", "price", "note"] {
        assert!(
            page.contains(&format!(">{column}</a></th>")),
            "{column}: {page}"
        );
    }
    assert!(page.contains(&format!(
        r#"<a href="/collections/products/items/{a}">{a}</a>"#
    )));
    assert!(page.contains("<td>Apple</td>"));
    // Sorted by id ascending by default; the id header sorts descending next.
    assert!(page.contains(r#"aria-sort="ascending"><a href="/collections/products/items?sort=id&#38;direction=desc">id ↑</a>"#), "{page}");

    let page = open(
        &app,
        &root,
        "/collections/products/items?columns=price&columns=sku&sort=price&direction=desc",
    )
    .await;
    assert!(!page.contains(">name</a></th>"), "{page}");
    assert!(page.contains(">price ↓</a></th>"), "{page}");
    let head = &page[page.find("<thead>").unwrap()..page.find("</thead>").unwrap()];
    let (price, sku) = (head.find(">price").unwrap(), head.find(">sku").unwrap());
    assert!(price < sku, "columns keep the picked order");
    let (c, b) = (
        page.find("<td>9</td>").unwrap(),
        page.find("<td>5</td>").unwrap(),
    );
    assert!(c < b, "sorted by price, descending");
    assert!(page.contains(r#"aria-sort="descending""#));
    // The picker shows the picked columns checked, and the export links keep the sort.
    assert!(page.contains(r#"name="columns" value="price" checked"#));
    assert!(page.contains(r#"name="columns" value="name">"#));
    assert!(page.contains(
        r#"href="/collections/products/items/export?sort=price&#38;direction=desc&#38;format=csv""#
    ), "{page}");
}

#[actix_web::test]
async fn the_filter_builder_redirects_to_a_shareable_url_and_filters_can_be_removed() {
    let (app, root) = app_and_root().await;
    products(&app, &root).await;
    let res = app
        .send(browser(
            Method::GET,
            "/collections/products/items?sort=price&where_field=price&where_op=_gt&where_value=3&page=2",
            Some(&root),
        ))
        .await;
    assert_eq!(res.status, 303);
    let to = res.header("location").unwrap().to_owned();
    assert_eq!(
        to,
        "/collections/products/items?sort=price&filter%5Bprice%5D%5B_gt%5D=3"
    );
    let page = open(&app, &root, &to).await;
    assert!(page.contains("2 items"), "{page}");
    assert!(page.contains("price greater than “3”"), "{page}");
    assert!(!page.contains("<td>Apple</td>"));
    // The chip's link removes the condition and keeps the sort.
    assert!(page.contains(r#"<a href="/collections/products/items?sort=price" aria-label="Remove the filter: price greater than “3”">"#), "{page}");

    let none = open(
        &app,
        &root,
        "/collections/products/items?filter%5Bsku%5D%5B_eq%5D=zzz",
    )
    .await;
    assert!(none.contains("No items match these filters"), "{none}");
    // A filter on a field the collection does not have is the error page with the reason.
    let res = app
        .send(browser(
            Method::GET,
            "/collections/products/items?filter%5Bnope%5D=1",
            Some(&root),
        ))
        .await;
    let page = assert_page(&res, 422);
    assert!(page.contains("cannot be filtered on"), "{page}");
}

#[actix_web::test]
async fn bulk_forms_trash_restore_and_delete_for_good_after_a_confirmation() {
    let (app, root) = app_and_root().await;
    let [a, b, c] = products(&app, &root).await;
    let list = "/collections/products/items?sort=price";
    let (a, b, c) = (a.to_string(), b.to_string(), c.to_string());
    let res = app
        .send(form(
            "/collections/products/items/bulk",
            Some(&root),
            &[
                ("back", list),
                ("action", "delete"),
                ("ids", &a),
                ("ids", &b),
            ],
        ))
        .await;
    assert_eq!(res.status, 303, "{}", text(&res));
    let to = res.header("location").unwrap().to_owned();
    assert_eq!(
        to,
        "/collections/products/items?sort=price&bulk_action=delete&bulk_done=2&bulk_failed=0"
    );
    let page = open(&app, &root, &to).await;
    assert!(page.contains("2 items moved to the trash."), "{page}");
    assert!(page.contains("1 item<"), "{page}");

    let trash = open(&app, &root, "/collections/products/items?trashed=1").await;
    assert!(trash.contains("2 items") && trash.contains(r#"<option value="force_delete">"#));

    // Deleting for good asks first: nothing is gone until the confirmation is posted.
    let fields = [
        ("back", "/collections/products/items?trashed=1"),
        ("action", "force_delete"),
        ("ids", a.as_str()),
    ];
    let confirm = assert_page(
        &app.send(form(
            "/collections/products/items/bulk",
            Some(&root),
            &fields,
        ))
        .await,
        200,
    );
    assert!(confirm.contains("Delete 1 item for good?"), "{confirm}");
    assert!(confirm.contains(r#"<input type="hidden" name="confirm" value="yes">"#));
    let trash = open(&app, &root, "/collections/products/items?trashed=1").await;
    assert!(trash.contains("2 items"), "{trash}");
    let mut confirmed = fields.to_vec();
    confirmed.push(("confirm", "yes"));
    let res = app
        .send(form(
            "/collections/products/items/bulk",
            Some(&root),
            &confirmed,
        ))
        .await;
    assert_eq!(res.status, 303);
    let page = open(&app, &root, res.header("location").unwrap()).await;
    assert!(page.contains("1 item deleted for good."), "{page}");
    let res = app
        .admin(
            Method::GET,
            &format!("/collections/products/items/{a}"),
            Some(&root),
            None,
        )
        .await;
    assert_eq!(res.status, 404);

    // Nothing checked: the list says so. A `back` outside this list is not followed.
    let res = app
        .send(form(
            "/collections/products/items/bulk",
            Some(&root),
            &[("back", "https://evil.example/"), ("action", "restore")],
        ))
        .await;
    assert_eq!(res.status, 303);
    let to = res.header("location").unwrap().to_owned();
    assert!(to.starts_with("/collections/products/items?"), "{to}");
    assert!(
        open(&app, &root, &to)
            .await
            .contains("Select at least one item first.")
    );
    let _ = c;
}

#[actix_web::test]
async fn empty_lists_say_why_and_refusals_are_pages() {
    let (app, root) = app_and_root().await;
    let page = open(&app, &root, "/collections/products/items").await;
    assert!(page.contains("No items yet"), "{page}");
    let trash = open(&app, &root, "/collections/products/items?trashed=1").await;
    assert!(trash.contains("The trash is empty"), "{trash}");
    let res = app
        .send(browser(Method::GET, "/collections/nope/items", Some(&root)))
        .await;
    assert_page(&res, 404);
    let editor = app.signed_in("editor@example.com", &[]).await;
    for path in ["/collections", "/collections/products/items"] {
        let res = app.send(browser(Method::GET, path, Some(&editor))).await;
        assert_page(&res, 403);
    }
}

#[actix_web::test]
async fn the_item_form_has_a_widget_per_field_and_an_input_per_locale() {
    let (app, root) = app_and_root().await;
    let page = open(&app, &root, "/collections/articles/items/new").await;
    for needle in [
        r#"<form method="post" action="/collections/articles/items""#,
        r#"name="data[title][en]""#,
        r#"name="data[title][de]""#,
        r#"<option value="published">published</option>"#,
        r#"name="data[views]" value="" type="number""#,
        r#"name="data[author]" value="" type="number" min="1""#,
        r#"<textarea id="f-internal_notes" name="data[internal_notes]""#,
        r#"role="tablist" aria-label="Content locale""#,
        "locale-tabs.js",
        r#"data-picker="items" data-for="f-author" data-collection="articles""#,
        r#"data-picker="files" data-for="f-cover""#,
        "pickers.js",
    ] {
        assert!(page.contains(needle), "{needle}: {page}");
    }
    // The relation picker names its field by id (the options endpoint's field_id).
    assert!(!page.contains(r#"data-field-id="0""#), "{page}");
    // A required field is marked, and labelled for its locale.
    assert!(page.contains(r#"<label for="f-title-de">title <span class="muted">(de)</span> <span class="required" aria-hidden="true">*</span>"#), "{page}");
}

#[actix_web::test]
async fn creating_from_the_form_types_the_values_and_a_refusal_keeps_them() {
    let (app, root) = app_and_root().await;
    let fields = [
        ("data[title][en]", "Hello"),
        ("data[title][de]", "Hallo"),
        ("data[status]", "published"),
        ("data[views]", "3"),
        ("data[author]", ""),
        ("data[internal_notes]", "note"),
    ];
    let res = app
        .send(form("/collections/articles/items", Some(&root), &fields))
        .await;
    assert_eq!(res.status, 303, "{}", text(&res));
    let to = res.header("location").unwrap().to_owned();
    assert!(
        to.starts_with("/collections/articles/items/") && to.ends_with("?saved=1"),
        "{to}"
    );
    let page = open(&app, &root, &to).await;
    assert!(page.contains("Saved."), "{page}");
    assert!(
        page.contains(r#"name="data[title][de]" value="Hallo""#),
        "{page}"
    );
    assert!(
        page.contains(r#"<option value="published" selected>"#),
        "{page}"
    );
    let id = to
        .trim_start_matches("/collections/articles/items/")
        .trim_end_matches("?saved=1");
    let res = app
        .admin(
            Method::GET,
            &format!("/collections/articles/items/{id}?locale=de"),
            Some(&root),
            None,
        )
        .await;
    let data = &res.json()["data"]["data"];
    assert_eq!(data["views"], 3, "{data}");
    assert_eq!(data["title"], "Hallo");
    assert_eq!(data["author"], serde_json::Value::Null);

    // No title: the form again, 422, the problem under the title and the values as posted.
    let res = app
        .send(form(
            "/collections/articles/items",
            Some(&root),
            &[("data[title][en]", ""), ("data[views]", "12")],
        ))
        .await;
    let page = assert_page(&res, 422);
    assert!(
        page.contains(r#"class="field-error" id="f-title-en-error""#)
            || page.contains(r#"class="field-error" id="f-title-de-error""#),
        "{page}"
    );
    assert!(page.contains(r#"aria-invalid="true""#));
    assert!(page.contains(r#"name="data[views]" value="12""#), "{page}");
}

#[actix_web::test]
async fn htmx_saves_and_trashes_an_item_and_sends_the_browser_on() {
    let (app, root) = app_and_root().await;
    let [a, _, _] = products(&app, &root).await;
    let path = format!("/collections/products/items/{a}");
    let res = app
        .send(htmx_form(
            Method::PUT,
            &path,
            &root,
            &[("data[price]", "7.5"), ("data[note]", "")],
        ))
        .await;
    assert_eq!(res.status, 204, "{}", text(&res));
    assert_eq!(
        res.header("hx-redirect"),
        Some(format!("{path}?saved=1").as_str())
    );
    let res = app.admin(Method::GET, &path, Some(&root), None).await;
    let data = &res.json()["data"]["data"];
    assert_eq!(data["price"], 7.5, "{data}");
    assert_eq!(
        data["sku"], "a",
        "fields the form did not send keep their value"
    );

    // A value that is not a number comes back next to its field, with 422.
    let res = app
        .send(htmx_form(
            Method::PUT,
            &path,
            &root,
            &[("data[price]", "ten")],
        ))
        .await;
    let page = assert_page(&res, 422);
    assert!(page.contains(r#"id="f-price-error""#), "{page}");
    assert!(page.contains(r#"name="data[price]" value="ten""#), "{page}");

    let res = app
        .send(browser(Method::DELETE, &path, Some(&root)).insert_header(("hx-request", "true")))
        .await;
    assert_eq!(res.status, 204);
    let list = res.header("hx-redirect").unwrap().to_owned();
    assert!(
        open(&app, &root, &list)
            .await
            .contains("1 item moved to the trash.")
    );
    let page = open(&app, &root, &path).await;
    assert!(page.contains("This item is in the trash."), "{page}");
    assert_page(
        &app.send(browser(
            Method::GET,
            "/collections/products/items/999999",
            Some(&root),
        ))
        .await,
        404,
    );
}

#[actix_web::test]
async fn the_history_compares_each_revision_and_restores_one_with_a_form() {
    let (app, root) = app_and_root().await;
    let [a, _, _] = products(&app, &root).await;
    let path = format!("/collections/products/items/{a}");
    for price in ["2", "3"] {
        let res = app
            .send(htmx_form(
                Method::PUT,
                &path,
                &root,
                &[("data[price]", price)],
            ))
            .await;
        assert_eq!(res.status, 204);
    }
    let page = open(&app, &root, &format!("{path}/revisions")).await;
    assert!(page.contains("3 revisions, newest first"), "{page}");
    // Newest first: 2 → 3, then 1 → 2, then the creation.
    let newest = page
        .find("<td class=\"before\">2</td><td class=\"after\">3</td>")
        .unwrap();
    let middle = page
        .find("<td class=\"before\">1</td><td class=\"after\">2</td>")
        .unwrap();
    assert!(newest < middle, "{page}");
    assert!(page.contains("Created with"));
    assert_eq!(
        page.matches("Restore this revision").count(),
        2,
        "not the current one"
    );

    // Restore the oldest (price 1) with the form: 303 to the history, which says so.
    let oldest = page
        .rsplit("/revisions/")
        .next()
        .and_then(|rest| rest.split('/').next())
        .unwrap()
        .to_owned();
    let res = app
        .send(form(
            &format!("{path}/revisions/{oldest}/restore"),
            Some(&root),
            &[],
        ))
        .await;
    assert_eq!(res.status, 303, "{}", text(&res));
    let to = res.header("location").unwrap().to_owned();
    assert_eq!(to, format!("{path}/revisions?restored=1"));
    let page = open(&app, &root, &to).await;
    assert!(
        page.contains("Restored:") && page.contains("4 revisions"),
        "{page}"
    );
    let res = app.admin(Method::GET, &path, Some(&root), None).await;
    assert_eq!(res.json()["data"]["data"]["price"], 1);
}

#[actix_web::test]
async fn the_preview_shows_what_a_role_reads_and_why() {
    let (app, root) = app_and_root().await;
    let draft = create(
        &app,
        &root,
        "articles",
        json!({"title": {"en": "Secret draft"}, "status": "draft", "internal_notes": "hush"}),
    )
    .await;
    let published = create(
        &app,
        &root,
        "articles",
        json!({"title": {"en": "Out now"}, "status": "published", "internal_notes": "hush"}),
    )
    .await;
    let base = "/collections/articles/items";
    let picker = open(&app, &root, &format!("{base}/{draft}/preview-as-role")).await;
    assert!(
        picker.contains("Choose a role") && picker.contains(r#"<option value="public">"#),
        "{picker}"
    );

    let page = open(
        &app,
        &root,
        &format!("{base}/{draft}/preview-as-role?role=public"),
    )
    .await;
    assert!(page.contains("“public” does not read this item"), "{page}");
    assert!(page.contains("the item does not pass it"), "{page}");
    assert!(!page.contains("Secret draft"));

    let page = open(
        &app,
        &root,
        &format!("{base}/{published}/preview-as-role?role=public"),
    )
    .await;
    assert!(page.contains("“public” reads this item"), "{page}");
    assert!(page.contains("Out now") && !page.contains("hush"), "{page}");
    assert!(
        page.contains("<dt>Fields removed</dt><dd>internal_notes</dd>"),
        "{page}"
    );
    let res = app
        .send(browser(
            Method::GET,
            &format!("{base}/{published}/preview-as-role?role=nobody"),
            Some(&root),
        ))
        .await;
    assert_page(&res, 422);
}

#[actix_web::test]
async fn a_bulk_form_over_the_limit_is_refused_without_a_confirmation_page() {
    let (app, root) = app_and_root().await;
    let ids: Vec<String> = (1..=101).map(|i| i.to_string()).collect();
    let mut fields = vec![
        ("action", "force_delete"),
        ("back", "/collections/products/items"),
    ];
    fields.extend(ids.iter().map(|id| ("ids", id.as_str())));
    let res = app
        .send(form(
            "/collections/products/items/bulk",
            Some(&root),
            &fields,
        ))
        .await;
    let page = assert_page(&res, 422);
    assert!(
        !page.contains("for good?") && page.contains("1 to 100"),
        "{page}"
    );
    // A column named again and again is shown once.
    products(&app, &root).await;
    let page = open(
        &app,
        &root,
        &format!("/collections/products/items?{}", "columns=sku&".repeat(500)),
    )
    .await;
    assert_eq!(page.matches(">sku</a></th>").count(), 1, "{page}");
}
