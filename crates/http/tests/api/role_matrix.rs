//! The role matrix: every public endpoint against every role shape, as one table.
//!
//! For every cell (endpoint x role) the answer is asserted exactly, and its body is searched for
//! every distinctive value of the project the role's own reads could not see (values of hidden
//! items, hidden fields, private files and folders, values written by the request itself), and
//! for the names of fields it may not read. Status codes never tell a hidden item from a missing
//! one; a write on a hidden or missing item answers as the same role's show does; a write by a
//! role without `read` answers only `{"data": {"id": N}}`; list totals count only what the role
//! may see, in every locale.
//!
//! What a role without `read` learns from a write (documented by the API reference, "What a
//! write answers"): its GET is 403 for any id, existing or not, and says nothing; its PATCH and
//! DELETE find the id or not (200 `{"data": {"id"}}` / 204 against 404), and never a value.
//! Files are different by the spec: a show (and a write, for a role with that write grant) of a
//! private file is 403, of an unknown id 404, whatever the grants.

use actix_web::http::{Method, StatusCode};
use serde_json::{Value, json};

use crate::support::{Part, Response, TestApp, png};

const ITEMS: &str = "/api/v1/collections/articles/items";
/// The seeded items (one id sequence: the manifest's order).
const A: i64 = 1; // published
const B: i64 = 2; // draft: hidden from `filtered`
const C: i64 = 3; // published, parent B, cover the private file
const D: i64 = 4; // published, parent A, cover the public file
/// Published items each deleting role deletes (so no cell destroys another's fixture).
const BIN_DELETE_ONLY: i64 = 5;
const BIN_FIELD_RULES: i64 = 6;
const BIN_FILTERED: i64 = 7;
/// An id no item or file has.
const MISSING: i64 = 999_999;
/// The query that flattens, adds every translation and expands (rule 5: same totals).
const EVERYTHING: &str = "?locale=de&include_all_translations=true&include=parent,files";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Public,
    None,
    CreateOnly,
    UpdateOnly,
    DeleteOnly,
    Filtered,
    FieldRules,
    NoPrivate,
}

use Role::{CreateOnly, DeleteOnly, FieldRules, Filtered, NoPrivate, UpdateOnly};

impl Role {
    const ALL: [Self; 8] = [
        Self::Public,
        Self::None,
        CreateOnly,
        UpdateOnly,
        DeleteOnly,
        Filtered,
        FieldRules,
        NoPrivate,
    ];

    fn name(self) -> &'static str {
        match self {
            Self::Public => "public",
            Self::None => "none",
            CreateOnly => "create-only",
            UpdateOnly => "update-only",
            DeleteOnly => "delete-only",
            Filtered => "filtered",
            FieldRules => "field-rules",
            NoPrivate => "no-private",
        }
    }

    /// The key (named as the role); `public` is anonymous.
    fn key(self) -> Option<&'static str> {
        (self != Self::Public).then(|| self.name())
    }

    fn read(self) -> bool {
        matches!(self, Filtered | FieldRules | NoPrivate)
    }
    fn create(self) -> bool {
        matches!(self, CreateOnly | Filtered | FieldRules)
    }
    fn update(self) -> bool {
        matches!(self, UpdateOnly | Filtered | FieldRules)
    }
    fn delete(self) -> bool {
        matches!(self, DeleteOnly | Filtered | FieldRules)
    }
    /// Reads the draft (read without the item filter).
    fn sees_draft(self) -> bool {
        self.read() && self != Filtered
    }
    /// Reads `secret_score` and `internal_notes`.
    fn sees_hidden_fields(self) -> bool {
        self.read() && self != FieldRules
    }
    fn files_read(self) -> bool {
        matches!(self, Filtered | FieldRules | NoPrivate)
    }
    fn files_create(self) -> bool {
        matches!(self, CreateOnly | FieldRules | NoPrivate)
    }
    fn files_update(self) -> bool {
        matches!(self, UpdateOnly | FieldRules | NoPrivate)
    }
    fn files_delete(self) -> bool {
        matches!(self, DeleteOnly | FieldRules | NoPrivate)
    }

    /// The item this role deletes in the destructive cells.
    fn bin_item(self) -> Option<i64> {
        match self {
            DeleteOnly => Some(BIN_DELETE_ONLY),
            FieldRules => Some(BIN_FIELD_RULES),
            Filtered => Some(BIN_FILTERED),
            _ => None,
        }
    }

    /// The items its lists show, by id.
    fn items(self) -> Vec<i64> {
        match self {
            _ if !self.read() => Vec::new(),
            Filtered => vec![A, C, D, BIN_DELETE_ONLY, BIN_FIELD_RULES, BIN_FILTERED],
            _ => (A..=BIN_FILTERED).collect(),
        }
    }
}

