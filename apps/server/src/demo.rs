//! The demo project of `vellum-server --demo`: `fixtures/demo.json` plus the sample cover images
//! under `fixtures/images/`, compiled in so the flag works wherever the binary runs.
//!
//! The manifest format has no files section (files are uploaded, not declared), so the images
//! are stored first, into the `covers` folder the manifest also declares (apply matches folders
//! by parent and name), and their ids are written into the seed articles' `cover` before the
//! manifest is applied. `fixtures/demo.json` on its own stays a valid manifest without covers.
//!
//! The demo also has an admin account ([`admin`]): `admin@vellum.test`, super-admin, with a
//! random password printed once, created through the same use case as `vellum-admin users
//! create`.

use bytes::Bytes;
use futures_util::StreamExt as _;
use serde_json::Value;
use vellum_manifest::ApplyReport;
use vellum_storage::blob::BlobStore;
use vellum_storage::files::{Visibility, create_folder};
use vellum_storage::{Database, StorageError};

use crate::ServerError;

/// The demo manifest.
pub const MANIFEST: &str = include_str!("../../../fixtures/demo.json");

/// Sample covers: the seed article (by slug) each belongs to, its title and bytes.
const IMAGES: [(&str, &str, &[u8]); 3] = [
    (
        "analytical-engine",
        "Looms and gears",
        include_bytes!("../../../fixtures/images/analytical-engine.jpg"),
    ),
    (
        "computing-machinery",
        "An imitation game",
        include_bytes!("../../../fixtures/images/computing-machinery.jpg"),
    ),
    (
        "draft",
        "Work in progress",
        include_bytes!("../../../fixtures/images/draft.jpg"),
    ),
];

/// The demo admin's email.
pub const ADMIN_EMAIL: &str = "admin@vellum.test";

/// Creates the demo admin (super-admin, verified, a random password) unless an account with
/// its email exists; answers the password when it created one.
pub async fn admin(db: &Database) -> Result<Option<String>, ServerError> {
    if vellum_storage::accounts::credentials_by_email(db, ADMIN_EMAIL)
        .await?
        .is_some()
    {
        return Ok(None);
    }
    let password = vellum_app::users::generate_password().map_err(ServerError::DemoAdmin)?;
    let hasher =
        vellum_app::identity::password::PasswordHasher::new(1).map_err(ServerError::DemoAdmin)?;
    let body = serde_json::json!({
        "name": "Demo admin",
        "email": ADMIN_EMAIL,
        "password": password,
        "roles": ["super-admin"],
        "email_verified": true,
    });
    vellum_app::users::create_as_operator(db, &hasher, &body)
        .await
        .map_err(ServerError::DemoAdmin)?;
    Ok(Some(password))
}

/// Seeds the demo into a database without collections; `None` when it already has some.
pub async fn seed(
    db: &Database,
    blobs: &dyn BlobStore,
) -> Result<Option<ApplyReport>, ServerError> {
    if !vellum_storage::collections::list_collections(db)
        .await?
        .is_empty()
    {
        return Ok(None);
    }
    let mut manifest: Value = serde_json::from_str(MANIFEST).map_err(ServerError::DemoJson)?;
    // The demo writes as the operator: super-admin's capability, through the same paths as a
    // request's folder and upload.
    let grant = vellum_policy::Role::super_admin()
        .authorize_file_write(vellum_policy::FileAction::Create)
        .map_err(|d| StorageError::conflict(d.to_string()))?;
    let covers = create_folder(db, &grant, None, "covers", Some(Visibility::Public)).await?;
    let mut ids = Vec::new();
    for (slug, title, bytes) in IMAGES {
        let upload = vellum_app::ingest::Upload {
            parent_id: Some(covers.id),
            filename: format!("{slug}.jpg"),
            title: Some(title.to_owned()),
            limit: None,
        };
        let body = futures_util::stream::once(async move { Ok(Bytes::from_static(bytes)) }).boxed();
        let file = vellum_app::ingest::ingest(db, blobs, &grant, upload, body).await?;
        ids.push((slug, file.id));
    }
    if let Some(articles) = manifest
        .pointer_mut("/items/articles")
        .and_then(Value::as_array_mut)
    {
        for article in articles {
            let slug = article.pointer("/data/slug").and_then(Value::as_str);
            let id = ids
                .iter()
                .find(|(s, _)| Some(*s) == slug)
                .map(|(_, id)| *id);
            if let (Some(id), Some(data)) =
                (id, article.get_mut("data").and_then(Value::as_object_mut))
            {
                data.insert("cover".to_owned(), Value::from(id));
            }
        }
    }
    Ok(Some(vellum_manifest::apply(db, &manifest).await?))
}

