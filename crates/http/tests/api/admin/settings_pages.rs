//! The web UI's settings pages (issue 19): API keys listed with their state, created from the
//! form with the secret shown once in the answer (never in a URL), refused with the problem next
//! to its field, and revoked with htmx; the create form only for who may manage keys.

use actix_web::http::Method;

use super::access_support::signed_in_with;
use super::pages::{assert_page, browser, form, htmx_form, open, text};
use crate::support::TestApp;

#[actix_web::test]
async fn api_keys_are_listed_created_with_their_secret_once_and_revoked() {
    let app = TestApp::new(crate::support::blog()).await;
    let root = app.signed_in("root@example.com", &["super-admin"]).await;
    let page = open(&app, &root, "/settings/api-keys").await;
    assert!(page.contains("<td>editor-key</td>"), "{page}");
    assert!(
        page.contains(r#"<option value="editor">editor</option>"#),
        "{page}"
    );
    assert!(
        page.contains(r#"<option value="super-admin">"#),
        "a super-admin may bind super-admin"
    );

    let res = app
        .send(form(
            "/settings/api-keys",
            Some(&root),
            &[
                ("name", "site"),
                ("role", "editor"),
                ("ip_allowlist", "10.0.0.0/8\n192.0.2.1"),
                ("expires_on", "2099-01-31"),
            ],
        ))
        .await;
    let page = assert_page(&res, 200);
    let secret = page
        .split(r#"<input id="secret" value=""#)
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap()
        .to_owned();
    assert!(secret.starts_with("ek_"), "{page}");
    assert!(page.contains("10.0.0.0/8, 192.0.2.1"));
    assert!(page.contains("2099-01-31 00:00 UTC"));
    // The secret works on the public API, and the list never shows it again.
    let res = app
        .send(
            TestApp::request(Method::GET, "/api/v1/collections/articles/items")
                .insert_header(("authorization", format!("Bearer {secret}"))),
        )
        .await;
    assert_eq!(
        res.status,
        403,
        "a key of a role without a matching address is refused, not unknown: {}",
        text(&res)
    );
    let list = open(&app, &root, "/settings/api-keys").await;
    assert!(!list.contains(&secret));

    // A refusal: the form again, 422, the problem under its field and the values kept.
    let res = app
        .send(form(
            "/settings/api-keys",
            Some(&root),
            &[
                ("name", "bad"),
                ("role", "editor"),
                ("ip_allowlist", "not an address"),
            ],
        ))
        .await;
    let page = assert_page(&res, 422);
    assert!(page.contains(r#"id="key-ips-error""#), "{page}");
    assert!(page.contains(">not an address</textarea>"));

    // Revoked with htmx: 204 and the page to load next, which says so.
    let id = app
        .admin(Method::GET, "/settings/api-keys", Some(&root), None)
        .await
        .json()["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["name"] == "site")
        .unwrap()["id"]
        .as_i64()
        .unwrap();
    let res = app
        .send(
            browser(
                Method::DELETE,
                &format!("/settings/api-keys/{id}"),
                Some(&root),
            )
            .insert_header(("hx-request", "true")),
        )
        .await;
    assert_eq!(res.status, 204);
    let next = res.header("hx-redirect").unwrap().to_owned();
    let page = open(&app, &root, &next).await;
    assert!(page.contains("Key revoked."), "{page}");
    assert!(page.contains(r#"<span class="tag state-revoked">revoked</span>"#));
}

#[actix_web::test]
async fn who_may_only_see_keys_gets_no_form_and_only_a_super_admin_binds_super_admin() {
    let app = TestApp::new(crate::support::blog()).await;
    let nobody = app.signed_in("nobody@example.com", &[]).await;
    assert_page(
        &app.send(browser(Method::GET, "/settings/api-keys", Some(&nobody)))
            .await,
        403,
    );
    let viewer = signed_in_with(&app, "viewer@example.com", &["can-show-api-keys"]).await;
    let page = open(&app, &viewer, "/settings/api-keys").await;
    assert!(page.contains("<td>editor-key</td>"));
    assert!(
        !page.contains("New key") && !page.contains("hx-delete"),
        "{page}"
    );
    let manager = signed_in_with(
        &app,
        "manager@example.com",
        &["can-show-api-keys", "can-manage-api-keys"],
    )
    .await;
    let page = open(&app, &manager, "/settings/api-keys").await;
    assert!(
        page.contains(r#"<option value="editor">editor</option>"#),
        "{page}"
    );
    assert!(!page.contains(r#"<option value="super-admin">"#), "{page}");
}

#[actix_web::test]
async fn project_settings_are_shown_saved_and_refused_next_to_their_field() {
    let app = TestApp::new(crate::support::blog()).await;
    let root = app.signed_in("root@example.com", &["super-admin"]).await;
    let page = open(&app, &root, "/settings/project").await;
    assert!(
        page.contains(r#"name="content_locales" value="en, de""#),
        "{page}"
    );
    assert!(page.contains(r#"hx-put="/settings/project""#));

    let fields = [
        ("content_locales", "en, de, fr"),
        ("default_locale", "fr"),
        (
            "public_api_allowed_origins",
            "https://a.example\nhttps://b.example\n",
        ),
        ("files_max_upload_bytes", "1048576"),
        ("chat_max_upload_bytes", "2048"),
        ("daily_prompt_limit", "7"),
    ];
    let res = app
        .send(htmx_form(Method::PUT, "/settings/project", &root, &fields))
        .await;
    assert_eq!(res.status, 204, "{}", text(&res));
    assert_eq!(res.header("hx-redirect"), Some("/settings/project?saved=1"));
    let stored = app
        .admin(Method::GET, "/settings/project", Some(&root), None)
        .await
        .json();
    assert_eq!(
        stored["data"]["content_locales"],
        serde_json::json!(["en", "de", "fr"])
    );
    assert_eq!(stored["data"]["default_locale"], "fr");
    assert_eq!(stored["data"]["files_max_upload_bytes"], 1_048_576);
    assert_eq!(
        stored["data"]["public_api_allowed_origins"],
        serde_json::json!(["https://a.example", "https://b.example"])
    );
    let page = assert_page(
        &app.send(browser(
            Method::GET,
            "/settings/project?saved=1",
            Some(&root),
        ))
        .await,
        200,
    );
    assert!(page.contains("Saved."));

    // A default locale that is not enabled: 422, the problem under it, the values as typed.
    let mut bad = fields.to_vec();
    bad[1] = ("default_locale", "xx");
    let page = assert_page(
        &app.send(htmx_form(Method::PUT, "/settings/project", &root, &bad))
            .await,
        422,
    );
    assert!(page.contains(r#"id="s-default_locale-error""#), "{page}");
    assert!(page.contains(r#"name="default_locale" value="xx""#));
    let mut bad = fields.to_vec();
    bad[5] = ("daily_prompt_limit", "many");
    let page = assert_page(
        &app.send(htmx_form(Method::PUT, "/settings/project", &root, &bad))
            .await,
        422,
    );
    assert!(
        page.contains(r#"id="s-daily_prompt_limit-error""#),
        "{page}"
    );
    assert!(page.contains(r#"name="daily_prompt_limit" value="many""#));
    let stored = app
        .admin(Method::GET, "/settings/project", Some(&root), None)
        .await
        .json();
    assert_eq!(
        stored["data"]["default_locale"], "fr",
        "nothing was changed"
    );
}

#[actix_web::test]
async fn permissions_are_listed_deleted_and_added_back_from_the_catalog() {
    let app = TestApp::new(crate::support::blog()).await;
    let root = app.signed_in("root@example.com", &["super-admin"]).await;
    let page = open(&app, &root, "/settings/permissions").await;
    assert!(
        page.contains("<td><code>can-show-users</code></td>"),
        "{page}"
    );
    let list = app
        .admin(Method::GET, "/settings/permissions", Some(&root), None)
        .await
        .json();
    let id = list["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "can-show-chat")
        .unwrap()["id"]
        .as_i64()
        .unwrap();
    let res = app
        .send(
            browser(
                Method::DELETE,
                &format!("/settings/permissions/{id}"),
                Some(&root),
            )
            .insert_header(("hx-request", "true")),
        )
        .await;
    assert_eq!(
        res.header("hx-redirect"),
        Some("/settings/permissions?deleted=1")
    );
    let page = assert_page(
        &app.send(browser(
            Method::GET,
            "/settings/permissions?deleted=1",
            Some(&root),
        ))
        .await,
        200,
    );
    assert!(page.contains("Permission deleted") && !page.contains("<code>can-show-chat</code>"));

    let res = app
        .send(form("/settings/permissions/sync", Some(&root), &[]))
        .await;
    assert_eq!(res.status, 303, "{}", text(&res));
    assert_eq!(
        res.header("location"),
        Some("/settings/permissions?created=1")
    );
    let page = assert_page(
        &app.send(browser(
            Method::GET,
            "/settings/permissions?created=1",
            Some(&root),
        ))
        .await,
        200,
    );
    assert!(
        page.contains("1 permission of the catalog added.")
            && page.contains("<code>can-show-chat</code>"),
        "{page}"
    );
}