fn manifest() -> Value {
    let hidden_fields = json!({
        "secret_score": {"read": false},
        "internal_notes": {"read": false, "create": false, "update": false}
    });
    let all_files = json!({"read": true, "create": true, "update": true, "delete": true});
    let bin = |who: &str| json!({"data": {"title": {"en": format!("BIN-ITEM-{who}")}, "status": "published"}});
    json!({
        "settings": {"content_locales": ["en", "de"], "default_locale": "en"},
        "folders": [{"name": "SENTINEL-VAULT", "parent": null, "access": "private"}],
        "collections": [
            {"slug": "articles", "name": "Articles", "fields": [
                {"name": "title", "type": "string", "translatable": true, "settings": {}},
                {"name": "status", "type": "select", "settings": {"options": ["draft", "published"]}},
                {"name": "secret_score", "type": "number", "settings": {}},
                {"name": "internal_notes", "type": "textarea", "settings": {}},
                {"name": "cover", "type": "image", "settings": {}},
                {"name": "parent", "type": "many_to_one", "settings": {"related_collection": "articles"}}
            ]}
        ],
        "roles": [
            {"name": "public", "collection_permissions": {}, "file_permissions": {}},
            {"name": "none", "collection_permissions": {}, "file_permissions": {}},
            {"name": "create-only", "collection_permissions": {"articles": {"create": true}},
             "file_permissions": {"create": true}},
            {"name": "update-only", "collection_permissions": {"articles": {"update": true}},
             "file_permissions": {"update": true}},
            {"name": "delete-only", "collection_permissions": {"articles": {"delete": true}},
             "file_permissions": {"delete": true}},
            // Read with an item filter, and the write grants, so writes on its hidden draft are
            // judged (404 as show) rather than refused for the grant (403 for any id).
            {"name": "filtered", "collection_permissions": {"articles": {
                "read": true, "create": true, "update": true, "delete": true,
                "rules": {"item_filter": {"status": {"_eq": "published"}}}}},
             "file_permissions": {"read": true}},
            {"name": "field-rules", "collection_permissions": {"articles": {
                "read": true, "create": true, "update": true, "delete": true,
                "rules": {"fields": hidden_fields}}},
             "file_permissions": all_files},
            {"name": "no-private", "collection_permissions": {"articles": {"read": true}},
             "file_permissions": all_files}
        ],
        "api_keys": [
            {"name": "none", "role": "none"},
            {"name": "create-only", "role": "create-only"},
            {"name": "update-only", "role": "update-only"},
            {"name": "delete-only", "role": "delete-only"},
            {"name": "filtered", "role": "filtered"},
            {"name": "field-rules", "role": "field-rules"},
            {"name": "no-private", "role": "no-private"},
            {"name": "admin", "role": "super-admin"}
        ],
        "items": {"articles": [
            {"data": {"title": {"en": "PUB-A-EN", "de": "PUB-A-DE"}, "status": "published",
                      "secret_score": 7331, "internal_notes": "NOTE-A-SENTINEL"}},
            {"data": {"title": {"en": "SENTINEL-DRAFT-TITLE", "de": "SENTINEL-DRAFT-TITEL-DE"},
                      "status": "draft", "secret_score": 4242, "internal_notes": "SENTINEL-NOTES",
                      "parent": A}},
            {"data": {"title": {"en": "PUB-C-EN", "de": "PUB-C-DE"}, "status": "published",
                      "secret_score": 5150, "internal_notes": "NOTE-C-SENTINEL", "parent": B}},
            {"data": {"title": {"en": "PUB-D-EN"}, "status": "published", "secret_score": 6006,
                      "parent": A}},
            bin("delete-only"),
            bin("field-rules"),
            bin("filtered")
        ]}
    })
}

/// What only exists once the app runs: ids of files, and the admin's view of the collections.
struct World {
    collections: Value,
    vault: i64,
    public: i64,
    private: i64,
    /// The public file each files-deleting role deletes.
    file_bins: Vec<(Role, i64)>,
}

impl World {
    fn file_bin(&self, role: Role) -> Option<i64> {
        self.file_bins
            .iter()
            .find(|(r, _)| *r == role)
            .map(|(_, id)| *id)
    }
}

/// Who may see a distinctive value.
type Sees = fn(Role) -> bool;

/// Every distinctive string of the project (as a substring of any body) and who may see it.
const TEXTS: &[(&str, Sees)] = &[
    ("PUB-A-EN", Role::read),
    ("PUB-A-DE", Role::read),
    ("PUB-C-EN", Role::read),
    ("PUB-C-DE", Role::read),
    ("PUB-D-EN", Role::read),
    ("BIN-ITEM-", Role::read),
    ("SENTINEL-DRAFT-TITLE", Role::sees_draft),
    ("SENTINEL-DRAFT-TITEL-DE", Role::sees_draft),
    ("NOTE-A-SENTINEL", Role::sees_hidden_fields),
    ("NOTE-C-SENTINEL", Role::sees_hidden_fields),
    ("SENTINEL-NOTES", |r| {
        r.sees_draft() && r.sees_hidden_fields()
    }),
    // Written by the cells themselves: published titles, a draft, notes.
    ("W-EN-", Role::read),
    ("W-DE-", Role::read),
    ("W-DRAFT-", Role::sees_draft),
    ("W-NOTES-", Role::sees_hidden_fields),
    // Files: the public ones need `read`; the private file (name and title), the private folder
    // and uploads into it need `read_private`, which no role here has.
    ("report-public.png", Role::files_read),
    ("FILE-BIN-", Role::files_read),
    ("ROOT-UPLOAD-", Role::files_read),
    ("SENTINEL-PRIVATE", |_| false),
    ("SENTINEL-VAULT", |_| false),
    ("W-FILE-TITLE-", |_| false),
    ("W-FILE-NAME-", |_| false),
];

/// Every distinctive number (as a JSON number anywhere in a body) and who may see it.
const NUMBERS: &[(i64, Sees)] = &[
    (7331, Role::sees_hidden_fields),
    (5150, Role::sees_hidden_fields),
    (6006, Role::sees_hidden_fields),
    (4242, |r| r.sees_draft() && r.sees_hidden_fields()),
    (9001, Role::sees_hidden_fields),
];

/// Field names a role may only meet when it reads them (or names them in its own request).
const HIDDEN_FIELDS: &[&str] = &["secret_score", "internal_notes"];

/// The request body of a cell.
enum Body {
    None,
    Json(fn(Role, &World) -> Value),
    Upload(fn(Role, &World) -> Vec<Part>),
}

/// Which GET a write's answer must equal.
#[derive(Debug, Clone, Copy)]
enum Show {
    /// The write's own path (query included).
    Same,
    /// `ITEMS/{new id}` with the write's query.
    NewItem,
    /// `/api/v1/files/{new id}`.
    NewFile,
}

