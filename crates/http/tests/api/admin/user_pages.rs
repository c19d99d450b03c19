//! The web UI's user and group forms (issue 19): a user created by a form post with roles and groups, a
//! refusal next to its field, a change put with htmx (an empty password keeps the password),
//! deleted, restored and deleted for good from the trash.

use actix_web::http::Method;

use super::PASSWORD;
use super::pages::{assert_page, form, htmx_form, open, text};
use crate::support::{TestApp, blog};

#[actix_web::test]
async fn a_user_is_created_edited_deleted_restored_and_deleted_for_good() {
    let app = TestApp::new(blog()).await;
    let root = app.signed_in("root@example.com", &["super-admin"]).await;
    let list = open(&app, &root, "/users").await;
    assert!(
        list.contains(r#"href="/users/create">New user</a>"#),
        "{list}"
    );
    let page = open(&app, &root, "/users/create").await;
    assert!(
        page.contains(r#"name="roles[]" value="editor""#) && !page.contains(r#"value="public""#),
        "{page}"
    );

    // A short password: the form again with the problem under it and the values kept.
    let fields = [
        ("name", "Ada"),
        ("email", "ada@example.com"),
        ("password", "short"),
        ("roles[]", "editor"),
        ("email_verified", "false"),
    ];
    let page = assert_page(&app.send(form("/users", Some(&root), &fields)).await, 422);
    assert!(
        page.contains(r#"id="u-password-error""#) && page.contains(r#"value="ada@example.com""#),
        "{page}"
    );
    assert!(page.contains(r#"name="roles[]" value="editor" checked"#));

    let mut fields = fields.to_vec();
    fields[2] = ("password", PASSWORD);
    let res = app.send(form("/users", Some(&root), &fields)).await;
    assert_eq!(res.status, 303, "{}", text(&res));
    let to = res.header("location").unwrap().to_owned();
    let id = to
        .trim_start_matches("/users/")
        .split('/')
        .next()
        .unwrap()
        .to_owned();
    assert!(open(&app, &root, &to).await.contains("Saved."));
    let ada = app.sign_in("ada@example.com", PASSWORD).await;

    // Renamed with htmx; the empty password keeps the password.
    let path = format!("/users/{id}");
    let res = app
        .send(htmx_form(
            Method::PUT,
            &path,
            &root,
            &[
                ("name", "Ada L."),
                ("email", "ada@example.com"),
                ("password", ""),
                ("email_verified", "true"),
            ],
        ))
        .await;
    assert_eq!(res.status, 204, "{}", text(&res));
    assert_eq!(
        res.header("hx-redirect"),
        Some(format!("/users/{id}/edit?saved=1").as_str())
    );
    let user = app
        .admin(Method::GET, &path, Some(&root), None)
        .await
        .json();
    assert_eq!(user["data"]["name"], "Ada L.");
    assert_eq!(
        user["data"]["roles"],
        serde_json::json!([]),
        "no role box checked: none"
    );
    let _ = app.sign_in("ada@example.com", PASSWORD).await;
    let _ = ada;

    let res = app.send(htmx_form(Method::DELETE, &path, &root, &[])).await;
    assert_eq!(res.header("hx-redirect"), Some("/users?trashed=only"));
    let page = open(&app, &root, "/users?trashed=only").await;
    assert!(
        page.contains(&format!(r#"action="/users/{id}/restore""#))
            && page.contains("Delete Ada L. for good"),
        "{page}"
    );
    let res = app
        .send(form(&format!("{path}/restore"), Some(&root), &[]))
        .await;
    assert_eq!(res.status, 303);
    assert!(
        open(&app, &root, res.header("location").unwrap())
            .await
            .contains(r#"value="Ada L.""#)
    );
    let res = app.send(htmx_form(Method::DELETE, &path, &root, &[])).await;
    assert_eq!(res.status, 204);
    let res = app
        .send(htmx_form(
            Method::DELETE,
            &format!("{path}/force"),
            &root,
            &[],
        ))
        .await;
    assert_eq!(res.header("hx-redirect"), Some("/users?trashed=only"));
    assert_eq!(
        app.admin(Method::GET, &path, Some(&root), None)
            .await
            .status,
        404
    );
}

#[actix_web::test]
async fn a_group_is_created_with_roles_and_members_edited_and_deleted() {
    let app = TestApp::new(blog()).await;
    let root = app.signed_in("root@example.com", &["super-admin"]).await;
    let list = open(&app, &root, "/groups").await;
    assert!(
        list.contains(r#"href="/groups/create">New group</a>"#),
        "{list}"
    );
    let page = open(&app, &root, "/groups/create").await;
    assert!(
        page.contains(r#"name="user_ids[]""#) && page.contains(r#"name="roles[]" value="editor""#),
        "{page}"
    );

    let page = assert_page(
        &app.send(form(
            "/groups",
            Some(&root),
            &[("name", ""), ("roles[]", "editor")],
        ))
        .await,
        422,
    );
    assert!(
        page.contains(r#"id="g-name-error""#) && page.contains(r#"value="editor" checked"#),
        "{page}"
    );

    let root_id = app
        .admin(Method::GET, "/account", Some(&root), None)
        .await
        .json()["data"]["id"]
        .as_i64()
        .unwrap()
        .to_string();
    let res = app
        .send(form(
            "/groups",
            Some(&root),
            &[
                ("name", "Editors"),
                ("roles[]", "editor"),
                ("user_ids[]", &root_id),
            ],
        ))
        .await;
    assert_eq!(res.status, 303, "{}", text(&res));
    let to = res.header("location").unwrap().to_owned();
    let id = to
        .trim_start_matches("/groups/")
        .split('/')
        .next()
        .unwrap()
        .to_owned();
    let page = open(&app, &root, &to).await;
    assert!(
        page.contains("Saved.") && page.contains(&format!(r#"value="{root_id}" checked"#)),
        "{page}"
    );

    let path = format!("/groups/{id}");
    let res = app
        .send(htmx_form(
            Method::PUT,
            &path,
            &root,
            &[("name", "Writers"), ("roles[]", "reader")],
        ))
        .await;
    assert_eq!(res.status, 204, "{}", text(&res));
    let group = app
        .admin(Method::GET, &path, Some(&root), None)
        .await
        .json();
    assert_eq!(
        (
            group["data"]["name"].as_str(),
            group["data"]["users_count"].as_u64()
        ),
        (Some("Writers"), Some(0))
    );

    let res = app.send(htmx_form(Method::DELETE, &path, &root, &[])).await;
    assert_eq!(res.header("hx-redirect"), Some("/groups?trashed=only"));
    let trash = open(&app, &root, "/groups?trashed=only").await;
    assert!(
        trash.contains(&format!(r#"action="/groups/{id}/restore""#))
            && trash.contains("Delete Writers for good"),
        "{trash}"
    );
    let res = app
        .send(form(&format!("{path}/restore"), Some(&root), &[]))
        .await;
    assert_eq!(res.status, 303);
    assert_eq!(
        res.header("location"),
        Some(format!("/groups/{id}/edit?saved=1").as_str())
    );
}
