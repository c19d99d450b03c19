//! The file manager's storage: effective visibility resolved in SQL, listing, search, pagination,
//! soft delete, metadata updates, tree moves and transform records. Runs on SQLite always and on
//! PostgreSQL when `VELLUM_TEST_POSTGRES_URL` is set.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use sea_orm::{ConnectionTrait, Statement, TransactionTrait};
use time::OffsetDateTime;
use vellum_policy::{Authorized, FileAction, FileWrite, Role, effective_visibility};
use vellum_storage::Database;
use vellum_storage::StorageError;
use vellum_storage::blob::{BlobStore, ObjectBlobStore, StagedBlob};
use vellum_storage::files::{
    DerivativeCap, FileKind, FilePage, FilePatch, ListFiles, NewFile, NewTransform, ParentFilter,
    RecordedTransform, StoredFile, StoredTransform, TOUCH_INTERVAL, TransformEntry, Visibility,
    create_file, create_folder, create_uploaded_file, delete_transforms, delete_unused_blob,
    find_transform, get_file, get_files, list_files, list_transforms, record_transform,
    soft_delete_file, touch_transform, update_file,
};
use vellum_storage::testing::TestDb;

use Visibility::{Private, Public};

/// The operator's capability (these tests are about storage; the policy's own are elsewhere).
fn op(action: FileAction) -> Authorized<FileWrite> {
    Role::super_admin().authorize_file_write(action).unwrap()
}

fn new_file(parent_id: Option<i64>, filename: &str) -> NewFile {
    NewFile {
        parent_id,
        filename: filename.to_owned(),
        mime_type: Some("image/png".to_owned()),
        extension: Some("png".to_owned()),
        filesize: Some(5_000_000_000),
        width: Some(640),
        height: Some(480),
        content_hash: Some(format!("hash-{filename}")),
        storage_key: Some(format!("originals/{filename}")),
        title: None,
    }
}

async fn file(db: &Database, parent: Option<i64>, name: &str) -> StoredFile {
    create_file(db, &op(FileAction::Create), new_file(parent, name))
        .await
        .unwrap()
}

async fn folder(
    db: &Database,
    parent: Option<i64>,
    name: &str,
    access: Option<Visibility>,
) -> StoredFile {
    create_folder(db, &op(FileAction::Create), parent, name, access)
        .await
        .unwrap()
}

fn query(parent: ParentFilter) -> ListFiles<'static> {
    ListFiles {
        parent,
        search: None,
        include_private: true,
        page: 1,
        per_page: 100,
    }
}

async fn list(db: &Database, q: ListFiles<'_>) -> FilePage {
    list_files(db, q).await.unwrap()
}

fn names(page: &FilePage) -> Vec<&str> {
    page.items.iter().map(|f| f.filename.as_str()).collect()
}

async fn set_access(db: &Database, id: i64, access: Option<Visibility>) {
    let patch = FilePatch {
        access: Some(access),
        ..FilePatch::default()
    };
    update_file(db, &op(FileAction::Update), id, patch)
        .await
        .unwrap();
}

async fn raw(db: &Database, sql: &str) {
    db.execute_raw(Statement::from_string(db.get_database_backend(), sql))
        .await
        .unwrap();
}

/// The effective visibility of `file_id` as every read path reports it, checked to agree.
async fn effective_everywhere(db: &Database, file_id: i64, parent: i64) -> Option<Visibility> {
    let one = get_file(db, file_id).await.unwrap().unwrap().effective;
    let batch = get_files(db, &[file_id]).await.unwrap();
    assert_eq!(batch.len(), 1);
    assert_eq!(batch[0].effective, one, "get_files disagrees with get_file");
    let listed = list(db, query(ParentFilter::Folder(parent))).await;
    let entry = listed.items.iter().find(|f| f.id == file_id).unwrap();
    assert_eq!(entry.effective, one, "list_files disagrees with get_file");
    let public_only = list(
        db,
        ListFiles {
            include_private: false,
            ..query(ParentFilter::Folder(parent))
        },
    )
    .await;
    let shown = public_only.items.iter().any(|f| f.id == file_id);
    assert_eq!(shown, one == Public, "include_private=false filtering");
    Some(one)
}

#[tokio::test]
async fn visibility_is_inherited_through_three_folder_levels() {
    let db = TestDb::new().await.unwrap();
    let db = &db.conn;
    let root = folder(db, None, "root", Some(Private)).await;
    let child = folder(db, Some(root.id), "child", None).await;
    let grandchild = folder(db, Some(child.id), "grandchild", None).await;
    let f = file(db, Some(grandchild.id), "photo.png").await;
    assert_eq!(f.access, None, "an upload inherits");
    assert_eq!(f.effective, Private, "create returns the resolved value");
    assert_eq!(
        effective_everywhere(db, f.id, grandchild.id).await,
        Some(Private)
    );

    // The nearest set ancestor wins over a farther one.
    set_access(db, child.id, Some(Public)).await;
    assert_eq!(
        effective_everywhere(db, f.id, grandchild.id).await,
        Some(Public)
    );
    let gc = get_file(db, grandchild.id).await.unwrap().unwrap();
    assert_eq!((gc.access, gc.effective), (None, Public));

    // A null chain up to the root is public.
    set_access(db, child.id, None).await;
    set_access(db, root.id, None).await;
    assert_eq!(
        effective_everywhere(db, f.id, grandchild.id).await,
        Some(Public)
    );

    // The file's own value beats every ancestor.
    set_access(db, root.id, Some(Public)).await;
    set_access(db, f.id, Some(Private)).await;
    assert_eq!(
        effective_everywhere(db, f.id, grandchild.id).await,
        Some(Private)
    );
    let stored = get_file(db, f.id).await.unwrap().unwrap();
    assert_eq!(stored.access, Some(Private));
}

/// Every combination of stored values along file -> folder -> parent -> grandparent, resolved
/// in one batched query, agrees with the policy crate's rule.
#[tokio::test]
async fn sql_resolution_agrees_with_the_policy_rule() {
    let db = TestDb::new().await.unwrap();
    let db = &db.conn;
    let values = [None, Some(Public), Some(Private)];
    let mut cases = Vec::new();
    for (i, a) in values.iter().enumerate() {
        for (j, b) in values.iter().enumerate() {
            for (k, c) in values.iter().enumerate() {
                for d in values {
                    let top = folder(db, None, &format!("top-{i}{j}{k}-{d:?}"), *a).await;
                    let mid = folder(db, Some(top.id), "mid", *b).await;
                    let low = folder(db, Some(mid.id), "low", *c).await;
                    let f = file(db, Some(low.id), "f.png").await;
                    set_access(db, f.id, d).await;
                    cases.push((f.id, [d, *c, *b, *a]));
                }
            }
        }
    }
    let ids: Vec<i64> = cases.iter().map(|(id, _)| *id).collect();
    let files = get_files(db, &ids).await.unwrap();
    assert_eq!(files.len(), cases.len());
    for (file, (id, chain)) in files.iter().zip(&cases) {
        assert_eq!(file.id, *id);
        assert_eq!(file.effective, effective_visibility(*chain), "{chain:?}");
    }
    // The list resolves the same way over every folder at once.
    let all = list(
        db,
        ListFiles {
            per_page: 1000,
            ..query(ParentFilter::Any)
        },
    )
    .await;
    assert_eq!(all.total, 4 * 81);
    for (id, chain) in &cases {
        let f = all.items.iter().find(|f| f.id == *id).unwrap();
        assert_eq!(f.effective, effective_visibility(*chain), "{chain:?}");
    }
}

