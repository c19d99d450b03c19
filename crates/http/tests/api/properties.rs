//! Property: whatever a role's field rules, read grants, item filters and file grants, and whatever
//! the request's `include`, locale and translation flags, no response (collection, list, show,
//! nested expansions) ever shows a field, a related item or a file the role may not read.

use std::collections::{BTreeMap, BTreeSet};

use actix_web::http::StatusCode;
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, TestRunner};
use serde_json::{Value, json};
use vellum_storage::files::{NewFile, Visibility, create_file, create_folder};

use crate::support::{TestApp, op, post_item};

/// Generated cases (fixed, deterministic seed: failures reproduce).
const CASES: usize = 24;

const POSTS: [&str; 8] = [
    "title", "body", "views", "cover", "author", "friends", "links", "secret",
];
const PEOPLE: [&str; 5] = ["name", "email", "photo", "boss", "notes"];
const INCLUDE: [&str; 9] = [
    "files", "users", "author", "friends", "links", "boss", "secret", "Author", "bogus",
];

/// One random role and one random read request.
#[derive(Debug, Clone)]
struct Case {
    posts_fields: Vec<bool>,
    posts_filter: bool,
    people_grant: bool,
    people_fields: Vec<bool>,
    people_filter: bool,
    files_read: bool,
    files_private: bool,
    include: Vec<bool>,
    locale: Option<&'static str>,
    all_translations: bool,
}

fn case_strategy() -> impl Strategy<Value = Case> {
    (
        proptest::collection::vec(any::<bool>(), POSTS.len()),
        any::<bool>(),
        proptest::bool::weighted(0.75),
        proptest::collection::vec(proptest::bool::weighted(0.6), PEOPLE.len()),
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
        proptest::collection::vec(proptest::bool::weighted(0.5), INCLUDE.len()),
        prop_oneof![Just(None), Just(Some("en")), Just(Some("de"))],
        proptest::bool::weighted(0.25),
    )
        .prop_map(
            |(
                posts_fields,
                posts_filter,
                people_grant,
                people_fields,
                people_filter,
                files_read,
                files_private,
                include,
                locale,
                all_translations,
            )| Case {
                posts_fields,
                posts_filter,
                people_grant,
                people_fields,
                people_filter,
                files_read,
                files_private,
                include,
                locale,
                all_translations,
            },
        )
}

impl Case {
    fn readable(&self, slug: &str) -> Vec<&'static str> {
        let (names, flags): (&[&'static str], &[bool]) = match slug {
            "posts" => (&POSTS, &self.posts_fields),
            "people" if self.people_grant => (&PEOPLE, &self.people_fields),
            _ => return Vec::new(),
        };
        names
            .iter()
            .zip(flags)
            .filter(|(_, r)| **r)
            .map(|(n, _)| *n)
            .collect()
    }

    fn hidden(&self, slug: &str) -> Vec<&'static str> {
        let names: &[&'static str] = if slug == "posts" { &POSTS } else { &PEOPLE };
        let readable = self.readable(slug);
        names
            .iter()
            .filter(|n| !readable.contains(n))
            .copied()
            .collect()
    }

    fn includes(&self, token: &str) -> bool {
        INCLUDE
            .iter()
            .zip(&self.include)
            .any(|(t, on)| *on && *t == token)
    }

    /// The role as a manifest entry.
    fn role(&self, name: &str) -> Value {
        let rules = |names: &[&str], flags: &[bool]| -> Value {
            let fields: serde_json::Map<String, Value> = names
                .iter()
                .zip(flags)
                .map(|(n, read)| ((*n).to_owned(), json!({"read": *read})))
                .collect();
            Value::Object(fields)
        };
        let mut posts =
            json!({"read": true, "rules": {"fields": rules(&POSTS, &self.posts_fields)}});
        if self.posts_filter {
            posts["rules"]["item_filter"] = json!({"views": {"_gte": 2}});
        }
        let mut permissions = json!({"posts": posts});
        if self.people_grant {
            let mut people =
                json!({"read": true, "rules": {"fields": rules(&PEOPLE, &self.people_fields)}});
            if self.people_filter {
                people["rules"]["item_filter"] = json!({"name": "alice"});
            }
            permissions["people"] = people;
        }
        json!({
            "name": name,
            "collection_permissions": permissions,
            "file_permissions": {"read": self.files_read, "read_private": self.files_private}
        })
    }

