//! The web UI's roles pages (issue 19): the list, the editor with both matrices, field rules and
//! item filters (a new role posted as a form, a change put with htmx, a refusal next to its
//! part), the system roles' limits, duplicate and delete, and the preview panel's source.

use actix_web::http::Method;
use serde_json::json;

use super::pages::{assert_page, browser, form, htmx_form, open, text};
use crate::support::{TestApp, blog};

/// Every field rule box of `articles` checked but `internal_notes`' read.
fn article_rules() -> Vec<(String, String)> {
    let mut out = Vec::new();
    for field in [
        "title",
        "status",
        "views",
        "cover",
        "author",
        "tags",
        "internal_notes",
    ] {
        for flag in ["read", "create", "update"] {
            if !(field == "internal_notes" && flag == "read") {
                out.push((format!("fr.articles.{field}.{flag}"), "true".to_owned()));
            }
        }
    }
    out
}

#[actix_web::test]
async fn a_role_is_created_edited_with_rules_and_refused_next_to_its_part() {
    let app = TestApp::new(blog()).await;
    let root = app.signed_in("root@example.com", &["super-admin"]).await;
    let list = open(&app, &root, "/settings/roles").await;
    assert!(
        list.contains(">editor</a>") && list.contains(r#"<span class="tag">system</span>"#),
        "{list}"
    );
    let editor = open(&app, &root, "/settings/roles/create").await;
    assert!(
        editor.contains(r#"name="cp.articles.read""#)
            && editor.contains(r#"name="fr.articles.internal_notes.read""#),
        "{editor}"
    );
    assert!(editor.contains(r#"name="permission_ids[]""#));

    let mut fields: Vec<(String, String)> = vec![
        ("name".into(), "moderator".into()),
        ("cp.articles.read".into(), "true".into()),
        ("cp.articles.update".into(), "true".into()),
        (
            "if.articles".into(),
            r#"{"status": {"_eq": "draft"}}"#.into(),
        ),
        ("fp.read".into(), "true".into()),
    ];
    fields.extend(article_rules());
    let pairs: Vec<(&str, &str)> = fields
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let res = app.send(form("/settings/roles", Some(&root), &pairs)).await;
    assert_eq!(res.status, 303, "{}", text(&res));
    let to = res.header("location").unwrap().to_owned();
    assert!(to.ends_with("/edit?saved=1"), "{to}");
    let id = to
        .trim_start_matches("/settings/roles/")
        .split('/')
        .next()
        .unwrap()
        .to_owned();
    let stored = app
        .admin(
            Method::GET,
            &format!("/settings/roles/{id}/edit"),
            Some(&root),
            None,
        )
        .await
        .json();
    assert_eq!(
        stored["data"]["role"]["collection_permissions"],
        json!({"articles": {"read": true, "update": true, "rules": {
            "fields": {"internal_notes": {"read": false}},
            "item_filter": {"status": {"_eq": "draft"}}
        }}})
    );
    let page = open(&app, &root, &to).await;
    assert!(
        page.contains("Saved.") && page.contains("<details open>"),
        "{page}"
    );
    assert!(
        page.contains(r#"name="fr.articles.internal_notes.read" value="true" aria-label"#),
        "unchecked: {page}"
    );

    // An item filter on a field the collection does not have: 422, next to that collection.
    let mut bad = pairs.clone();
    bad.retain(|(k, _)| *k != "if.articles");
    bad.push(("if.articles", r#"{"nope": "x"}"#));
    let res = app
        .send(htmx_form(
            Method::PUT,
            &format!("/settings/roles/{id}"),
            &root,
            &bad,
        ))
        .await;
    let page = assert_page(&res, 422);
    assert!(page.contains(r#"<p class="field-error">"#), "{page}");
    assert!(
        page.contains(r#"{&#34;nope&#34;:&#34;x&#34;}</textarea>"#),
        "{page}"
    );

    // Saved with htmx: every box of tags is left unchecked, so the grant goes.
    let res = app
        .send(htmx_form(
            Method::PUT,
            &format!("/settings/roles/{id}"),
            &root,
            &[("name", "moderators")],
        ))
        .await;
    assert_eq!(res.status, 204, "{}", text(&res));
    assert_eq!(
        res.header("hx-redirect"),
        Some(format!("/settings/roles/{id}/edit?saved=1").as_str())
    );

    let res = app
        .send(
            browser(
                Method::DELETE,
                &format!("/settings/roles/{id}"),
                Some(&root),
            )
            .insert_header(("hx-request", "true")),
        )
        .await;
    assert_eq!(res.header("hx-redirect"), Some("/settings/roles?deleted=1"));
    assert!(
        open(&app, &root, "/settings/roles?deleted=1")
            .await
            .contains("Role deleted.")
    );
}

#[actix_web::test]
async fn system_roles_keep_their_names_and_public_holds_no_permission() {
    let app = TestApp::new(blog()).await;
    let root = app.signed_in("root@example.com", &["super-admin"]).await;
    let roles = app
        .admin(
            Method::GET,
            "/settings/roles?per_page=100",
            Some(&root),
            None,
        )
        .await
        .json();
    let id_of = |name: &str| {
        roles["data"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == name)
            .unwrap()["id"]
            .as_i64()
            .unwrap()
    };
    let public = open(
        &app,
        &root,
        &format!("/settings/roles/{}/edit", id_of("public")),
    )
    .await;
    assert!(
        public.contains(r#"name="name" value="public" maxlength="255" readonly"#),
        "{public}"
    );
    assert!(!public.contains(r#"name="permission_ids[]""#), "{public}");
    let list = open(&app, &root, "/settings/roles").await;
    assert!(!list.contains(&format!(
        r#"action="/settings/roles/{}/duplicate""#,
        id_of("public")
    )));
    // Duplicate by a form: 303 to the copy's editor.
    let res = app
        .send(form(
            &format!("/settings/roles/{}/duplicate", id_of("editor")),
            Some(&root),
            &[("name", "editor (copy)")],
        ))
        .await;
    assert_eq!(res.status, 303, "{}", text(&res));
    let page = open(&app, &root, res.header("location").unwrap()).await;
    assert!(page.contains(r#"value="editor (copy)""#), "{page}");
    assert!(page.contains("data-role-preview") && page.contains("role-preview.js"));
}