#[tokio::test]
async fn a_cycle_in_the_tree_resolves_private_and_ends() {
    let db = TestDb::new().await.unwrap();
    let db = &db.conn;
    let a = folder(db, None, "a", None).await;
    let b = folder(db, Some(a.id), "b", None).await;
    let f = file(db, Some(b.id), "f.png").await;
    assert_eq!(get_file(db, f.id).await.unwrap().unwrap().effective, Public);
    // Only a bug or a hand edit can do this; the API refuses it (see the move test).
    raw(
        db,
        &format!("UPDATE files SET parent_id = {} WHERE id = {}", b.id, a.id),
    )
    .await;
    assert_eq!(
        get_file(db, f.id).await.unwrap().unwrap().effective,
        Private
    );
    let all = list(db, query(ParentFilter::Any)).await;
    assert!(all.items.iter().all(|f| f.effective == Private));
    soft_delete_file(db, &op(FileAction::Delete), a.id)
        .await
        .unwrap();
    assert!(get_file(db, f.id).await.unwrap().is_none());
}

#[tokio::test]
async fn get_files_batches_and_skips_what_is_not_live() {
    let db = TestDb::new().await.unwrap();
    let db = &db.conn;
    assert!(get_files(db, &[]).await.unwrap().is_empty());
    let a = file(db, None, "a.png").await;
    let b = file(db, None, "b.png").await;
    let gone = file(db, None, "gone.png").await;
    soft_delete_file(db, &op(FileAction::Delete), gone.id)
        .await
        .unwrap();
    let got = get_files(db, &[b.id, 999_999, a.id, gone.id, b.id, i64::MAX])
        .await
        .unwrap();
    let ids: Vec<i64> = got.iter().map(|f| f.id).collect();
    assert_eq!(ids, vec![a.id, b.id]);
    assert_eq!(got[0], a, "the batch reads what create returned");
    assert!(get_file(db, i64::MAX).await.unwrap().is_none());
    assert!(get_file(db, -1).await.unwrap().is_none());
}

#[tokio::test]
async fn created_rows_read_back_unchanged() {
    let db = TestDb::new().await.unwrap();
    let db = &db.conn;
    let dir = folder(db, None, "Images", Some(Public)).await;
    assert_eq!(dir.kind, FileKind::Folder);
    assert_eq!((dir.access, dir.effective), (Some(Public), Public));
    assert!(dir.storage_key.is_none() && dir.mime_type.is_none());
    let mut new = new_file(Some(dir.id), "cat.png");
    new.title = Some("A cat".to_owned());
    let f = create_file(db, &op(FileAction::Create), new).await.unwrap();
    assert_eq!(f.kind, FileKind::File);
    assert_eq!(f.parent_id, Some(dir.id));
    assert_eq!(f.title.as_deref(), Some("A cat"));
    assert_eq!(f.filesize, Some(5_000_000_000), "filesize is 64-bit");
    assert_eq!((f.width, f.height), (Some(640), Some(480)));
    assert_eq!(f.storage_key.as_deref(), Some("originals/cat.png"));
    assert!(f.created_at.is_some() && f.deleted_at.is_none());
    assert_eq!(f.created_at, f.updated_at);
    assert_eq!(get_file(db, f.id).await.unwrap().unwrap(), f);
}

#[tokio::test]
async fn lists_by_parent_with_folders_first_then_by_name() {
    let db = TestDb::new().await.unwrap();
    let db = &db.conn;
    let docs = folder(db, None, "docs", None).await;
    folder(db, None, "Archive", None).await;
    file(db, None, "zebra.png").await;
    file(db, None, "Apple.png").await;
    file(db, None, "banana.png").await;
    file(db, None, "Cherry.png").await;
    file(db, Some(docs.id), "inner.png").await;
    let nested = folder(db, Some(docs.id), "nested", None).await;
    file(db, Some(nested.id), "deep.png").await;

    let root = list(db, query(ParentFilter::Root)).await;
    // Case-insensitive: byte order would put "Cherry.png" before "banana.png".
    assert_eq!(
        names(&root),
        [
            "Archive",
            "docs",
            "Apple.png",
            "banana.png",
            "Cherry.png",
            "zebra.png"
        ]
    );
    assert_eq!(root.total, 6);
    let in_docs = list(db, query(ParentFilter::Folder(docs.id))).await;
    assert_eq!(
        names(&in_docs),
        ["nested", "inner.png"],
        "direct children only"
    );
    let everywhere = list(db, query(ParentFilter::Any)).await;
    assert_eq!(everywhere.total, 9);
    assert_eq!(
        list(db, query(ParentFilter::Folder(987_654))).await.total,
        0
    );
    assert_eq!(
        list(db, query(ParentFilter::Folder(i64::MAX))).await.total,
        0
    );

    // Equal names keep a stable order by id.
    let twin_a = file(db, Some(nested.id), "twin.png").await;
    let twin_b = file(db, Some(nested.id), "twin.png").await;
    let in_nested = list(db, query(ParentFilter::Folder(nested.id))).await;
    let ids: Vec<i64> = in_nested.items.iter().map(|f| f.id).collect();
    assert!(ids.ends_with(&[twin_a.id, twin_b.id]), "{ids:?}");
}

#[tokio::test]
async fn search_matches_filename_or_title_literally_and_case_insensitively() {
    let db = TestDb::new().await.unwrap();
    let db = &db.conn;
    let dir = folder(db, None, "dir", None).await;
    file(db, None, "Report.PDF").await;
    let mut titled = new_file(Some(dir.id), "img_001.jpg");
    titled.title = Some("Summer BEACH".to_owned());
    create_file(db, &op(FileAction::Create), titled)
        .await
        .unwrap();
    file(db, None, "100%_done.txt").await;
    file(db, None, "100x done.txt").await;
    file(db, None, "1000 done.txt").await;
    file(db, None, "back\\slash.txt").await;
    file(db, None, "backslash.txt").await;

    let search = |term: &'static str, parent| ListFiles {
        search: Some(term),
        ..query(parent)
    };
    let found = |page: FilePage| {
        let mut names: Vec<String> = page.items.into_iter().map(|f| f.filename).collect();
        names.sort();
        names
    };
    assert_eq!(
        found(list(db, search("report", ParentFilter::Any)).await),
        ["Report.PDF"]
    );
    assert_eq!(
        found(list(db, search("PORT.p", ParentFilter::Any)).await),
        ["Report.PDF"]
    );
    assert_eq!(
        found(list(db, search("beach", ParentFilter::Any)).await),
        ["img_001.jpg"],
        "the title matches too"
    );
    assert_eq!(
        found(list(db, search("beach", ParentFilter::Root)).await),
        Vec::<String>::new(),
        "search stays within the parent filter"
    );
    assert_eq!(
        found(list(db, search("beach", ParentFilter::Folder(dir.id))).await),
        ["img_001.jpg"]
    );
    assert_eq!(
        found(list(db, search("%", ParentFilter::Any)).await),
        ["100%_done.txt"],
        "% is literal"
    );
    assert_eq!(
        found(list(db, search("0_", ParentFilter::Any)).await),
        Vec::<String>::new(),
        "_ is literal"
    );
    assert_eq!(
        found(list(db, search("_", ParentFilter::Any)).await),
        ["100%_done.txt", "img_001.jpg"]
    );
    assert_eq!(
        found(list(db, search("\\", ParentFilter::Any)).await),
        ["back\\slash.txt"],
        "a backslash is literal"
    );
    let page = list(db, search("done", ParentFilter::Any)).await;
    assert_eq!(page.total, 3);
}