    fn query(&self) -> String {
        let tokens: Vec<&str> = INCLUDE
            .iter()
            .zip(&self.include)
            .filter(|(_, on)| **on)
            .map(|(t, _)| *t)
            .collect();
        let mut params = vec![format!("include={}", tokens.join(","))];
        if let Some(locale) = self.locale {
            params.push(format!("locale={locale}"));
        }
        if self.all_translations {
            params.push("include_all_translations=true".to_owned());
        }
        params.join("&")
    }
}

fn project() -> Value {
    json!({
        "settings": {"content_locales": ["en", "de"], "default_locale": "en"},
        "collections": [
            {"slug": "people", "name": "People", "fields": [
                {"name": "name", "type": "string", "settings": {}},
                {"name": "email", "type": "string", "settings": {}},
                {"name": "photo", "type": "image", "settings": {}},
                {"name": "boss", "type": "many_to_one", "settings": {"related_collection": "people"}},
                {"name": "notes", "type": "textarea", "translatable": true, "settings": {}}
            ]},
            {"slug": "posts", "name": "Posts", "fields": [
                {"name": "title", "type": "string", "translatable": true, "settings": {}},
                {"name": "body", "type": "markdown", "settings": {}},
                {"name": "views", "type": "number", "settings": {}},
                {"name": "cover", "type": "image", "settings": {}},
                {"name": "author", "type": "many_to_one", "settings": {"related_collection": "people"}},
                {"name": "friends", "type": "many_to_many", "settings": {"related_collection": "people"}},
                {"name": "links", "type": "m2a", "settings": {"allowed_collections": ["people", "posts"]}},
                {"name": "secret", "type": "textarea", "settings": {}}
            ]}
        ],
        "api_keys": [{"name": "admin-key", "role": "super-admin"}]
    })
}

/// What a string field of `slug` holds: a marker that must never appear when the field is hidden.
fn marker(slug: &str, field: &str, n: usize) -> String {
    format!("MARK-{slug}-{field}-{n}")
}

/// Ids of the seeded world, and which items each filter admits.
struct World {
    people_cid: i64,
    posts_cid: i64,
    alice: i64,
    people: Vec<i64>,
    posts: Vec<i64>,
    /// Posts with views >= 2.
    posts_in_filter: BTreeSet<i64>,
}

async fn seed(app: &TestApp) -> World {
    let conn = &app.db.conn;
    let vault = create_folder(
        conn,
        &crate::support::op(vellum_policy::FileAction::Create),
        None,
        "vault",
        Some(Visibility::Private),
    )
    .await
    .unwrap();
    let mut files = Vec::new();
    for (parent, name) in [
        (None, "PUBLICFILE.jpg"),
        (Some(vault.id), "PRIVATEFILE.jpg"),
    ] {
        let stored = create_file(
            conn,
            &op(vellum_policy::FileAction::Create),
            NewFile {
                parent_id: parent,
                filename: name.to_owned(),
                mime_type: Some("image/jpeg".to_owned()),
                extension: Some("jpg".to_owned()),
                filesize: Some(10),
                width: Some(1),
                height: Some(1),
                content_hash: None,
                storage_key: None,
                title: None,
            },
        )
        .await
        .unwrap();
        files.push(stored.id);
    }
    app.state.invalidate().await;
    let cid = |body: Value, slug: &str| {
        body["data"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["slug"] == slug)
            .unwrap()["id"]
            .as_i64()
            .unwrap()
    };
    let collections = app.get_as("admin-key", "/api/v1/collections").await.json();
    let people_cid = cid(collections.clone(), "people");
    let posts_cid = cid(collections, "posts");

    let person = |n: usize, name: &str, boss: Option<i64>| {
        json!({
            "name": format!("{} {name}", marker("people", "name", n)),
            "email": marker("people", "email", n),
            "photo": files[n % 2],
            "boss": boss,
            "notes": {"en": marker("people", "notes", n), "de": format!("{} de", marker("people", "notes", n))}
        })
    };
    let alice = post_item(app, "people", person(0, "alice", None)).await;
    let bob = post_item(app, "people", person(1, "bob", Some(alice))).await;
    let carol = post_item(app, "people", person(2, "carol", Some(bob))).await;
    let people = vec![alice, bob, carol];

    let mut posts = Vec::new();
    let mut posts_in_filter = BTreeSet::new();
    for n in 0..4_usize {
        let views = i64::try_from(n).unwrap() + 1;
        let mut links = vec![
            json!({"related_collection_id": people_cid, "related_item_id": people[n % 3]}),
            json!({"related_collection_id": people_cid, "related_item_id": people[(n + 1) % 3]}),
        ];
        if let Some(previous) = posts.last() {
            links.push(json!({"related_collection_id": posts_cid, "related_item_id": previous}));
        }
        let id = post_item(
            app,
            "posts",
            json!({
                "title": {"en": marker("posts", "title", n), "de": format!("{} de", marker("posts", "title", n))},
                "body": marker("posts", "body", n),
                "views": views,
                "cover": files[(n + 1) % 2],
                "author": people[n % 3],
                "friends": [people[(n + 1) % 3], people[(n + 2) % 3]],
                "links": links,
                "secret": marker("posts", "secret", n)
            }),
        )
        .await;
        if views >= 2 {
            posts_in_filter.insert(id);
        }
        posts.push(id);
    }
    World {
        people_cid,
        posts_cid,
        alice,
        people,
        posts,
        posts_in_filter,
    }
}