#[derive(Debug)]
enum Expect {
    /// This status and exactly this JSON body.
    Exact(StatusCode, Value),
    /// 204 with an empty body.
    NoContent,
    /// Exactly `{"data": {"id": N}}` (N given, or any for a create).
    Receipt(StatusCode, Option<i64>),
    /// This status, and the body equals the same role's GET of [`Show`] (made after the write).
    AsShow(StatusCode, Show),
    /// This status, and status and body equal the same role's GET of this path.
    Like(StatusCode, String),
    /// 200, the page lists exactly these ids and `meta.total` is their number.
    List(Vec<i64>),
    /// 200 and this `meta.total`.
    Total(usize),
    /// 200, `data.id` is this id, and each JSON pointer holds its value.
    Resource(i64, Vec<(&'static str, Value)>),
    /// 200 with `data.fields[].name` exactly these.
    Fields(Vec<&'static str>),
    /// 200, bytes.
    Bytes,
    /// 422 naming exactly these parameters.
    Invalid(Vec<&'static str>),
}

/// One row: an endpoint, asked by every role.
struct Case {
    method: Method,
    /// None: the cell does not apply to this role (said why where it happens).
    path: fn(Role, &World) -> Option<String>,
    body: Body,
    expect: fn(Role, &World) -> Expect,
    /// The request itself names hidden fields (a 422 may name them back).
    names_fields: bool,
}

fn item(id: i64) -> String {
    format!("{ITEMS}/{id}")
}

fn file(id: i64) -> String {
    format!("/api/v1/files/{id}")
}

fn forbidden() -> Expect {
    Expect::Exact(StatusCode::FORBIDDEN, json!({"message": "Forbidden."}))
}

fn not_found() -> Expect {
    Expect::Exact(StatusCode::NOT_FOUND, json!({"message": "Not found."}))
}

/// A read of the articles collection: `ok` with `read`, 403 without.
fn with_read(r: Role, ok: Expect) -> Expect {
    if r.read() { ok } else { forbidden() }
}

/// A files read of a public file or a list: `ok` with files `read`, 403 without.
fn with_files_read(r: Role, ok: Expect) -> Expect {
    if r.files_read() { ok } else { forbidden() }
}

/// Show of an item: the resource when visible, 404 when hidden, 403 without `read`.
fn show_item(r: Role, id: i64, visible: bool, checks: Vec<(&'static str, Value)>) -> Expect {
    match (r.read(), visible) {
        (false, _) => forbidden(),
        (true, true) => Expect::Resource(id, checks),
        (true, false) => not_found(),
    }
}

/// A write on an item the role may see or not (rule 3): without the grant 403 for any id;
/// without `read`, the receipt when the id exists and 404 when not; with `read`, exactly what
/// show answers (the resource, or 404 for hidden and missing alike).
fn write_item(grant: bool, r: Role, path: String, exists: bool, visible: bool) -> Expect {
    let id = path
        .trim_start_matches(ITEMS)
        .trim_start_matches('/')
        .split('?')
        .next()
        .and_then(|id| id.parse().ok());
    match (grant, r.read(), exists, visible) {
        (false, ..) => forbidden(),
        (true, false, true, _) => Expect::Receipt(StatusCode::OK, id),
        (true, false, false, _) => not_found(),
        (true, true, true, true) => Expect::AsShow(StatusCode::OK, Show::Same),
        (true, true, ..) => Expect::Like(StatusCode::NOT_FOUND, path),
    }
}

/// A create: without the grant 403; without `read` the receipt; with it, the item as show
/// renders it.
fn created(r: Role) -> Expect {
    match (r.create(), r.read()) {
        (false, _) => forbidden(),
        (true, false) => Expect::Receipt(StatusCode::CREATED, None),
        (true, true) => Expect::AsShow(StatusCode::CREATED, Show::NewItem),
    }
}

fn cases() -> Vec<Case> {
    let read =
        |path: fn(Role, &World) -> Option<String>, expect: fn(Role, &World) -> Expect| Case {
            method: Method::GET,
            path,
            body: Body::None,
            expect,
            names_fields: false,
        };
    let mut cases = vec![
        // ---- Collections.
        read(
            |_, _| Some("/api/v1/collections".into()),
            |r, w| {
                let data = if r.read() {
                    w.collections.clone()
                } else {
                    json!({"data": []})
                };
                Expect::Exact(StatusCode::OK, data)
            },
        ),
        read(
            |_, _| Some("/api/v1/collections/articles".into()),
            |r, _| {
                let fields = match r {
                    FieldRules => vec!["title", "status", "cover", "parent"],
                    _ => vec![
                        "title",
                        "status",
                        "secret_score",
                        "internal_notes",
                        "cover",
                        "parent",
                    ],
                };
                with_read(r, Expect::Fields(fields))
            },
        ),
        // The spec's 404 for an unknown slug (slugs are not secret; items are).
        read(
            |_, _| Some("/api/v1/collections/nope/items/1".into()),
            |_, _| not_found(),
        ),
        // ---- Item lists: exactly the visible ids, and totals that count nothing else, in every
        // locale and with every expansion.
        read(
            |_, _| Some(ITEMS.into()),
            |r, _| with_read(r, Expect::List(r.items())),
        ),
        read(
            |_, _| Some(format!("{ITEMS}{EVERYTHING}")),
            |r, _| with_read(r, Expect::List(r.items())),
        ),
        read(
            |_, _| Some(format!("{ITEMS}?locale=de")),
            |r, _| with_read(r, Expect::List(r.items())),
        ),
        read(
            |_, _| {
                Some(format!(
                    "{ITEMS}?per_page=1&locale=de&include_all_translations=1"
                ))
            },
            |r, _| with_read(r, Expect::Total(r.items().len())),
        ),
        read(
            |_, _| Some(format!("{ITEMS}?filter[status][_eq]=draft")),
            |r, _| {
                with_read(
                    r,
                    Expect::List(if r.sees_draft() { vec![B] } else { vec![] }),
                )
            },
        ),
        // The German title of the draft only matches for roles that see the draft.
        read(
            |_, _| Some(format!("{ITEMS}?locale=de&filter[title][_contains]=TITEL")),
            |r, _| {
                with_read(
                    r,
                    Expect::List(if r.sees_draft() { vec![B] } else { vec![] }),
                )
            },
        ),
        // ---- Item shows.
        read(|_, _| Some(item(A)), |r, _| show_item(r, A, true, vec![])),
        read(
            |_, _| Some(format!("{}{EVERYTHING}", item(A))),
            |r, _| show_item(r, A, true, vec![]),
        ),
        read(
            |_, _| Some(item(B)),
            |r, _| show_item(r, B, r.sees_draft(), vec![]),
        ),
        read(
            |_, _| Some(format!("{}{EVERYTHING}", item(B))),
            |r, _| show_item(r, B, r.sees_draft(), vec![]),
        ),
        // C links the draft and the private file: the draft stays a lean link for `filtered`,
        // the private file is null for every role here (none has read_private).
        read(
            |_, _| Some(format!("{}?locale=de&include=parent,files", item(C))),
            |r, _| {
                let parent = if r.sees_draft() {
                    ("/data/data/parent/id", json!(B))
                } else {
                    ("/data/data/parent", json!(B))
                };
                show_item(r, C, true, vec![parent, ("/data/data/cover", Value::Null)])
            },
        ),
        read(
            |_, _| Some(format!("{}?include=parent,files", item(D))),
            |r, w| {
                show_item(
                    r,
                    D,
                    true,
                    vec![
                        ("/data/data/parent/id", json!(A)),
                        ("/data/data/cover/id", json!(w.public)),
                    ],
                )
            },
        ),
        read(|_, _| Some(item(MISSING)), |r, _| with_read(r, not_found())),
        read(
            |_, _| Some(format!("{ITEMS}/abc")),
            |r, _| with_read(r, not_found()),
        ),
        // ---- Files reads. The root holds the public file, the bins and the private folder.
        read(
            |_, _| Some("/api/v1/files".into()),
            |r, w| {
                let mut ids = vec![w.public];
                ids.extend(w.file_bins.iter().map(|(_, id)| *id));
                with_files_read(r, Expect::List(ids))
            },
        ),
        read(
            |_, _| Some("/api/v1/files?search=report".into()),
            |r, w| with_files_read(r, Expect::List(vec![w.public])),
        ),
        // Matches the private file's name and title and the folder: nothing for these roles.
        read(
            |_, _| Some("/api/v1/files?search=SENTINEL".into()),
            |r, _| with_files_read(r, Expect::List(vec![])),
        ),
        read(
            |_, _| Some(format!("/api/v1/files?parent_id={MISSING}")),
            |r, _| with_files_read(r, Expect::List(vec![])),
        ),
        // The private folder's listing answers as an unknown folder's does.
        read(
            |_, w| Some(format!("/api/v1/files?parent_id={}", w.vault)),
            |r, _| {
                with_files_read(
                    r,
                    Expect::Like(StatusCode::OK, format!("/api/v1/files?parent_id={MISSING}")),
                )
            },
        ),
        read(
            |_, w| Some(file(w.public)),
            |r, w| with_files_read(r, Expect::Resource(w.public, vec![])),
        ),
        read(|_, w| Some(file(w.private)), |_, _| forbidden()),
        read(|_, w| Some(file(w.vault)), |_, _| forbidden()),
        read(|_, _| Some(file(MISSING)), |_, _| not_found()),
        read(
            |_, w| Some(format!("{}/content", file(w.public))),
            |r, _| with_files_read(r, Expect::Bytes),
        ),
        read(
            |_, w| Some(format!("{}/content", file(w.private))),
            |_, _| forbidden(),
        ),
        read(
            |_, _| Some(format!("{}/content", file(MISSING))),
            |_, _| not_found(),
        ),
        read(
            |_, w| Some(format!("{}/transforms/thumbnail", file(w.public))),
            |r, _| with_files_read(r, Expect::Bytes),
        ),
        read(
            |_, w| Some(format!("{}/transforms/thumbnail", file(w.private))),
            |_, _| forbidden(),
        ),
        read(
            |_, _| Some(format!("{}/transforms/thumbnail", file(MISSING))),
            |_, _| not_found(),
        ),
    ];

    // Filters and sorts on hidden fields: 422 for `field-rules`, the same answer whatever the
    // hidden values are; for `filtered` a filter on the draft's score finds nothing.
    let names =
        |path: fn(Role, &World) -> Option<String>, expect: fn(Role, &World) -> Expect| Case {
            method: Method::GET,
            path,
            body: Body::None,
            expect,
            names_fields: true,
        };
    cases.extend([
        names(
            |_, _| Some(format!("{ITEMS}?filter[secret_score][_eq]=4242")),
            |r, _| match r {
                FieldRules => Expect::Like(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    format!("{ITEMS}?filter[secret_score][_eq]=7331"),
                ),
                _ => with_read(
                    r,
                    Expect::List(if r.sees_draft() { vec![B] } else { vec![] }),
                ),
            },
        ),
        names(
            |_, _| Some(format!("{ITEMS}?filter[secret_score][_eq]=7331")),
            |r, _| match r {
                FieldRules => Expect::Invalid(vec!["filter[secret_score]"]),
                _ => with_read(r, Expect::List(vec![A])),
            },
        ),
        names(
            |_, _| {
                Some(format!(
                    "{ITEMS}?filter[internal_notes][_contains]=SENTINEL"
                ))
            },
            |r, _| match r {
                FieldRules => Expect::Invalid(vec!["filter[internal_notes]"]),
                _ => with_read(
                    r,
                    Expect::List(if r.sees_draft() {
                        vec![A, B, C]
                    } else {
                        vec![A, C]
                    }),
                ),
            },
        ),
        names(
            |_, _| Some(format!("{ITEMS}?filter[secret_score][_null]=1")),
            |r, _| match r {
                FieldRules => Expect::Invalid(vec!["filter[secret_score]"]),
                _ => with_read(
                    r,
                    Expect::List(vec![BIN_DELETE_ONLY, BIN_FIELD_RULES, BIN_FILTERED]),
                ),
            },
        ),
        names(
            |_, _| Some(format!("{ITEMS}?sort=-secret_score")),
            |r, _| match r {
                FieldRules => Expect::Invalid(vec!["sort"]),
                _ => with_read(r, Expect::Total(r.items().len())),
            },
        ),
    ]);

    // ---- Item writes that change no fixture value (PATCH with an empty `data`), then writes
    // of values. Rule 3: `write_item`.
    let patch = |path: fn(Role, &World) -> Option<String>,
                 body: fn(Role, &World) -> Value,
                 expect: fn(Role, &World) -> Expect| Case {
        method: Method::PATCH,
        path,
        body: Body::Json(body),
        expect,
        names_fields: false,
    };
    let empty = |_: Role, _: &World| json!({"data": {}});
    cases.extend([
        patch(
            |_, _| Some(item(A)),
            empty,
            |r, _| write_item(r.update(), r, item(A), true, true),
        ),
        patch(
            |_, _| Some(item(B)),
            empty,
            |r, _| write_item(r.update(), r, item(B), true, r.sees_draft()),
        ),
        patch(
            |_, _| Some(format!("{}{EVERYTHING}", item(B))),
            empty,
            |r, _| {
                let path = format!("{}{EVERYTHING}", item(B));
                write_item(r.update(), r, path, true, r.sees_draft())
            },
        ),
        patch(
            |_, _| Some(format!("{}?locale=de&include=parent,files", item(C))),
            empty,
            |r, _| {
                let path = format!("{}?locale=de&include=parent,files", item(C));
                write_item(r.update(), r, path, true, true)
            },
        ),
        patch(
            |_, _| Some(item(MISSING)),
            empty,
            |r, _| write_item(r.update(), r, item(MISSING), false, false),
        ),
        // A hidden field's value written by the request is never echoed to a role that may not
        // read it.
        patch(
            |_, _| Some(format!("{}{EVERYTHING}", item(A))),
            |_, _| json!({"data": {"secret_score": 9001}}),
            |r, _| {
                let path = format!("{}{EVERYTHING}", item(A));
                write_item(r.update(), r, path, true, true)
            },
        ),
        // `internal_notes` may not be updated by `field-rules`: 403 whether the id exists or not.
        patch(
            |_, _| Some(item(A)),
            |r, _| json!({"data": {"internal_notes": format!("W-NOTES-{}", r.name())}}),
            |r, _| match r {
                FieldRules => forbidden(),
                _ => write_item(r.update(), r, item(A), true, true),
            },
        ),
        patch(
            |_, _| Some(item(MISSING)),
            |r, _| json!({"data": {"internal_notes": format!("W-NOTES-{}", r.name())}}),
            |r, _| match r {
                FieldRules => forbidden(),
                _ => write_item(r.update(), r, item(MISSING), false, false),
            },
        ),
    ]);

    // An invalid value on a hidden or missing item: the item is looked up (and found hidden)
    // before the value is validated, so `filtered` gets show's 404, never a 422 that would
    // tell an existing hidden item from a missing one.
    let invalid = |_: Role, _: &World| json!({"data": {"secret_score": "not a number"}});
    cases.extend([
        Case {
            names_fields: true,
            ..patch(
                |_, _| Some(item(B)),
                invalid,
                |r, _| match (r.update(), r.read(), r.sees_draft()) {
                    (false, ..) => forbidden(),
                    (true, true, false) => Expect::Like(StatusCode::NOT_FOUND, item(B)),
                    // update-only (no read) learns the id exists, as its PATCH {} does;
                    // field-rules sees the draft.
                    (true, ..) => Expect::Invalid(vec!["secret_score"]),
                },
            )
        },
        Case {
            names_fields: true,
            ..patch(
                |_, _| Some(item(MISSING)),
                invalid,
                |r, _| write_item(r.update(), r, item(MISSING), false, false),
            )
        },
    ]);

    // ---- Item creates.
    let post = |body: fn(Role, &World) -> Value, expect: fn(Role, &World) -> Expect| Case {
        method: Method::POST,
        path: |_, _| Some(format!("{ITEMS}?locale=de&include=parent,files")),
        body: Body::Json(body),
        expect,
        names_fields: false,
    };
    cases.extend([
        // Published, with a hidden score, linking the draft and the private file.
        post(
            |r, w| {
                json!({"data": {
                    "title": {"en": format!("W-EN-{}", r.name()), "de": format!("W-DE-{}", r.name())},
                    "status": "published", "secret_score": 9001, "parent": B, "cover": w.private
                }})
            },
            |r, _| created(r),
        ),
        // A draft: outside `filtered`'s item filter (403, nothing written).
        post(
            |r, _| json!({"data": {"title": format!("W-DRAFT-{}", r.name()), "status": "draft"}}),
            |r, _| match r {
                Filtered => forbidden(),
                _ => created(r),
            },
        ),
        // Notes: `field-rules` may not create them.
        post(
            |r, _| {
                json!({"data": {
                    "title": format!("W-EN-{}", r.name()), "status": "published",
                    "internal_notes": format!("W-NOTES-{}", r.name())
                }})
            },
            |r, _| match r {
                FieldRules => forbidden(),
                _ => created(r),
            },
        ),
    ]);

    // ---- File writes. Uploads: the resource for a reader of the result, else the receipt.
    let upload = |body: fn(Role, &World) -> Vec<Part>, expect: fn(Role, &World) -> Expect| Case {
        method: Method::POST,
        path: |_, _| Some("/api/v1/files".into()),
        body: Body::Upload(body),
        expect,
        names_fields: false,
    };
    cases.extend([
        upload(
            |r, _| {
                vec![Part::file(
                    &format!("ROOT-UPLOAD-{}.png", r.name()),
                    "image/png",
                    &png(4, 4),
                )]
            },
            |r, _| match (r.files_create(), r.files_read()) {
                (false, _) => forbidden(),
                (true, false) => Expect::Receipt(StatusCode::CREATED, None),
                (true, true) => Expect::AsShow(StatusCode::CREATED, Show::NewFile),
            },
        ),
        // Into the private folder: allowed with `create`, answered by id only (no role here
        // has read_private).
        upload(
            |r, w| {
                vec![
                    Part::text("parent_id", &w.vault.to_string()),
                    Part::file(
                        &format!("SENTINEL-VAULTUP-{}.png", r.name()),
                        "image/png",
                        &png(4, 4),
                    ),
                ]
            },
            |r, _| {
                if r.files_create() {
                    Expect::Receipt(StatusCode::CREATED, None)
                } else {
                    forbidden()
                }
            },
        ),
    ]);
    // `parent_id` naming something that is not a folder one may upload into: 422 on
    // `parent_id` for a private file as for an unknown id (the messages differ, "is a file" /
    // "does not exist"; uploads into private folders being allowed, the kind of a private id
    // is learnable by a creator anyway).
    cases.extend([
        upload(
            |r, w| {
                vec![
                    Part::text("parent_id", &w.private.to_string()),
                    Part::file(
                        &format!("ROOT-UPLOAD-x-{}.png", r.name()),
                        "image/png",
                        &png(4, 4),
                    ),
                ]
            },
            |r, _| {
                if r.files_create() {
                    Expect::Invalid(vec!["parent_id"])
                } else {
                    forbidden()
                }
            },
        ),
        upload(
            |r, _| {
                vec![
                    Part::text("parent_id", &MISSING.to_string()),
                    Part::file(
                        &format!("ROOT-UPLOAD-y-{}.png", r.name()),
                        "image/png",
                        &png(4, 4),
                    ),
                ]
            },
            |r, _| {
                if r.files_create() {
                    Expect::Invalid(vec!["parent_id"])
                } else {
                    forbidden()
                }
            },
        ),
    ]);
    let file_patch = |path: fn(Role, &World) -> Option<String>,
                      body: fn(Role, &World) -> Value,
                      expect: fn(Role, &World) -> Expect| Case {
        method: Method::PATCH,
        path,
        body: Body::Json(body),
        expect,
        names_fields: false,
    };
    let private_write = |r: Role, _: &World| {
        json!({"title": format!("W-FILE-TITLE-{}", r.name()),
               "name": format!("W-FILE-NAME-{}.png", r.name())})
    };
    cases.extend([
        file_patch(
            |_, w| Some(file(w.public)),
            |_, _| json!({}),
            |r, w| match (r.files_update(), r.files_read()) {
                (false, _) => forbidden(),
                (true, false) => Expect::Receipt(StatusCode::OK, Some(w.public)),
                (true, true) => Expect::AsShow(StatusCode::OK, Show::Same),
            },
        ),
        // Rule 4: the private file and folder answer 403 as show does, and stay unchanged
        // (checked as admin at the end).
        file_patch(
            |_, w| Some(file(w.private)),
            |_, _| json!({}),
            |_, w| Expect::Like(StatusCode::FORBIDDEN, file(w.private)),
        ),
        file_patch(
            |_, w| Some(file(w.private)),
            private_write,
            |_, _| forbidden(),
        ),
        file_patch(
            |_, w| Some(file(w.vault)),
            private_write,
            |_, _| forbidden(),
        ),
        file_patch(
            |_, _| Some(file(MISSING)),
            |_, _| json!({}),
            |r, _| {
                if r.files_update() {
                    Expect::Like(StatusCode::NOT_FOUND, file(MISSING))
                } else {
                    forbidden()
                }
            },
        ),
    ]);

    // ---- Deletes, last: each deleting role deletes only its own bin.
    let delete =
        |path: fn(Role, &World) -> Option<String>, expect: fn(Role, &World) -> Expect| Case {
            method: Method::DELETE,
            path,
            body: Body::None,
            expect,
            names_fields: false,
        };
    cases.extend([
        // The draft: hidden from `filtered` (404 as show). `delete-only` and `field-rules` would
        // really delete it (every existing id is a 204 for them): their bins stand for it below.
        delete(
            |r, _| (!matches!(r, DeleteOnly | FieldRules)).then(|| item(B)),
            |r, _| match r {
                Filtered => Expect::Like(StatusCode::NOT_FOUND, item(B)),
                _ => forbidden(),
            },
        ),
        delete(
            |_, _| Some(item(MISSING)),
            |r, _| match (r.delete(), r.read()) {
                (false, _) => forbidden(),
                (true, false) => not_found(),
                (true, true) => Expect::Like(StatusCode::NOT_FOUND, item(MISSING)),
            },
        ),
        delete(
            |r, _| Some(item(r.bin_item().unwrap_or(A))),
            |r, _| {
                if r.delete() {
                    Expect::NoContent
                } else {
                    forbidden()
                }
            },
        ),
        // Deleted: answers as a missing id.
        delete(
            |r, _| Some(item(r.bin_item().unwrap_or(A))),
            |r, _| match (r.delete(), r.read()) {
                (false, _) => forbidden(),
                (true, false) => not_found(),
                (true, true) => Expect::Like(StatusCode::NOT_FOUND, item(MISSING)),
            },
        ),
        delete(
            |_, w| Some(file(w.private)),
            |_, w| Expect::Like(StatusCode::FORBIDDEN, file(w.private)),
        ),
        delete(|_, w| Some(file(w.vault)), |_, _| forbidden()),
        delete(
            |_, _| Some(file(MISSING)),
            |r, _| {
                if r.files_delete() {
                    not_found()
                } else {
                    forbidden()
                }
            },
        ),
        delete(
            |r, w| Some(file(w.file_bin(r).unwrap_or(w.public))),
            |r, _| {
                if r.files_delete() {
                    Expect::NoContent
                } else {
                    forbidden()
                }
            },
        ),
        delete(
            |r, w| Some(file(w.file_bin(r).unwrap_or(w.public))),
            |r, _| {
                if r.files_delete() {
                    not_found()
                } else {
                    forbidden()
                }
            },
        ),
    ]);
    cases
}

async fn get(app: &TestApp, role: Role, path: &str) -> Response {
    app.send(app.authed(TestApp::request(Method::GET, path), role.key()))
        .await
}

async fn send(app: &TestApp, world: &World, role: Role, case: &Case, path: &str) -> Response {
    let key = role.key();
    match &case.body {
        Body::Upload(parts) => app.upload(key, &parts(role, world)).await,
        Body::Json(body) => {
            app.json(case.method.clone(), key, path, body(role, world))
                .await
        }
        Body::None => {
            app.send(app.authed(TestApp::request(case.method.clone(), path), key))
                .await
        }
    }
}

fn text(res: &Response) -> String {
    String::from_utf8_lossy(&res.body).into_owned()
}

fn numbers(value: &Value, out: &mut Vec<i64>) {
    match value {
        Value::Number(n) => out.extend(n.as_i64()),
        Value::Array(a) => a.iter().for_each(|v| numbers(v, out)),
        Value::Object(o) => o.values().for_each(|v| numbers(v, out)),
        _ => {}
    }
}

/// Rule 1: nothing the role's reads could not see, whatever the endpoint.
fn assert_discloses_nothing(cell: &str, role: Role, res: &Response, names_fields: bool) {
    let body = text(res);
    for (sentinel, sees) in TEXTS {
        assert!(
            sees(role) || !body.contains(sentinel),
            "{cell}: discloses {sentinel:?}: {body}"
        );
    }
    if !role.sees_hidden_fields() && !names_fields {
        for field in HIDDEN_FIELDS {
            assert!(!body.contains(field), "{cell}: names {field:?}: {body}");
        }
    }
    if let Ok(json) = serde_json::from_slice::<Value>(&res.body) {
        let mut found = Vec::new();
        numbers(&json, &mut found);
        for (number, sees) in NUMBERS {
            assert!(
                sees(role) || !found.contains(number),
                "{cell}: discloses {number}: {body}"
            );
        }
    }
}

fn listed_ids(cell: &str, body: &Value) -> Vec<i64> {
    let mut ids: Vec<i64> = body["data"]
        .as_array()
        .unwrap_or_else(|| panic!("{cell}: not a list: {body}"))
        .iter()
        .map(|i| i["id"].as_i64().unwrap())
        .collect();
    ids.sort_unstable();
    ids
}

/// Checks one answer; returns the id a successful create made.
async fn check(
    app: &TestApp,
    role: Role,
    cell: &str,
    path: &str,
    res: &Response,
    expect: Expect,
) -> Option<i64> {
    let body = text(res);
    let status = |want: StatusCode| {
        assert_eq!(res.status, want, "{cell}: {body}");
    };
    match expect {
        Expect::Exact(want, json) => {
            status(want);
            assert_eq!(res.json(), json, "{cell}");
        }
        Expect::NoContent => {
            status(StatusCode::NO_CONTENT);
            assert!(res.body.is_empty(), "{cell}: {body}");
        }
        Expect::Receipt(want, id) => {
            status(want);
            let got = res.json();
            let n = got["data"]["id"]
                .as_i64()
                .unwrap_or_else(|| panic!("{cell}: no id: {got}"));
            if let Some(id) = id {
                assert_eq!(n, id, "{cell}");
            }
            assert_eq!(got, json!({"data": {"id": n}}), "{cell}: only the id");
            return (want == StatusCode::CREATED).then_some(n);
        }
        Expect::AsShow(want, show) => {
            status(want);
            let got = res.json();
            let id = got["data"]["id"]
                .as_i64()
                .unwrap_or_else(|| panic!("{cell}: no id: {got}"));
            let query = path.find('?').map_or("", |at| &path[at..]);
            let target = match show {
                Show::Same => path.to_owned(),
                Show::NewItem => format!("{}{query}", item(id)),
                Show::NewFile => file(id),
            };
            let shown = get(app, role, &target).await;
            assert_eq!(shown.status, StatusCode::OK, "{cell}: GET {target}");
            assert_eq!(got, shown.json(), "{cell}: renders as GET {target} does");
            return (want == StatusCode::CREATED).then_some(id);
        }
        Expect::Like(want, other) => {
            status(want);
            let shown = get(app, role, &other).await;
            assert_eq!(shown.status, want, "{cell}: GET {other}");
            assert_eq!(res.json(), shown.json(), "{cell}: answers as GET {other}");
        }
        Expect::List(ids) => {
            status(StatusCode::OK);
            let got = res.json();
            let mut want = ids.clone();
            want.sort_unstable();
            assert_eq!(listed_ids(cell, &got), want, "{cell}: {got}");
            assert_eq!(got["meta"]["total"], json!(ids.len()), "{cell}: total");
        }
        Expect::Total(n) => {
            status(StatusCode::OK);
            assert_eq!(res.json()["meta"]["total"], json!(n), "{cell}: total");
        }
        Expect::Resource(id, checks) => {
            status(StatusCode::OK);
            let got = res.json();
            assert_eq!(got["data"]["id"], json!(id), "{cell}");
            for (pointer, value) in checks {
                assert_eq!(
                    got.pointer(pointer),
                    Some(&value),
                    "{cell}: {pointer}: {got}"
                );
            }
        }
        Expect::Fields(names) => {
            status(StatusCode::OK);
            let got = res.json();
            let listed: Vec<&str> = got["data"]["fields"]
                .as_array()
                .unwrap()
                .iter()
                .map(|f| f["name"].as_str().unwrap())
                .collect();
            assert_eq!(listed, names, "{cell}");
        }
        Expect::Bytes => {
            status(StatusCode::OK);
            assert!(!res.body.is_empty(), "{cell}");
        }
        Expect::Invalid(keys) => {
            status(StatusCode::UNPROCESSABLE_ENTITY);
            let got = res.json();
            assert_eq!(got["message"], "The given data was invalid.", "{cell}");
            let named: Vec<&str> = got["errors"]
                .as_object()
                .unwrap()
                .keys()
                .map(String::as_str)
                .collect();
            assert_eq!(named, keys, "{cell}: {got}");
        }
    }
    None
}

/// Uploads the fixture files as admin: the public file, the private one (in the private folder,
/// with a title), one public bin per files-deleting role; points C at the private file and D at
/// the public one.
async fn world(app: &TestApp) -> World {
    let root = get_admin(app, "/api/v1/files").await;
    let vault = root["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["filename"] == "SENTINEL-VAULT")
        .and_then(|f| f["id"].as_i64())
        .expect("the private folder");
    let public = app
        .upload_file(Some("admin"), "report-public.png", &png(4, 4))
        .await["id"]
        .as_i64()
        .unwrap();
    let res = app
        .upload(
            Some("admin"),
            &[
                Part::text("parent_id", &vault.to_string()),
                Part::file("report-SENTINEL-PRIVATE.png", "image/png", &png(4, 4)),
            ],
        )
        .await;
    assert_eq!(res.status, StatusCode::CREATED);
    let private = res.json()["data"]["id"].as_i64().unwrap();
    let titled = app
        .json(
            Method::PATCH,
            Some("admin"),
            &file(private),
            json!({"title": "SENTINEL-PRIVATE-TITLE"}),
        )
        .await;
    assert_eq!(titled.status, StatusCode::OK);
    assert_eq!(titled.json()["data"]["access"], "private");
    let mut file_bins = Vec::new();
    for role in Role::ALL.into_iter().filter(|r| r.files_delete()) {
        let name = format!("FILE-BIN-{}.png", role.name());
        let id = app.upload_file(Some("admin"), &name, &png(4, 4)).await["id"]
            .as_i64()
            .unwrap();
        file_bins.push((role, id));
    }
    for (id, cover) in [(C, private), (D, public)] {
        let res = app
            .json(
                Method::PATCH,
                Some("admin"),
                &item(id),
                json!({"data": {"cover": cover}}),
            )
            .await;
        assert_eq!(res.status, StatusCode::OK, "{:?}", text(&res));
    }
    let all = get_admin(app, ITEMS).await;
    assert_eq!(
        listed_ids("admin", &all),
        (A..=BIN_FILTERED).collect::<Vec<_>>()
    );
    assert_eq!(all["data"][1]["data"]["title"], "SENTINEL-DRAFT-TITLE");
    World {
        collections: get_admin(app, "/api/v1/collections").await,
        vault,
        public,
        private,
        file_bins,
    }
}

async fn get_admin(app: &TestApp, path: &str) -> Value {
    let res = app.get_as("admin", path).await;
    assert_eq!(res.status, StatusCode::OK, "admin GET {path}");
    res.json()
}

#[actix_web::test]
async fn every_endpoint_discloses_to_every_role_only_what_its_reads_see() {
    let app = TestApp::new(manifest()).await;
    let world = world(&app).await;
    let private_before = get_admin(&app, &file(world.private)).await;
    let vault_before = get_admin(&app, &file(world.vault)).await;
    let draft_before = get_admin(&app, &format!("{}?include_all_translations=1", item(B))).await;

    let mut cells = 0;
    let mut created_items = 0;
    for case in cases() {
        for role in Role::ALL {
            let Some(path) = (case.path)(role, &world) else {
                continue;
            };
            cells += 1;
            let cell = format!("[{} {} {path}]", role.name(), case.method);
            let res = send(&app, &world, role, &case, &path).await;
            assert_discloses_nothing(&cell, role, &res, case.names_fields);
            let expect = (case.expect)(role, &world);
            if check(&app, role, &cell, &path, &res, expect)
                .await
                .is_some()
                && path.starts_with(ITEMS)
            {
                created_items += 1;
            }
        }
    }
    assert!(cells > 400, "{cells} cells");

    // Nothing a refused write named was written; the private file, its folder and the draft
    // are as they were; the bins are gone, each once.
    assert_eq!(get_admin(&app, &file(world.private)).await, private_before);
    assert_eq!(get_admin(&app, &file(world.vault)).await, vault_before);
    let draft = get_admin(&app, &format!("{}?include_all_translations=1", item(B))).await;
    assert_eq!(draft["data"]["data"], draft_before["data"]["data"]);
    let items = get_admin(&app, ITEMS).await;
    assert_eq!(
        items["meta"]["total"],
        json!(7 - 3 + created_items),
        "{items}"
    );
    // create-only, field-rules, filtered: two creates each; field-rules' notes and filtered's
    // draft are refused.
    assert_eq!(created_items, 7);
    for id in [BIN_DELETE_ONLY, BIN_FIELD_RULES, BIN_FILTERED] {
        let res = app.get_as("admin", &item(id)).await;
        assert_eq!(res.status, StatusCode::NOT_FOUND, "bin item {id}");
    }
    for (_, id) in &world.file_bins {
        let res = app.get_as("admin", &file(*id)).await;
        assert_eq!(res.status, StatusCode::NOT_FOUND, "bin file {id}");
    }
    let vault = get_admin(&app, &format!("/api/v1/files?parent_id={}", world.vault)).await;
    let uploaders = Role::ALL.iter().filter(|r| r.files_create()).count();
    assert_eq!(vault["meta"]["total"], json!(1 + uploaders), "{vault}");
}