#[tokio::test]
async fn without_read_private_private_entries_leave_items_and_total() {
    let db = TestDb::new().await.unwrap();
    let db = &db.conn;
    let secret = folder(db, None, "secret", Some(Private)).await;
    let open = folder(db, None, "open", None).await;
    file(db, Some(secret.id), "hidden.png").await;
    file(db, Some(open.id), "shown.png").await;
    let own_private = file(db, Some(open.id), "own-private.png").await;
    set_access(db, own_private.id, Some(Private)).await;

    let all = list(db, query(ParentFilter::Any)).await;
    assert_eq!(all.total, 5);
    let public = list(
        db,
        ListFiles {
            include_private: false,
            ..query(ParentFilter::Any)
        },
    )
    .await;
    assert_eq!(names(&public), ["open", "shown.png"]);
    assert_eq!(public.total, 2);
    assert_eq!(public.last_page, 1);
    let searched = list(
        db,
        ListFiles {
            include_private: false,
            search: Some("png"),
            per_page: 1,
            ..query(ParentFilter::Any)
        },
    )
    .await;
    assert_eq!((searched.total, searched.last_page), (1, 1));
    assert_eq!(names(&searched), ["shown.png"]);
}

#[tokio::test]
async fn pagination_edges() {
    let db = TestDb::new().await.unwrap();
    let db = &db.conn;
    for name in ["a", "b", "c", "d", "e"] {
        file(db, None, name).await;
    }
    let page = |page, per_page| ListFiles {
        page,
        per_page,
        ..query(ParentFilter::Root)
    };
    let first = list(db, page(1, 2)).await;
    assert_eq!(names(&first), ["a", "b"]);
    assert_eq!(
        (
            first.total,
            first.current_page,
            first.per_page,
            first.last_page
        ),
        (5, 1, 2, 3)
    );
    let last = list(db, page(3, 2)).await;
    assert_eq!(names(&last), ["e"]);
    let beyond = list(db, page(4, 2)).await;
    assert!(beyond.items.is_empty());
    assert_eq!(
        (beyond.total, beyond.current_page, beyond.last_page),
        (5, 4, 3)
    );
    let far = list(db, page(u64::MAX, 100)).await;
    assert!(far.items.is_empty());
    assert_eq!(far.total, 5);

    let mut walked = Vec::new();
    for n in 1..=5 {
        let one = list(db, page(n, 1)).await;
        assert_eq!((one.items.len(), one.total, one.last_page), (1, 5, 5));
        walked.push(one.items[0].filename.clone());
    }
    assert_eq!(
        walked,
        ["a", "b", "c", "d", "e"],
        "pages neither skip nor repeat"
    );

    let zero = list(db, page(0, 0)).await;
    assert_eq!(
        (zero.current_page, zero.per_page, zero.last_page),
        (1, 1, 5)
    );
    assert_eq!(names(&zero), ["a"]);

    let empty = list(db, query(ParentFilter::Folder(424_242))).await;
    assert!(empty.items.is_empty());
    assert_eq!((empty.total, empty.last_page), (0, 1));
}

#[tokio::test]
async fn soft_delete_hides_the_row_and_a_folders_descendants() {
    let db = TestDb::new().await.unwrap();
    let db = &db.conn;
    let top = folder(db, None, "top", None).await;
    let sub = folder(db, Some(top.id), "sub", None).await;
    let deep = folder(db, Some(sub.id), "deep", None).await;
    let in_top = file(db, Some(top.id), "in-top.png").await;
    let in_deep = file(db, Some(deep.id), "in-deep.png").await;
    let outside = file(db, None, "outside.png").await;
    let single = file(db, None, "single.png").await;

    soft_delete_file(db, &op(FileAction::Delete), single.id)
        .await
        .unwrap();
    assert!(get_file(db, single.id).await.unwrap().is_none());
    assert!(matches!(
        soft_delete_file(db, &op(FileAction::Delete), single.id).await,
        Err(StorageError::NotFound { .. })
    ));

    soft_delete_file(db, &op(FileAction::Delete), top.id)
        .await
        .unwrap();
    for id in [top.id, sub.id, deep.id, in_top.id, in_deep.id] {
        assert!(get_file(db, id).await.unwrap().is_none(), "{id} is live");
    }
    let left = list(db, query(ParentFilter::Any)).await;
    assert_eq!(names(&left), ["outside.png"]);
    assert_eq!(left.total, 1);
    assert!(get_file(db, outside.id).await.unwrap().is_some());
    assert!(
        get_files(db, &[sub.id, in_deep.id])
            .await
            .unwrap()
            .is_empty()
    );

    assert!(matches!(
        soft_delete_file(db, &op(FileAction::Delete), top.id).await,
        Err(StorageError::NotFound { .. })
    ));
    assert!(matches!(
        soft_delete_file(db, &op(FileAction::Delete), 999_999).await,
        Err(StorageError::NotFound { .. })
    ));
    assert!(matches!(
        soft_delete_file(db, &op(FileAction::Delete), i64::MAX).await,
        Err(StorageError::NotFound { .. })
    ));
    // Nothing can be added to, or moved into, what is gone.
    assert!(matches!(
        create_file(
            db,
            &op(FileAction::Create),
            new_file(Some(sub.id), "late.png")
        )
        .await,
        Err(StorageError::Conflict { .. })
    ));
    assert!(matches!(
        create_folder(db, &op(FileAction::Create), Some(top.id), "late", None).await,
        Err(StorageError::Conflict { .. })
    ));
    let into_deleted = FilePatch {
        parent_id: Some(Some(top.id)),
        ..FilePatch::default()
    };
    assert!(matches!(
        update_file(db, &op(FileAction::Update), outside.id, into_deleted).await,
        Err(StorageError::Conflict { .. })
    ));
    assert!(matches!(
        update_file(db, &op(FileAction::Update), in_top.id, FilePatch::default()).await,
        Err(StorageError::NotFound { .. })
    ));
}