/// What one check knows about the role.
struct Ctx<'a> {
    case: &'a Case,
    world: &'a World,
    label: String,
}

impl Ctx<'_> {
    fn slug_of(&self, cid: i64) -> &'static str {
        if cid == self.world.people_cid {
            "people"
        } else if cid == self.world.posts_cid {
            "posts"
        } else {
            panic!("{}: unknown collection id {cid}", self.label)
        }
    }

    /// May the role see item `id` of `slug` (grant and item filter)?
    fn visible(&self, slug: &str, id: i64) -> bool {
        match slug {
            "posts" => !self.case.posts_filter || self.world.posts_in_filter.contains(&id),
            "people" => {
                self.case.people_grant && (!self.case.people_filter || id == self.world.alice)
            }
            _ => false,
        }
    }

    /// Whether `value` is an expanded (nested) resource.
    fn nested<'v>(&self, value: &'v Value) -> Option<&'v Value> {
        value
            .as_object()
            .filter(|o| o.contains_key("data"))
            .map(|_| value)
    }

    /// Checks one resource of `slug` and, at depth 0, its expansions.
    fn check_item(&self, slug: &str, item: &Value, depth: usize) {
        let label = &self.label;
        let obj = item
            .as_object()
            .unwrap_or_else(|| panic!("{label}: not a resource: {item}"));
        assert_eq!(obj.len(), 9, "{label}: nine keys: {item}");
        let id = item["id"].as_i64().unwrap();
        assert!(
            self.visible(slug, id),
            "{label}: {slug} {id} is not visible to the role: {item}"
        );
        let data = item["data"].as_object().unwrap();
        let keys: BTreeSet<&str> = data.keys().map(String::as_str).collect();
        let readable: BTreeSet<&str> = self.case.readable(slug).into_iter().collect();
        assert_eq!(
            keys, readable,
            "{label}: data keys of {slug} {id} at depth {depth}"
        );
        let expand = |field: &str| depth == 0 && self.case.includes(field);
        for (field, value) in data {
            match (slug, field.as_str()) {
                ("posts", "author") | ("people", "boss") => {
                    self.check_link(
                        field,
                        value,
                        ("people", value.as_i64()),
                        expand(field),
                        depth,
                    );
                }
                ("posts", "friends") => {
                    for entry in value.as_array().unwrap() {
                        match entry.get("item") {
                            Some(nested) => {
                                assert!(
                                    expand(field),
                                    "{label}: {field} expanded at depth {depth}"
                                );
                                assert_eq!(entry.as_object().unwrap().len(), 2, "{label}: {entry}");
                                self.check_item("people", nested, depth + 1);
                            }
                            None => {
                                let target = entry["related_item_id"].as_i64().unwrap();
                                assert!(
                                    !(expand(field) && self.visible("people", target)),
                                    "{label}: visible friend {target} left lean with include"
                                );
                            }
                        }
                    }
                }
                ("posts", "links") => {
                    for entry in value.as_array().unwrap() {
                        let cid = entry["related_collection_id"].as_i64().unwrap();
                        let target_slug = self.slug_of(cid);
                        let target = entry["related_item_id"].as_i64().unwrap();
                        match entry.get("item") {
                            Some(nested) => {
                                assert!(expand(field), "{label}: links expanded at depth {depth}");
                                assert_eq!(nested["id"], target, "{label}: {entry}");
                                self.check_item(target_slug, nested, depth + 1);
                            }
                            None => {
                                assert_eq!(entry.as_object().unwrap().len(), 2, "{label}: {entry}");
                                assert!(
                                    !(expand(field) && self.visible(target_slug, target)),
                                    "{label}: visible {target_slug} {target} left lean with include"
                                );
                            }
                        }
                    }
                }
                _ => assert!(
                    self.nested(value).is_none(),
                    "{label}: {field} is not a relation: {value}"
                ),
            }
        }
    }

    fn check_link(
        &self,
        field: &str,
        value: &Value,
        target: (&str, Option<i64>),
        expand: bool,
        depth: usize,
    ) {
        let label = &self.label;
        match self.nested(value) {
            Some(nested) => {
                assert!(
                    expand,
                    "{label}: {field} expanded at depth {depth}: {value}"
                );
                self.check_item(target.0, nested, depth + 1);
            }
            None => {
                if let (true, Some(id)) = (expand, target.1) {
                    assert!(
                        !self.visible(target.0, id),
                        "{label}: visible {field} {id} left lean with include"
                    );
                }
            }
        }
    }

    /// No marker of a hidden field, and no file the role may not read, anywhere in `body`.
    fn check_text(&self, body: &str) {
        let label = &self.label;
        for slug in ["posts", "people"] {
            for field in self.case.hidden(slug) {
                let prefix = format!("MARK-{slug}-{field}-");
                assert!(
                    !body.contains(&prefix),
                    "{label}: hidden {slug}.{field} leaked: {body}"
                );
            }
        }
        if !self.case.files_read {
            assert!(
                !body.contains("PUBLICFILE"),
                "{label}: public file without read: {body}"
            );
        }
        if !self.case.files_private {
            assert!(
                !body.contains("PRIVATEFILE"),
                "{label}: private file without read_private: {body}"
            );
        }
    }
}

