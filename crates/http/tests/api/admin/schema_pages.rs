//! The web UI's schema editor (issue 19): a collection created by a form (or from a pack), a
//! field added (or a pack of them), a change that converts stored values confirmed after its
//! dry run, fields and collections deleted after theirs, refusals next to their field.

use actix_web::http::Method;
use serde_json::json;

use super::items::{app_and_root, create};
use super::pages::{assert_page, browser, form, htmx_form, open, text};

#[actix_web::test]
async fn collections_and_fields_are_made_from_forms_and_packs() {
    let (app, root) = app_and_root().await;
    let page = open(&app, &root, "/collections").await;
    assert!(
        page.contains(r#"aria-label="Schema of Products">Schema</a>"#)
            && page.contains(r#"action="/collections/packs/seo""#),
        "{page}"
    );

    let page = assert_page(
        &app.send(form(
            "/collections",
            Some(&root),
            &[("name", "Bad"), ("slug", "Not A Slug")],
        ))
        .await,
        422,
    );
    assert!(
        page.contains(r#"id="c-slug-error""#) && page.contains(r#"value="Not A Slug""#),
        "{page}"
    );
    let res = app
        .send(form(
            "/collections",
            Some(&root),
            &[
                ("name", "Events"),
                ("slug", "events"),
                ("is_singleton", "false"),
            ],
        ))
        .await;
    assert_eq!(
        (res.status.as_u16(), res.header("location")),
        (303, Some("/collections/events")),
        "{}",
        text(&res)
    );
    assert!(
        open(&app, &root, "/collections/events")
            .await
            .contains("No fields yet")
    );

    let fields = [
        ("name", "starts"),
        ("type", "date"),
        ("translatable", "false"),
        ("settings", r#"{"required": true}"#),
    ];
    let res = app
        .send(form("/collections/events/fields", Some(&root), &fields))
        .await;
    assert_eq!(
        res.header("location"),
        Some("/collections/events?added=starts"),
        "{}",
        text(&res)
    );
    let page = open(&app, &root, "/collections/events?added=starts").await;
    assert!(
        page.contains("Field added: starts.") && page.contains("<code>starts</code>"),
        "{page}"
    );
    let page = assert_page(
        &app.send(form(
            "/collections/events/fields",
            Some(&root),
            &[("name", "x"), ("type", "strng")],
        ))
        .await,
        422,
    );
    assert!(
        page.contains(r#"role="alert""#) && page.contains(r#"value="x""#),
        "{page}"
    );

    let res = app
        .send(form(
            "/collections/events/field-packs/contact",
            Some(&root),
            &[],
        ))
        .await;
    assert_eq!(
        res.header("location"),
        Some("/collections/events?pack=contact")
    );
    let res = app
        .send(form("/collections/packs/categories", Some(&root), &[]))
        .await;
    assert_eq!(res.status, 303, "{}", text(&res));
    assert!(res.header("location").unwrap().starts_with("/collections/"));
}

#[actix_web::test]
async fn destructive_changes_are_confirmed_after_their_dry_run() {
    let (app, root) = app_and_root().await;
    create(&app, &root, "products", json!({"sku": "a", "price": 3})).await;
    // price: number → string converts one stored value: a dry run to confirm first.
    let change = [
        ("name", "price"),
        ("type", "string"),
        ("translatable", "false"),
        ("settings", "{}"),
    ];
    let page = assert_page(
        &app.send(htmx_form(
            Method::PUT,
            "/collections/products/fields/price",
            &root,
            &change,
        ))
        .await,
        200,
    );
    assert!(
        page.contains("Change price?") && page.contains("1 stored value will be converted"),
        "{page}"
    );
    assert!(
        page.contains(r#"hx-put="/collections/products/fields/price?confirm=true""#),
        "{page}"
    );
    let unchanged = app
        .admin(Method::GET, "/collections/products", Some(&root), None)
        .await
        .json();
    assert!(
        unchanged
            .to_string()
            .contains(r#""name":"price","type":"number""#),
        "nothing changed yet"
    );
    let res = app
        .send(htmx_form(
            Method::PUT,
            "/collections/products/fields/price?confirm=true",
            &root,
            &change,
        ))
        .await;
    assert_eq!(
        (res.status.as_u16(), res.header("hx-redirect")),
        (204, Some("/collections/products?saved=price"))
    );

    let page = assert_page(
        &app.send(htmx_form(
            Method::DELETE,
            "/collections/products/fields/note",
            &root,
            &[],
        ))
        .await,
        200,
    );
    assert!(
        page.contains("Delete the field note?")
            && page.contains(r#"hx-delete="/collections/products/fields/note?confirm=true""#),
        "{page}"
    );
    let res = app
        .send(htmx_form(
            Method::DELETE,
            "/collections/products/fields/note?confirm=true",
            &root,
            &[],
        ))
        .await;
    assert_eq!(
        res.header("hx-redirect"),
        Some("/collections/products?deleted=note")
    );

    let page = assert_page(
        &app.send(htmx_form(
            Method::DELETE,
            "/collections/products",
            &root,
            &[],
        ))
        .await,
        200,
    );
    assert!(page.contains("Its 1 item, their revisions"), "{page}");
    let res = app
        .send(htmx_form(
            Method::DELETE,
            "/collections/products?confirm=true",
            &root,
            &[],
        ))
        .await;
    assert_eq!(res.header("hx-redirect"), Some("/collections"));
    assert_page(
        &app.send(browser(Method::GET, "/collections/products", Some(&root)))
            .await,
        404,
    );

    // A refused deletion answers a page with the reason, which htmx swaps in (the pages send
    // `Accept: text/html`).
    let res = app
        .send(htmx_form(
            Method::DELETE,
            "/collections/authors",
            &root,
            &[],
        ))
        .await;
    let page = assert_page(&res, 422);
    assert!(page.contains("articles.author"), "{page}");
}

#[actix_web::test]
async fn fields_move_up_and_down_and_a_list_keeps_its_saved_columns() {
    let (app, root) = app_and_root().await;
    let page = open(&app, &root, "/collections/products").await;
    assert!(
        page.contains(r#"aria-label="Move price up""#)
            && !page.contains(r#"aria-label="Move sku up""#),
        "{page}"
    );
    let order = [
        ("fields", "sku"),
        ("fields", "price"),
        ("fields", "name"),
        ("fields", "note"),
    ];
    let res = app
        .send(htmx_form(
            Method::PUT,
            "/collections/products/field-order?moved=price",
            &root,
            &order,
        ))
        .await;
    assert_eq!(
        (res.status.as_u16(), res.header("hx-redirect")),
        (204, Some("/collections/products?moved=price")),
        "{}",
        text(&res)
    );
    let page = open(&app, &root, "/collections/products?moved=price").await;
    assert!(page.contains("Field moved: price."), "{page}");
    let (price, name) = (
        page.find("<code>price</code>").unwrap(),
        page.find("<code>name</code>").unwrap(),
    );
    assert!(price < name, "{page}");

    create(&app, &root, "products", json!({"sku": "a", "price": 3})).await;
    let columns = [("columns", "note"), ("columns", "sku")];
    let res = app
        .send(htmx_form(
            Method::PUT,
            "/collections/products/list-columns",
            &root,
            &columns,
        ))
        .await;
    assert_eq!(
        res.header("hx-redirect"),
        Some("/collections/products/items?saved_columns=1"),
        "{}",
        text(&res)
    );
    let list = open(&app, &root, "/collections/products/items?saved_columns=1").await;
    assert!(
        list.contains("These columns are now the list's default."),
        "{list}"
    );
    let head = &list[list.find("<thead>").unwrap()..list.find("</thead>").unwrap()];
    assert!(
        head.contains(">note</a>") && head.contains(">sku</a>") && !head.contains(">price</a>"),
        "{head}"
    );
}