#[cfg(test)]
mod tests {
    use vellum_storage::blob::ObjectBlobStore;
    use vellum_storage::testing::TestDb;

    use super::*;

    #[tokio::test]
    async fn the_demo_has_covers_in_the_public_covers_folder_and_seeds_once() {
        let db = TestDb::new().await.unwrap();
        vellum_storage::seed::seed_system(&db.conn).await.unwrap();
        let blobs = ObjectBlobStore::in_memory();
        let report = seed(&db.conn, &blobs).await.unwrap().unwrap();
        assert!(report.api_keys.contains_key("demo-editor"));

        let articles = vellum_storage::collections::collection_by_slug(&db.conn, "articles")
            .await
            .unwrap()
            .unwrap();
        let items = vellum_storage::items::all_live_items(&db.conn, &articles)
            .await
            .unwrap();
        let covers: Vec<i64> = items
            .iter()
            .filter_map(|i| i.data.get("cover").and_then(Value::as_i64))
            .collect();
        assert_eq!(covers.len(), IMAGES.len(), "every seed article has a cover");
        let files = vellum_storage::files::get_files(&db.conn, &covers)
            .await
            .unwrap();
        assert_eq!(files.len(), IMAGES.len());
        for file in &files {
            assert_eq!(file.mime_type.as_deref(), Some("image/jpeg"));
            assert!(file.width.is_some() && file.height.is_some());
            assert_eq!(file.effective, Visibility::Public);
            let key = file.storage_key.as_deref().unwrap();
            assert_eq!(
                blobs.head(key).await.unwrap(),
                file.filesize.map(|s| s as u64)
            );
        }
        // The manifest's `covers` folder is the one the images went into: no duplicate.
        let root = vellum_storage::files::list_files(
            &db.conn,
            vellum_storage::files::ListFiles {
                parent: vellum_storage::files::ParentFilter::Root,
                search: None,
                include_private: true,
                page: 1,
                per_page: 100,
            },
        )
        .await
        .unwrap();
        let names: Vec<&str> = root.items.iter().map(|f| f.filename.as_str()).collect();
        assert_eq!(
            names.iter().filter(|n| **n == "covers").count(),
            1,
            "{names:?}"
        );

        assert!(
            seed(&db.conn, &blobs).await.unwrap().is_none(),
            "seeds once"
        );
    }

    #[tokio::test]
    async fn the_demo_admin_is_a_verified_super_admin_created_once() {
        let db = TestDb::new().await.unwrap();
        vellum_storage::seed::seed_system(&db.conn).await.unwrap();
        let password = admin(&db.conn).await.unwrap().unwrap();
        assert_eq!(password.len(), 24);
        let credentials = vellum_storage::accounts::credentials_by_email(&db.conn, ADMIN_EMAIL)
            .await
            .unwrap()
            .unwrap();
        let hasher = vellum_app::identity::password::PasswordHasher::new(1).unwrap();
        assert!(
            hasher
                .verify(&password, credentials.password_hash.as_deref())
                .await
                .unwrap()
        );
        let account = vellum_storage::accounts::account(&db.conn, credentials.user_id)
            .await
            .unwrap()
            .unwrap();
        assert!(account.email_verified_at.is_some());
        assert_eq!(account.roles[0].0, "super-admin");
        assert!(admin(&db.conn).await.unwrap().is_none(), "created once");
    }
}