#[actix_web::test]
async fn no_response_shows_what_the_role_cannot_read() {
    let mut runner = TestRunner::new_with_rng(
        Config::with_cases(u32::try_from(CASES).unwrap()),
        proptest::test_runner::TestRng::deterministic_rng(
            proptest::test_runner::RngAlgorithm::ChaCha,
        ),
    );
    let strategy = case_strategy();
    let cases: Vec<Case> = (0..CASES)
        .map(|_| strategy.new_tree(&mut runner).unwrap().current())
        .collect();

    let mut manifest = project();
    manifest["roles"] = Value::Array(
        cases
            .iter()
            .enumerate()
            .map(|(i, c)| c.role(&format!("prop-{i}")))
            .collect(),
    );
    manifest["api_keys"].as_array_mut().unwrap().extend(
        (0..CASES).map(|i| json!({"name": format!("prop-key-{i}"), "role": format!("prop-{i}")})),
    );
    let app = TestApp::new(manifest).await;
    let world = seed(&app).await;

    for (i, case) in cases.iter().enumerate() {
        let key = format!("prop-key-{i}");
        let query = case.query();
        let ctx = Ctx {
            case,
            world: &world,
            label: format!("case {i} {case:?} ?{query}"),
        };
        let label = &ctx.label;
        let get = |path: String| {
            let app = &app;
            let key = key.clone();
            async move { app.get_as(&key, &path).await }
        };

        // The collection resource names only readable fields.
        let shown = get("/api/v1/collections/posts".to_owned()).await;
        assert_eq!(shown.status, StatusCode::OK, "{label}");
        let names: Vec<String> = shown.json()["data"]["fields"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["name"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(names, case.readable("posts"), "{label}");
        ctx.check_text(&String::from_utf8_lossy(&shown.body));
        let people_shown = get("/api/v1/collections/people".to_owned()).await;
        if case.people_grant {
            let names: Vec<String> = people_shown.json()["data"]["fields"]
                .as_array()
                .unwrap()
                .iter()
                .map(|f| f["name"].as_str().unwrap().to_owned())
                .collect();
            assert_eq!(names, case.readable("people"), "{label}");
        } else {
            assert_eq!(people_shown.status, StatusCode::FORBIDDEN, "{label}");
        }

        // List and show of posts, with the case's expansions.
        let list = get(format!("/api/v1/collections/posts/items?{query}")).await;
        assert_eq!(list.status, StatusCode::OK, "{label}: {:?}", list.json());
        ctx.check_text(&String::from_utf8_lossy(&list.body));
        let body = list.json();
        let listed: Vec<i64> = body["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["id"].as_i64().unwrap())
            .collect();
        let expected: Vec<i64> = world
            .posts
            .iter()
            .copied()
            .filter(|id| ctx.visible("posts", *id))
            .collect();
        assert_eq!(listed, expected, "{label}");
        assert_eq!(body["meta"]["total"], expected.len(), "{label}");
        let mut by_id = BTreeMap::new();
        for item in body["data"].as_array().unwrap() {
            ctx.check_item("posts", item, 0);
            by_id.insert(item["id"].as_i64().unwrap(), item.clone());
        }
        for id in &world.posts {
            let res = get(format!("/api/v1/collections/posts/items/{id}?{query}")).await;
            ctx.check_text(&String::from_utf8_lossy(&res.body));
            match by_id.get(id) {
                Some(item) => {
                    assert_eq!(res.status, StatusCode::OK, "{label}");
                    assert_eq!(res.json()["data"], *item, "{label}: show equals list");
                }
                None => assert_eq!(res.status, StatusCode::NOT_FOUND, "{label}: post {id}"),
            }
        }

        // People directly, with `boss` expansion.
        let people = get(format!("/api/v1/collections/people/items?{query}")).await;
        ctx.check_text(&String::from_utf8_lossy(&people.body));
        if case.people_grant {
            assert_eq!(people.status, StatusCode::OK, "{label}");
            let body = people.json();
            let listed: Vec<i64> = body["data"]
                .as_array()
                .unwrap()
                .iter()
                .map(|i| i["id"].as_i64().unwrap())
                .collect();
            let expected: Vec<i64> = world
                .people
                .iter()
                .copied()
                .filter(|id| ctx.visible("people", *id))
                .collect();
            assert_eq!(listed, expected, "{label}");
            for item in body["data"].as_array().unwrap() {
                ctx.check_item("people", item, 0);
            }
        } else {
            assert_eq!(people.status, StatusCode::FORBIDDEN, "{label}");
        }

        // Filtering and sorting: hidden fields are refused exactly like unknown ones.
        for field in POSTS {
            let filtered = get(format!(
                "/api/v1/collections/posts/items?filter[{field}][_nnull]=1"
            ))
            .await;
            let sorted = get(format!("/api/v1/collections/posts/items?sort=-{field}")).await;
            if case.readable("posts").contains(&field) {
                assert_eq!(
                    filtered.status,
                    StatusCode::OK,
                    "{label}: filter {field}: {:?}",
                    filtered.json()
                );
                ctx.check_text(&String::from_utf8_lossy(&filtered.body));
                assert_eq!(
                    sorted.status,
                    StatusCode::OK,
                    "{label}: sort {field}: {:?}",
                    sorted.json()
                );
                ctx.check_text(&String::from_utf8_lossy(&sorted.body));
            } else {
                let unknown =
                    get("/api/v1/collections/posts/items?filter[zz_unknown][_nnull]=1".to_owned())
                        .await;
                assert_eq!(
                    filtered.status,
                    StatusCode::UNPROCESSABLE_ENTITY,
                    "{label}: filter {field}"
                );
                assert_eq!(
                    String::from_utf8_lossy(&filtered.body),
                    String::from_utf8_lossy(&unknown.body).replace("zz_unknown", field),
                    "{label}"
                );
                assert_eq!(
                    sorted.status,
                    StatusCode::UNPROCESSABLE_ENTITY,
                    "{label}: sort {field}"
                );
                assert!(sorted.json()["errors"]["sort"].is_array(), "{label}");
            }
        }
    }
}
