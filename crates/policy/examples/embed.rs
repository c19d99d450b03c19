//! Another Rust service embedding Vellum's access model: given the same role definitions as the
//! Vellum server (here, the manifest JSON), it answers "may this caller do that?" identically,
//! without a database or HTTP stack.
//!
//! Run with `cargo run -p vellum-policy --example embed`.
#![allow(clippy::print_stdout)]

use serde_json::json;
use vellum_policy::{
    ApiKeySecret, ClientAddr, CollectionAction, IpAllowlist, ItemRef, KeyRecord, OriginAllowlist,
    RequestFacts, Role, Visibility, authenticate,
};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let editor = Role::from_json(
        "editor",
        &json!({
            "collection_permissions": {"articles": {"read": true, "update": true, "rules": {
                "fields": {"internal_notes": {"read": false}},
                "item_filter": {"status": {"_eq": "published"}}
            }}},
            "file_permissions": {"read": true}
        }),
    )?;
    let gate = OriginAllowlist::parse("https://app.example.com")?;

    // A key as the server stores it: id and digest only.
    let secret = ApiKeySecret::generate()?;
    let record = KeyRecord {
        key_id: secret.key_id(),
        digest: secret.digest(),
        role: editor.name.clone(),
        ip_allowlist: IpAllowlist::parse(["127.0.0.1/32"])?,
        expires_at: None,
        revoked: false,
    };
    let facts = RequestFacts {
        origin: None,
        bearer: Some(secret.expose()),
        client: ClientAddr::Known("127.0.0.1".parse()?),
        now: time::OffsetDateTime::now_utc(),
    };
    match authenticate(&gate, &facts, Some(&record)) {
        Ok(who) => println!("authenticated as role {}", who.role_name()),
        Err(rejected) => println!("rejected: {}", rejected.message()),
    }

    let articles = "articles".parse()?;
    println!("{}", editor.may(&articles, CollectionAction::Delete));
    let mut item = json!({"title": "Hello", "status": "draft", "internal_notes": "wip"});
    if let Some(data) = item.as_object_mut() {
        println!("{}", editor.may_see_item(&articles, &ItemRef::data(data)));
        editor.field_policy(&articles).redact(data);
    }
    println!("redacted item: {item}");
    println!("{}", editor.may_read_file(Visibility::Private));
    Ok(())
}