/// A2: an update or delete by a role without `read_private` reaches only what its show reaches:
/// an effective-private file (own `access` or inherited) is refused with `PrivateFile` and left
/// as it was.
#[tokio::test]
async fn writes_without_read_private_do_not_reach_private_files() {
    let db = TestDb::new().await.unwrap();
    let db = &db.conn;
    let private = folder(db, None, "private", Some(Private)).await;
    let inherited = file(db, Some(private.id), "inherited.png").await;
    let public = file(db, None, "public.png").await;
    let writer = Role::from_json(
        "writer",
        &serde_json::json!({"file_permissions": {"create": true, "update": true, "delete": true}}),
    )
    .unwrap();
    let cap = |action| writer.authorize_file_write(action).unwrap();
    let title = || FilePatch {
        title: Some(Some("changed".to_owned())),
        ..FilePatch::default()
    };

    for id in [private.id, inherited.id] {
        assert!(matches!(
            update_file(db, &cap(FileAction::Update), id, title()).await,
            Err(StorageError::PrivateFile)
        ));
        assert!(matches!(
            soft_delete_file(db, &cap(FileAction::Delete), id).await,
            Err(StorageError::PrivateFile)
        ));
        let kept = get_file(db, id).await.unwrap().expect("still live");
        assert_eq!(kept.title, None, "{id} was written");
    }
    // Dropping a file into a private folder is allowed: it reads nothing.
    let dropped = create_file(
        db,
        &cap(FileAction::Create),
        new_file(Some(private.id), "drop.png"),
    )
    .await
    .unwrap();
    assert_eq!(dropped.effective, Private);
    // Public files stay writable; a capability for another action is refused.
    let changed = update_file(db, &cap(FileAction::Update), public.id, title())
        .await
        .unwrap();
    assert_eq!(changed.title.as_deref(), Some("changed"));
    assert!(matches!(
        update_file(db, &cap(FileAction::Delete), public.id, title()).await,
        Err(StorageError::Conflict { .. })
    ));
    // A folder is a file write like any other: it takes the files `create` capability.
    assert!(matches!(
        create_folder(db, &cap(FileAction::Update), None, "sneaky", None).await,
        Err(StorageError::Conflict { .. })
    ));
    create_folder(db, &cap(FileAction::Create), None, "made", None)
        .await
        .unwrap();
    soft_delete_file(db, &cap(FileAction::Delete), public.id)
        .await
        .unwrap();
    // The operator reaches everything.
    update_file(db, &op(FileAction::Update), inherited.id, title())
        .await
        .unwrap();
}

#[tokio::test]
async fn update_changes_only_the_given_keys() {
    let db = TestDb::new().await.unwrap();
    let db = &db.conn;
    let dir = folder(db, None, "dir", Some(Private)).await;
    let mut new = new_file(None, "orig.png");
    new.title = Some("Original title".to_owned());
    let before = create_file(db, &op(FileAction::Create), new).await.unwrap();

    let after = update_file(
        db,
        &op(FileAction::Update),
        before.id,
        FilePatch {
            description: Some(Some("A description".to_owned())),
            focal_point_x: Some(Some(0.25)),
            ..FilePatch::default()
        },
    )
    .await
    .unwrap();
    assert_eq!(after.description.as_deref(), Some("A description"));
    assert_eq!(after.focal_point_x, Some(0.25));
    assert_eq!(after.focal_point_y, None);
    assert_eq!(after.title.as_deref(), Some("Original title"));
    assert!(after.updated_at >= before.updated_at);
    assert_eq!(after.created_at, before.created_at);
    let unchanged = StoredFile {
        description: before.description.clone(),
        focal_point_x: before.focal_point_x,
        updated_at: before.updated_at,
        ..after.clone()
    };
    assert_eq!(unchanged, before, "no other column moved");
    assert_eq!(get_file(db, before.id).await.unwrap().unwrap(), after);

    let cleared = update_file(
        db,
        &op(FileAction::Update),
        before.id,
        FilePatch {
            title: Some(None),
            location: Some(Some("Lisbon".to_owned())),
            download_name: Some(Some("photo.png".to_owned())),
            focal_point_y: Some(Some(1.0)),
            filename: Some("renamed.png".to_owned()),
            ..FilePatch::default()
        },
    )
    .await
    .unwrap();
    assert_eq!(cleared.title, None);
    assert_eq!(cleared.description.as_deref(), Some("A description"));
    assert_eq!(cleared.location.as_deref(), Some("Lisbon"));
    assert_eq!(cleared.download_name.as_deref(), Some("photo.png"));
    assert_eq!(
        (cleared.focal_point_x, cleared.focal_point_y),
        (Some(0.25), Some(1.0))
    );
    assert_eq!(cleared.filename, "renamed.png");

    let moved = update_file(
        db,
        &op(FileAction::Update),
        before.id,
        FilePatch {
            parent_id: Some(Some(dir.id)),
            ..FilePatch::default()
        },
    )
    .await
    .unwrap();
    assert_eq!((moved.parent_id, moved.effective), (Some(dir.id), Private));
    let back = update_file(
        db,
        &op(FileAction::Update),
        before.id,
        FilePatch {
            parent_id: Some(None),
            ..FilePatch::default()
        },
    )
    .await
    .unwrap();
    assert_eq!((back.parent_id, back.effective), (None, Public));

    for bad in [Some(1.5), Some(-0.1), Some(f64::NAN)] {
        let err = update_file(
            db,
            &op(FileAction::Update),
            before.id,
            FilePatch {
                focal_point_x: Some(bad),
                title: Some(Some("must not be written".to_owned())),
                ..FilePatch::default()
            },
        )
        .await
        .unwrap_err();
        assert!(matches!(err, StorageError::Conflict { .. }), "{err:?}");
    }
    let empty_name = FilePatch {
        filename: Some("  ".to_owned()),
        ..FilePatch::default()
    };
    assert!(matches!(
        update_file(db, &op(FileAction::Update), before.id, empty_name).await,
        Err(StorageError::Conflict { .. })
    ));
    assert_eq!(get_file(db, before.id).await.unwrap().unwrap(), back);
    assert!(matches!(
        update_file(db, &op(FileAction::Update), 999_999, FilePatch::default()).await,
        Err(StorageError::NotFound { .. })
    ));
}

