//! Cache tags on public responses, so a CDN in front of Vellum can purge by collection, item or
//! file instead of everything (issue 24): `Surrogate-Key` (space-separated: Fastly, Varnish xkey)
//! and `Cache-Tag` (comma-separated: Cloudflare, Bunny) carry the same tags.
//!
//! | response | tags |
//! |---|---|
//! | every public answer | `vellum` |
//! | `/collections` | `collections` |
//! | `/collections/{slug}` | `collection:{slug}` |
//! | `/collections/{slug}/items` | `collection:{slug}`, `items:{slug}` |
//! | `/collections/{slug}/items/{id}` | `collection:{slug}`, `item:{slug}:{id}` |
//! | `/files…`, `/files/{id}…` | `files`, `file:{id}` |
//!
//! With `include`, the tags of the collections the collection's relation fields point at are
//! added (`collection:{related}`), so a write to an author purges the articles that embed it.
//! Webhook payloads carry the tags a change affects (`surrogate_keys`), which is the purge hook:
//! a receiver forwards them to the CDN's purge-by-tag API.

use actix_web::HttpMessage as _;
use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{HeaderName, HeaderValue};
use actix_web::http::{Method, StatusCode};
use actix_web::middleware::Next;
use vellum_app::Actor;

/// Adds `Surrogate-Key` and `Cache-Tag` to successful GET and HEAD answers under `/api/v1`.
pub async fn tag(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    let wanted = matches!(*req.method(), Method::GET | Method::HEAD);
    // Read under the borrow of the extensions: no copy of the actor on the hot path.
    let tags = wanted
        .then(|| {
            tags(
                req.path(),
                req.query_string(),
                req.extensions().get::<Actor>(),
            )
        })
        .flatten();
    let mut res = next.call(req).await?;
    let ok = matches!(
        res.status(),
        StatusCode::OK | StatusCode::PARTIAL_CONTENT | StatusCode::NOT_MODIFIED
    );
    if let (true, Some(tags)) = (ok, tags) {
        let headers = res.headers_mut();
        if let Ok(value) = HeaderValue::from_str(&tags.join(" ")) {
            headers.insert(HeaderName::from_static("surrogate-key"), value);
        }
        if let Ok(value) = HeaderValue::from_str(&tags.join(",")) {
            headers.insert(HeaderName::from_static("cache-tag"), value);
        }
    }
    Ok(res)
}

/// The tags of a public path, `None` for paths that are not content (the description).
#[must_use]
pub fn tags(path: &str, query: &str, actor: Option<&Actor>) -> Option<Vec<String>> {
    let rest = path.strip_prefix("/api/v1/")?;
    let segments: Vec<&str> = rest.split('/').collect();
    let mut tags = vec!["vellum".to_owned()];
    match segments.as_slice() {
        ["collections"] => tags.push("collections".to_owned()),
        ["collections", slug] => tags.push(format!("collection:{}", clean(slug)?)),
        ["collections", slug, "items"] => {
            let slug = clean(slug)?;
            tags.push(format!("collection:{slug}"));
            tags.push(format!("items:{slug}"));
            related(&mut tags, slug, query, actor);
        }
        ["collections", slug, "items", id] => {
            let slug = clean(slug)?;
            let id: i64 = id.parse().ok()?;
            tags.push(format!("collection:{slug}"));
            tags.push(format!("item:{slug}:{id}"));
            related(&mut tags, slug, query, actor);
        }
        ["files"] => tags.push("files".to_owned()),
        ["files", id, ..] => {
            let id: i64 = id.parse().ok()?;
            tags.push("files".to_owned());
            tags.push(format!("file:{id}"));
        }
        _ => return None,
    }
    Some(tags)
}

/// A slug as it may appear in a header (the router already matched it; anything else is not a
/// collection that exists).
fn clean(slug: &str) -> Option<&str> {
    (!slug.is_empty()
        && slug.len() <= 64
        && slug
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-'))
    .then_some(slug)
}

/// With `include`, the collections the relation fields point at.
fn related(tags: &mut Vec<String>, slug: &str, query: &str, actor: Option<&Actor>) {
    if !query.split('&').any(|pair| pair.starts_with("include=")) {
        return;
    }
    let Some(snapshot) = actor.map(|a| &a.snapshot) else {
        return;
    };
    let Some(collection) = snapshot.collection(slug) else {
        return;
    };
    for field in collection.schema().fields() {
        if let Some(target) = vellum_app::render::related_collection(field)
            .and_then(|id| snapshot.collection_by_id(id))
        {
            let tag = format!("collection:{}", target.slug.as_str());
            if !tags.contains(&tag) {
                tags.push(tag);
            }
        }
    }
    tags.push("files".to_owned());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_get_their_tags() {
        assert_eq!(
            tags("/api/v1/collections/articles/items/7", "", None).unwrap(),
            ["vellum", "collection:articles", "item:articles:7"]
        );
        assert_eq!(
            tags("/api/v1/collections/articles/items", "page=2", None).unwrap(),
            ["vellum", "collection:articles", "items:articles"]
        );
        assert_eq!(
            tags("/api/v1/files/41/transforms/thumb", "", None).unwrap(),
            ["vellum", "files", "file:41"]
        );
        assert_eq!(
            tags("/api/v1/collections", "", None).unwrap(),
            ["vellum", "collections"]
        );
        assert!(tags("/api/v1/openapi.json", "", None).is_none());
        assert!(tags("/api/v1/collections/a%20b/items", "", None).is_none());
        assert!(tags("/api/v1/collections/articles/items/x", "", None).is_none());
    }
}
