//! The web UI's file manager pages (issue 19): the folder page as a grid or a list with
//! thumbnails of public images only, the new folder form, a plain upload form (303 to its
//! folder), the file's page with its metadata form put by htmx (refusals next to their field),
//! replace and restore by form posts, favorites and the trash with htmx, and the empty states.

use actix_web::http::Method;
use serde_json::Value;

use super::Session;
use super::pages::{assert_page, browser, form, htmx_form, open, text};
use crate::support::{BOUNDARY, Part, TestApp, encode, multipart, test_image};

/// A browser's multipart post (the upload and replace forms without script).
async fn post_files(
    app: &TestApp,
    s: &Session,
    path: &str,
    parts: &[Part],
) -> crate::support::Response {
    let req = browser(Method::POST, path, Some(s))
        .insert_header((
            "content-type",
            format!("multipart/form-data; boundary={BOUNDARY}"),
        ))
        .set_payload(multipart(parts));
    app.send(req).await
}

fn png() -> Vec<u8> {
    encode(&test_image(40, 20), image::ImageFormat::Png)
}

#[actix_web::test]
async fn folders_uploads_and_views_of_the_file_manager() {
    let app = TestApp::new(crate::support::blog()).await;
    let root = app.signed_in("root@example.com", &["super-admin"]).await;
    let page = open(&app, &root, "/files").await;
    assert!(
        page.contains("No files yet") && page.contains(r#"action="/files/upload""#),
        "{page}"
    );

    // A new folder, then an upload into it without script: 303 to the folder.
    let res = app
        .send(form(
            "/files/folders",
            Some(&root),
            &[("name", "Photos"), ("parent_id", "")],
        ))
        .await;
    assert_eq!(res.status, 303, "{}", text(&res));
    let folder = res.header("location").unwrap().to_owned();
    let folder_id = folder.trim_start_matches("/files?parent_id=").to_owned();
    let empty = open(&app, &root, &folder).await;
    assert!(
        empty.contains("This folder is empty") && empty.contains("Up one folder"),
        "{empty}"
    );
    let res = post_files(
        &app,
        &root,
        "/files/upload",
        &[
            Part::text("parent_id", &folder_id),
            Part::file("sun.png", "image/png", &png()),
            Part::file("notes.txt", "text/plain", b"hello"),
        ],
    )
    .await;
    assert_eq!(res.status, 303, "{}", text(&res));
    assert_eq!(res.header("location"), Some(folder.as_str()));

    let grid = open(&app, &root, &folder).await;
    assert!(grid.contains("<h1>Photos</h1>"), "{grid}");
    assert!(
        grid.contains(r#"/transforms/thumbnail" alt="""#),
        "a public image has its thumbnail: {grid}"
    );
    assert!(grid.contains(">TXT</span>"), "{grid}");
    let list = open(&app, &root, &format!("{folder}&view=list")).await;
    assert!(
        list.contains("<td>PNG</td>") && list.contains("Show as a grid"),
        "{list}"
    );

    // A name taken among the siblings: the page again with the problem next to the field.
    let res = app
        .send(form(
            "/files/folders",
            Some(&root),
            &[("name", "Photos"), ("parent_id", "")],
        ))
        .await;
    let page = assert_page(&res, 422);
    assert!(page.contains(r#"id="folder-name-error""#), "{page}");
    assert!(page.contains(r#"name="name" value="Photos""#));

    let none = open(&app, &root, "/files?search=nothing-like-this").await;
    assert!(none.contains("No files match"), "{none}");
    let trash = open(&app, &root, "/files?trashed=only").await;
    assert!(trash.contains("The trash is empty"), "{trash}");
}

#[actix_web::test]
async fn a_file_is_described_replaced_favorited_trashed_and_restored() {
    let app = TestApp::new(crate::support::blog()).await;
    let root = app.signed_in("root@example.com", &["super-admin"]).await;
    let res = post_files(
        &app,
        &root,
        "/files/upload",
        &[Part::file("sun.png", "image/png", &png())],
    )
    .await;
    assert_eq!(res.status, 303);
    let listed: Value = app
        .admin(Method::GET, "/files", Some(&root), None)
        .await
        .json();
    let id = listed["data"][0]["id"].as_i64().unwrap();
    let path = format!("/files/{id}");

    let page = open(&app, &root, &path).await;
    for needle in [
        format!(r#"<img src="/files/{id}/download" alt="sun.png""#).as_str(),
        r#"name="focal_point_x""#,
        r#"hx-put="/files/"#,
        "40 × 20 px",
        ">thumbnail</a>",
        "focal.js",
    ] {
        assert!(page.contains(needle), "{needle}: {page}");
    }

    let res = app
        .send(htmx_form(
            Method::PUT,
            &path,
            &root,
            &[
                ("title", "Sunset"),
                ("alt_text", "The sun"),
                ("focal_point_x", "0.25"),
                ("focal_point_y", "0.75"),
            ],
        ))
        .await;
    assert_eq!(res.status, 204, "{}", text(&res));
    assert_eq!(
        res.header("hx-redirect"),
        Some(format!("{path}?saved=1").as_str())
    );
    let stored = app
        .admin(Method::GET, &path, Some(&root), None)
        .await
        .json();
    assert_eq!(stored["data"]["focal_point_x"], 0.25);
    assert_eq!(stored["data"]["title"], "Sunset");
    let page = open(&app, &root, &format!("{path}?saved=1")).await;
    assert!(
        page.contains("Saved.") && page.contains(r#"value="0.75""#),
        "{page}"
    );

    // Out of range: 422, the problem under the field and the values as typed.
    let res = app
        .send(htmx_form(
            Method::PUT,
            &path,
            &root,
            &[("title", "Changed"), ("focal_point_x", "2")],
        ))
        .await;
    let page = assert_page(&res, 422);
    assert!(page.contains(r#"id="m-focal_point_x-error""#), "{page}");
    assert!(page.contains(r#"name="title" value="Changed""#));

    // Replace without script: 303 back, the new bytes (another size) under the same id.
    let bigger = encode(&test_image(64, 32), image::ImageFormat::Png);
    let res = post_files(
        &app,
        &root,
        &format!("{path}/replace"),
        &[Part::file("sun.png", "image/png", &bigger)],
    )
    .await;
    assert_eq!(res.status, 303, "{}", text(&res));
    let page = open(&app, &root, res.header("location").unwrap()).await;
    assert!(
        page.contains("Replaced:") && page.contains("64 × 32 px"),
        "{page}"
    );

    let res = app
        .send(htmx_form(
            Method::POST,
            &format!("{path}/favorite"),
            &root,
            &[],
        ))
        .await;
    assert_eq!(
        (res.status.as_u16(), res.header("hx-refresh")),
        (204, Some("true"))
    );
    assert!(
        open(&app, &root, &path)
            .await
            .contains("Remove from favorites")
    );

    let res = app.send(htmx_form(Method::DELETE, &path, &root, &[])).await;
    assert_eq!(
        (res.status.as_u16(), res.header("hx-redirect")),
        (204, Some("/files"))
    );
    let page = open(&app, &root, &path).await;
    assert!(
        page.contains("in the trash") && page.contains(&format!(r#"action="/files/{id}/restore""#)),
        "{page}"
    );
    let res = app
        .send(form(&format!("{path}/restore"), Some(&root), &[]))
        .await;
    assert_eq!(res.status, 303);
    assert!(
        open(&app, &root, res.header("location").unwrap())
            .await
            .contains("Restored from the trash.")
    );
}