#[tokio::test]
async fn a_folder_cannot_move_into_itself_or_below() {
    let db = TestDb::new().await.unwrap();
    let db = &db.conn;
    let a = folder(db, None, "a", None).await;
    let b = folder(db, Some(a.id), "b", None).await;
    let c = folder(db, Some(b.id), "c", None).await;
    let f = file(db, Some(c.id), "f.png").await;
    for target in [a.id, b.id, c.id] {
        let patch = FilePatch {
            parent_id: Some(Some(target)),
            ..FilePatch::default()
        };
        let err = update_file(db, &op(FileAction::Update), a.id, patch)
            .await
            .unwrap_err();
        assert!(
            matches!(err, StorageError::Conflict { .. }),
            "{target}: {err:?}"
        );
    }
    assert_eq!(get_file(db, a.id).await.unwrap().unwrap().parent_id, None);

    let under_file = FilePatch {
        parent_id: Some(Some(f.id)),
        ..FilePatch::default()
    };
    assert!(matches!(
        update_file(db, &op(FileAction::Update), c.id, under_file).await,
        Err(StorageError::Conflict { .. })
    ));
    let under_missing = FilePatch {
        parent_id: Some(Some(999_999)),
        ..FilePatch::default()
    };
    assert!(matches!(
        update_file(db, &op(FileAction::Update), c.id, under_missing).await,
        Err(StorageError::Conflict { .. })
    ));

    // Moving a deeper folder up (or a sibling across) is fine.
    let to_root = FilePatch {
        parent_id: Some(None),
        ..FilePatch::default()
    };
    let c = update_file(db, &op(FileAction::Update), c.id, to_root)
        .await
        .unwrap();
    assert_eq!(c.parent_id, None);
    let a_under_c = FilePatch {
        parent_id: Some(Some(c.id)),
        ..FilePatch::default()
    };
    assert_eq!(
        update_file(db, &op(FileAction::Update), a.id, a_under_c)
            .await
            .unwrap()
            .parent_id,
        Some(c.id)
    );
}

#[tokio::test]
async fn folder_names_are_unique_per_parent_among_live_folders() {
    let db = TestDb::new().await.unwrap();
    let db = &db.conn;
    let first = folder(db, None, "photos", None).await;
    assert!(matches!(
        create_folder(db, &op(FileAction::Create), None, "photos", Some(Public)).await,
        Err(StorageError::Conflict { .. })
    ));
    let other = folder(db, None, "other", None).await;
    let nested = folder(db, Some(other.id), "photos", None).await;
    // A file may share a folder's name, and files may share names.
    file(db, None, "photos").await;
    file(db, None, "photos").await;
    // Case matters, as it does for every name.
    folder(db, None, "Photos", None).await;

    let rename = FilePatch {
        filename: Some("photos".to_owned()),
        ..FilePatch::default()
    };
    assert!(matches!(
        update_file(db, &op(FileAction::Update), other.id, rename).await,
        Err(StorageError::Conflict { .. })
    ));
    let move_up = FilePatch {
        parent_id: Some(None),
        ..FilePatch::default()
    };
    assert!(matches!(
        update_file(db, &op(FileAction::Update), nested.id, move_up).await,
        Err(StorageError::Conflict { .. })
    ));
    // Renaming to its own name or patching other keys is not a clash with itself.
    let same = FilePatch {
        filename: Some("photos".to_owned()),
        title: Some(Some("Photos".to_owned())),
        ..FilePatch::default()
    };
    assert_eq!(
        update_file(db, &op(FileAction::Update), first.id, same)
            .await
            .unwrap()
            .title
            .as_deref(),
        Some("Photos")
    );

    soft_delete_file(db, &op(FileAction::Delete), first.id)
        .await
        .unwrap();
    let again = folder(db, None, "photos", None).await;
    assert_ne!(again.id, first.id);

    let parent_is_file = file(db, None, "plain.png").await;
    assert!(matches!(
        create_folder(
            db,
            &op(FileAction::Create),
            Some(parent_is_file.id),
            "x",
            None
        )
        .await,
        Err(StorageError::Conflict { .. })
    ));
    assert!(matches!(
        create_file(
            db,
            &op(FileAction::Create),
            new_file(Some(parent_is_file.id), "x.png")
        )
        .await,
        Err(StorageError::Conflict { .. })
    ));
    assert!(matches!(
        create_folder(db, &op(FileAction::Create), Some(i64::MAX), "x", None).await,
        Err(StorageError::Conflict { .. })
    ));
    assert!(matches!(
        create_folder(db, &op(FileAction::Create), None, "", None).await,
        Err(StorageError::Conflict { .. })
    ));
}

#[tokio::test]
async fn saving_a_transform_twice_keeps_the_first_record() {
    // No cap worth the name: this is about racing saves, not eviction.
    async fn save<C: ConnectionTrait + TransactionTrait>(
        db: &C,
        new: &NewTransform<'_>,
    ) -> StoredTransform {
        record_transform(db, new, u64::MAX, OffsetDateTime::now_utc())
            .await
            .unwrap()
            .transform
    }
    // What identifies a record (`last_used_at` moves when a save touches it).
    fn id(t: &StoredTransform) -> (String, Option<i64>, Option<i32>, Option<i32>) {
        (t.storage_key.clone(), t.filesize, t.width, t.height)
    }

    let db = TestDb::new().await.unwrap();
    let db = &db.conn;
    let f = file(db, None, "big.png").await;
    assert_eq!(find_transform(db, "h1", "thumbnail").await.unwrap(), None);
    let first = NewTransform {
        file_id: f.id,
        content_hash: "h1",
        key: "thumbnail",
        storage_key: "derived/1/h1/thumbnail",
        mime_type: "image/png",
        filesize: Some(1234),
        width: Some(200),
        height: Some(200),
    };
    let saved = save(db, &first).await;
    assert_eq!(saved.storage_key, "derived/1/h1/thumbnail");
    assert_eq!(
        (saved.filesize, saved.width, saved.height),
        (Some(1234), Some(200), Some(200))
    );

    let racer = NewTransform {
        storage_key: "derived/1/h1/thumbnail-again",
        filesize: Some(99),
        ..first.clone()
    };
    assert_eq!(id(&save(db, &racer).await), id(&saved));
    assert_eq!(
        find_transform(db, "h1", "thumbnail")
            .await
            .unwrap()
            .map(|t| id(&t)),
        Some(id(&saved))
    );

    // Another key, or other content, is another record.
    let small = NewTransform {
        key: "small",
        storage_key: "derived/1/h1/small",
        ..first.clone()
    };
    assert_eq!(save(db, &small).await.storage_key, "derived/1/h1/small");
    assert_eq!(find_transform(db, "h2", "thumbnail").await.unwrap(), None);

    // Inside a transaction the same call works, and the conflict does not break it.

    let txn = db.begin().await.unwrap();
    assert_eq!(id(&save(&txn, &racer).await), id(&saved));
    assert_eq!(save(&txn, &small).await.storage_key, "derived/1/h1/small");
    txn.commit().await.unwrap();
}

#[tokio::test]
async fn writes_join_an_enclosing_transaction() {
    let db = TestDb::new().await.unwrap();
    let db = &db.conn;
    let txn = db.begin().await.unwrap();
    let dir = create_folder(&txn, &op(FileAction::Create), None, "dir", None)
        .await
        .unwrap();
    create_file(
        &txn,
        &op(FileAction::Create),
        new_file(Some(dir.id), "a.png"),
    )
    .await
    .unwrap();
    assert_eq!(
        list_files(&txn, query(ParentFilter::Any))
            .await
            .unwrap()
            .total,
        2
    );
    txn.rollback().await.unwrap();
    assert_eq!(list(db, query(ParentFilter::Any)).await.total, 0);
}

/// Concurrent creators of one folder name: exactly one wins, the others get a Conflict (not a
/// database error, and never a duplicate).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_folder_creation_keeps_names_unique() {
    let db = TestDb::new().await.unwrap();
    let mut tasks = Vec::new();
    for _ in 0..32 {
        let conn = db.conn.clone();
        tasks.push(tokio::spawn(async move {
            create_folder(&conn, &op(FileAction::Create), None, "race", None).await
        }));
    }
    let mut won = 0;
    for task in tasks {
        match task.await.unwrap() {
            Ok(_) => won += 1,
            Err(StorageError::Conflict { .. }) => {}
            Err(other) => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(won, 1);
    assert_eq!(list(&db.conn, query(ParentFilter::Root)).await.total, 1);
}

/// The same race on a SQLite pool with several connections (the default pool has one, which
/// hides the problem): writers must queue, not fail with SQLITE_BUSY.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_tree_writes_queue_on_a_multi_connection_sqlite_pool() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}?mode=rwc", dir.path().join("pool.db").display());
    let mut options = sea_orm::ConnectOptions::new(url);
    options.max_connections(8).min_connections(8);
    let conn = Database::from_sea_orm(sea_orm::Database::connect(options).await.unwrap());
    vellum_storage::migrate(&conn).await.unwrap();
    let parent = folder(&conn, None, "parent", None).await;
    let mut tasks = Vec::new();
    for i in 0..32 {
        let conn = conn.clone();
        tasks.push(tokio::spawn(async move {
            if i % 2 == 0 {
                create_folder(
                    &conn,
                    &op(FileAction::Create),
                    Some(parent.id),
                    "race",
                    None,
                )
                .await
                .map(|_| true)
            } else {
                create_file(
                    &conn,
                    &op(FileAction::Create),
                    new_file(Some(parent.id), "f.png"),
                )
                .await
                .map(|_| false)
            }
        }));
    }
    let mut folders = 0;
    for task in tasks {
        match task.await.unwrap() {
            Ok(true) => folders += 1,
            Ok(false) | Err(StorageError::Conflict { .. }) => {}
            Err(other) => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(folders, 1);
    let listed = list(&conn, query(ParentFilter::Folder(parent.id))).await;
    assert_eq!(listed.total, 17);
}

// ---------------------------------------------------------------------------------------------
// Derivatives under a byte cap (issue 27): least-recently-used eviction, touches, concurrency.

/// A fixed clock: minute `n` after an arbitrary instant, so eviction order is exact.
fn minute(n: i64) -> OffsetDateTime {
    OffsetDateTime::from_unix_timestamp(1_800_000_000).unwrap() + time::Duration::minutes(n)
}

fn derived_key(hash: &str, key: &str) -> String {
    format!("derived/{hash}/{key}")
}

/// Records output `key` of `hash` (blob `derived/<hash>/<key>`) of `size` bytes under `cap`.
async fn record<C: ConnectionTrait + TransactionTrait>(
    db: &C,
    file_id: i64,
    hash: &str,
    key: &str,
    size: i64,
    cap: u64,
    at: OffsetDateTime,
) -> RecordedTransform {
    let storage_key = derived_key(hash, key);
    record_transform(
        db,
        &NewTransform {
            file_id,
            content_hash: hash,
            key,
            storage_key: &storage_key,
            mime_type: "image/webp",
            filesize: Some(size),
            width: Some(10),
            height: Some(10),
        },
        cap,
        at,
    )
    .await
    .unwrap()
}

/// The keys of `hash`'s derivatives, least recently used first, and their summed size.
async fn derivatives<C: ConnectionTrait>(db: &C, hash: &str) -> (Vec<String>, u64) {
    let entries = list_transforms(db, hash).await.unwrap();
    let total = entries
        .iter()
        .map(|e| u64::try_from(e.filesize.unwrap()).unwrap())
        .sum();
    (entries.into_iter().map(|e| e.key).collect(), total)
}

#[tokio::test]
async fn transforms_over_the_cap_evict_the_least_recently_used() {
    let db = TestDb::new().await.unwrap();
    let db = &db.conn;
    let f = file(db, None, "cap.png").await;
    for (i, key) in ["a", "b", "c"].into_iter().enumerate() {
        let saved = record(db, f.id, "h", key, 100, 300, minute(i as i64)).await;
        assert!(saved.evicted.is_empty(), "{key}: at the cap, not over it");
        assert_eq!(saved.transform.last_used_at, minute(i as i64));
        assert_eq!(saved.transform.storage_key, derived_key("h", key));
    }
    assert_eq!(derivatives(db, "h").await, (strings(&["a", "b", "c"]), 300));

    // One more: the least recently used goes, its blob key is handed back.
    let saved = record(db, f.id, "h", "d", 100, 300, minute(3)).await;
    assert_eq!(saved.evicted, [derived_key("h", "a")]);
    assert_eq!(find_transform(db, "h", "a").await.unwrap(), None);

    // A touched output is used again: the next eviction passes it over.
    assert!(touch_transform(db, "h", "b", minute(4)).await.unwrap());
    let saved = record(db, f.id, "h", "e", 100, 300, minute(5)).await;
    assert_eq!(saved.evicted, [derived_key("h", "c")]);
    assert_eq!(derivatives(db, "h").await, (strings(&["d", "b", "e"]), 300));

    // A larger output evicts as many as it needs, oldest first.
    let saved = record(db, f.id, "h", "f", 200, 300, minute(6)).await;
    assert_eq!(
        saved.evicted,
        [derived_key("h", "d"), derived_key("h", "b")]
    );
    assert_eq!(derivatives(db, "h").await, (strings(&["e", "f"]), 300));

    // Other content is untouched by all of it.
    record(db, f.id, "other", "a", 1000, 5000, minute(0)).await;
    let saved = record(db, f.id, "h", "g", 300, 300, minute(7)).await;
    assert_eq!(
        saved.evicted,
        [derived_key("h", "e"), derived_key("h", "f")]
    );
    assert_eq!(derivatives(db, "other").await, (strings(&["a"]), 1000));
}

fn strings(keys: &[&str]) -> Vec<String> {
    keys.iter().map(|k| (*k).to_owned()).collect()
}

#[tokio::test]
async fn the_cap_holds_after_many_saves_and_every_row_is_kept_or_evicted_once() {
    let db = TestDb::new().await.unwrap();
    let db = &db.conn;
    let f = file(db, None, "many.png").await;
    let cap = 1_000;
    let mut evicted = Vec::new();
    let mut saved_keys = Vec::new();
    for i in 0..120_i64 {
        let key = format!("size-{i}");
        let size = (i * 37) % 150 + 1;
        let saved = record(db, f.id, "h", &key, size, cap, minute(i)).await;
        evicted.extend(saved.evicted);
        saved_keys.push(derived_key("h", &key));
        let (keys, total) = derivatives(db, "h").await;
        assert!(total <= cap, "after {key}: {total} bytes");
        assert_eq!(keys.last(), Some(&key), "the output just saved is kept");
    }
    let (kept, _) = derivatives(db, "h").await;
    let mut all: Vec<String> = kept.iter().map(|k| derived_key("h", k)).collect();
    all.extend(evicted);
    all.sort();
    saved_keys.sort();
    assert_eq!(
        all, saved_keys,
        "each output is kept or evicted, exactly once"
    );
}

#[tokio::test]
async fn the_output_just_saved_is_never_evicted_even_over_the_cap() {
    let db = TestDb::new().await.unwrap();
    let db = &db.conn;
    let f = file(db, None, "big.png").await;
    record(db, f.id, "h", "a", 100, 300, minute(0)).await;
    record(db, f.id, "h", "b", 100, 300, minute(1)).await;
    // Larger than the cap by itself: everything else goes, it stays.
    let saved = record(db, f.id, "h", "huge", 500, 300, minute(2)).await;
    assert_eq!(
        saved.evicted,
        [derived_key("h", "a"), derived_key("h", "b")]
    );
    assert_eq!(derivatives(db, "h").await, (strings(&["huge"]), 500));
    // The next save evicts it: the total is over the cap by one output at most.
    let saved = record(db, f.id, "h", "c", 100, 300, minute(3)).await;
    assert_eq!(saved.evicted, [derived_key("h", "huge")]);
    assert_eq!(derivatives(db, "h").await, (strings(&["c"]), 100));
}

#[tokio::test]
async fn recording_the_same_key_again_keeps_the_first_record_and_touches_it() {
    let db = TestDb::new().await.unwrap();
    let db = &db.conn;
    let f = file(db, None, "again.png").await;
    let first = record(db, f.id, "h", "a", 100, 300, minute(0)).await;
    record(db, f.id, "h", "b", 100, 300, minute(1)).await;
    let racer = NewTransform {
        file_id: f.id,
        content_hash: "h",
        key: "a",
        storage_key: "derived/h/a-again",
        mime_type: "image/png",
        filesize: Some(999),
        width: None,
        height: None,
    };
    let again = record_transform(db, &racer, 300, minute(2)).await.unwrap();
    assert!(again.evicted.is_empty(), "{again:?}");
    assert_eq!(
        again.transform,
        StoredTransform {
            last_used_at: minute(2),
            ..first.transform
        }
    );
    assert_eq!(derivatives(db, "h").await, (strings(&["b", "a"]), 200));
    // An older clock never moves it back.
    let late = record_transform(db, &racer, 300, minute(1)).await.unwrap();
    assert_eq!(late.transform.last_used_at, minute(2));
    // The same call inside a caller's transaction.
    let txn = db.begin().await.unwrap();
    let inside = record_transform(&txn, &racer, 300, minute(3))
        .await
        .unwrap();
    txn.commit().await.unwrap();
    assert_eq!(inside.transform.last_used_at, minute(3));
}

#[tokio::test]
async fn touching_moves_last_use_forward_only_and_is_throttled_by_the_row() {
    let db = TestDb::new().await.unwrap();
    let db = &db.conn;
    let f = file(db, None, "touch.png").await;
    record(db, f.id, "h", "a", 100, 300, minute(10)).await;
    assert!(!touch_transform(db, "h", "a", minute(9)).await.unwrap());
    assert!(!touch_transform(db, "h", "a", minute(10)).await.unwrap());
    assert!(
        !touch_transform(db, "h", "missing", minute(11))
            .await
            .unwrap()
    );
    let found = find_transform(db, "h", "a").await.unwrap().unwrap();
    assert_eq!(found.last_used_at, minute(10));
    // Fractions of a second are dropped, so the row's time is the touch's whole second.
    let at = minute(20) + time::Duration::milliseconds(700);
    assert!(touch_transform(db, "h", "a", at).await.unwrap());
    let found = find_transform(db, "h", "a").await.unwrap().unwrap();
    assert_eq!(found.last_used_at, minute(20));

    // The caller touches at most once a minute: the row says when.
    assert_eq!(TOUCH_INTERVAL, time::Duration::MINUTE);
    assert!(!found.needs_touch(minute(20) + time::Duration::seconds(59)));
    assert!(found.needs_touch(minute(21)));
}

#[tokio::test]
async fn evicted_blobs_still_named_elsewhere_are_not_handed_back() {
    let db = TestDb::new().await.unwrap();
    let db = &db.conn;
    let f = file(db, None, "shared.png").await;
    let shared = |key: &'static str, storage_key: &'static str| NewTransform {
        file_id: f.id,
        content_hash: "h",
        key,
        storage_key,
        mime_type: "image/png",
        filesize: Some(100),
        width: None,
        height: None,
    };
    // Two keys on one blob, and one output that is a file's own blob.
    record_transform(db, &shared("a", "derived/h/same"), 200, minute(0))
        .await
        .unwrap();
    record_transform(db, &shared("b", "derived/h/same"), 200, minute(1))
        .await
        .unwrap();
    let saved = record_transform(db, &shared("c", "originals/shared.png"), 200, minute(2))
        .await
        .unwrap();
    assert!(saved.evicted.is_empty(), "a's blob is still b's: {saved:?}");
    assert_eq!(derivatives(db, "h").await, (strings(&["b", "c"]), 200));
    let saved = record(db, f.id, "h", "d", 150, 200, minute(3)).await;
    assert_eq!(saved.evicted, [derived_key("h", "same")]);
    assert_eq!(derivatives(db, "h").await, (strings(&["d"]), 150));
    // "originals/shared.png" was evicted too, but a file still stores its bytes there.
}

#[tokio::test]
async fn listing_and_deleting_the_derivatives_of_a_content() {
    let db = TestDb::new().await.unwrap();
    let db = &db.conn;
    let f = file(db, None, "list.png").await;
    assert!(list_transforms(db, "h").await.unwrap().is_empty());
    record(db, f.id, "h", "b", 10, 1000, minute(1)).await;
    record(db, f.id, "h", "a", 20, 1000, minute(0)).await;
    record(db, f.id, "other", "a", 30, 1000, minute(0)).await;
    assert_eq!(
        list_transforms(db, "h").await.unwrap(),
        [
            TransformEntry {
                key: "a".to_owned(),
                storage_key: derived_key("h", "a"),
                filesize: Some(20),
                last_used_at: minute(0),
            },
            TransformEntry {
                key: "b".to_owned(),
                storage_key: derived_key("h", "b"),
                filesize: Some(10),
                last_used_at: minute(1),
            },
        ]
    );
    assert_eq!(
        delete_transforms(db, "h").await.unwrap(),
        [derived_key("h", "a"), derived_key("h", "b")]
    );
    assert!(list_transforms(db, "h").await.unwrap().is_empty());
    assert_eq!(derivatives(db, "other").await, (strings(&["a"]), 30));
    assert!(delete_transforms(db, "h").await.unwrap().is_empty());
}

#[tokio::test]
async fn a_capped_output_must_say_its_size() {
    let db = TestDb::new().await.unwrap();
    let db = &db.conn;
    let f = file(db, None, "size.png").await;
    for filesize in [None, Some(-1)] {
        let new = NewTransform {
            file_id: f.id,
            content_hash: "h",
            key: "a",
            storage_key: "derived/h/a",
            mime_type: "image/png",
            filesize,
            width: None,
            height: None,
        };
        assert!(matches!(
            record_transform(db, &new, 300, minute(0)).await,
            Err(StorageError::Conflict { .. })
        ));
    }
    assert!(list_transforms(db, "h").await.unwrap().is_empty());
}

#[test]
fn the_default_cap_is_four_times_the_original_plus_a_mebibyte() {
    let cap = DerivativeCap::default();
    assert_eq!(cap, DerivativeCap::DEFAULT);
    assert_eq!(cap.bytes_for(0), 1024 * 1024);
    assert_eq!(cap.bytes_for(151_000), 4 * 151_000 + 1024 * 1024);
    assert_eq!(cap.bytes_for(u64::MAX), u64::MAX);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_saves_of_one_content_never_exceed_the_cap_by_more_than_one_output() {
    let db = TestDb::new().await.unwrap();
    let f = file(&db.conn, None, "race.png").await;
    let cap: u64 = 1_000;
    let size: i64 = 100;
    let per_task = 30;
    let tasks: Vec<_> = ["x", "y"]
        .into_iter()
        .map(|task| {
            let conn = db.conn.clone();
            let file_id = f.id;
            tokio::spawn(async move {
                let mut evicted = Vec::new();
                for i in 0..per_task {
                    let key = format!("{task}-{i}");
                    let saved = record(&conn, file_id, "h", &key, size, cap, minute(i)).await;
                    evicted.extend(saved.evicted);
                    // Read while the other task writes: each read sees one committed state.
                    let (_, total) = derivatives(&conn, "h").await;
                    assert!(total <= cap + 100, "{key}: {total} bytes");
                }
                evicted
            })
        })
        .collect();
    let mut evicted = Vec::new();
    for task in tasks {
        evicted.extend(task.await.unwrap());
    }
    let (kept, total) = derivatives(&db.conn, "h").await;
    assert!(total <= cap, "{total} bytes");
    assert_eq!(kept.len(), 10, "{kept:?}");
    let mut all: Vec<String> = kept.iter().map(|k| derived_key("h", k)).collect();
    let evicted_count = evicted.len();
    all.extend(evicted);
    all.sort();
    all.dedup();
    assert_eq!(
        all.len(),
        2 * per_task as usize,
        "every output kept or evicted"
    );
    assert_eq!(
        evicted_count + kept.len(),
        2 * per_task as usize,
        "no output evicted twice"
    );
}

// ---------------------------------------------------------------------------------------------
// Upload rows and their shared blobs (review finding R12)

/// `bytes` staged in `blobs`, as an upload's body.
async fn staged(blobs: &ObjectBlobStore, bytes: &[u8]) -> StagedBlob {
    let body = futures_util::stream::iter([Ok(bytes::Bytes::copy_from_slice(bytes))]);
    blobs
        .stage(futures_util::StreamExt::boxed(body), None)
        .await
        .unwrap()
}

async fn upload_row(
    db: &Database,
    blobs: &ObjectBlobStore,
    name: &str,
    upload: &StagedBlob,
) -> Result<StoredFile, StorageError> {
    let new = NewFile {
        content_hash: None,
        storage_key: None,
        ..new_file(None, name)
    };
    create_uploaded_file(db, &op(FileAction::Create), new, blobs, upload).await
}

/// The row names the staged upload's blob, whatever the caller put in `NewFile`.
#[tokio::test]
async fn an_uploaded_file_names_its_content_addressed_blob() {
    let db = TestDb::new().await.unwrap();
    let blobs = ObjectBlobStore::in_memory();
    let upload = staged(&blobs, b"some bytes").await;
    blobs.publish(&upload).await.unwrap();
    let file = upload_row(&db.conn, &blobs, "a.bin", &upload)
        .await
        .unwrap();
    assert_eq!(file.storage_key.as_deref(), Some(upload.blob.key.as_str()));
    assert_eq!(
        file.content_hash.as_deref(),
        Some(upload.blob.sha256.as_str())
    );
}

/// A cleanup that deleted the blob between the upload's publish and its row (the order the
/// review's race took) is undone by the row's transaction; a cleanup after the row keeps the
/// blob, soft-deleted rows included.
#[tokio::test]
async fn a_blob_deleted_before_the_row_is_put_back_and_a_named_one_is_kept() {
    let db = TestDb::new().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let blobs = ObjectBlobStore::local(dir.path()).unwrap();
    let upload = staged(&blobs, b"shared bytes").await;
    let key = upload.blob.key.clone();
    blobs.publish(&upload).await.unwrap();
    // Another upload of the same bytes failed and cleans up: no row names the blob yet.
    assert!(delete_unused_blob(&db.conn, &blobs, &key).await.unwrap());
    assert_eq!(blobs.head(&key).await.unwrap(), None);

    let file = upload_row(&db.conn, &blobs, "kept.bin", &upload)
        .await
        .unwrap();
    blobs.release(upload).await;
    assert_eq!(
        blobs.head(&key).await.unwrap(),
        Some(12),
        "put back before the commit"
    );
    assert!(!delete_unused_blob(&db.conn, &blobs, &key).await.unwrap());
    soft_delete_file(&db.conn, &op(FileAction::Delete), file.id)
        .await
        .unwrap();
    assert!(!delete_unused_blob(&db.conn, &blobs, &key).await.unwrap());
    assert_eq!(
        blobs.head(&key).await.unwrap(),
        Some(12),
        "a deleted file can be restored"
    );
}

/// Rows and cleanups at once, on threads, round after round: every row that was written has its
/// blob afterwards. On SQLite the write lock, on PostgreSQL the tree's advisory lock orders them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cleanup_racing_an_upload_row_never_leaves_the_row_without_its_blob() {
    let db = TestDb::new().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let disk = ObjectBlobStore::local(dir.path()).unwrap();
    for (backend, blobs) in [("disk", disk), ("memory", ObjectBlobStore::in_memory())] {
        for round in 0..15 {
            let bytes = format!("{backend} round {round} {}", uuid::Uuid::new_v4());
            let (kept, failed) = tokio::join!(
                staged(&blobs, bytes.as_bytes()),
                staged(&blobs, bytes.as_bytes())
            );
            let key = kept.blob.key.clone();
            let (a, b) = tokio::join!(blobs.publish(&kept), blobs.publish(&failed));
            a.unwrap();
            b.unwrap();
            let name = format!("{backend}-{round}.bin");
            let (row, cleanup) = tokio::join!(
                upload_row(&db.conn, &blobs, &name, &kept),
                delete_unused_blob(&db.conn, &blobs, &key)
            );
            row.unwrap();
            cleanup.unwrap();
            blobs.release(kept).await;
            blobs.release(failed).await;
            assert_eq!(
                blobs.head(&key).await.unwrap(),
                Some(u64::try_from(bytes.len()).unwrap()),
                "{backend} round {round}: the row's blob is gone"
            );
        }
    }
}
