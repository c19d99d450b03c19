//! The OpenAPI description: served at `/api/v1/openapi.json`, and every response the black-box
//! suite receives is checked against it ([`check`], called by `support::send_to`), so the
//! description cannot drift from what the handlers answer.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use actix_web::http::{Method, StatusCode};
use serde_json::{Value, json};

use crate::support::TestApp;

fn document() -> &'static Value {
    static DOC: OnceLock<Value> = OnceLock::new();
    DOC.get_or_init(vellum_http::openapi::document)
}

/// The path template of the description matching `path` (every key is a full path: the public
/// API's start with `/api/v1`), literal segments preferred over parameters.
fn template(path: &str) -> Option<&'static str> {
    let segments: Vec<&str> = path.split('/').collect();
    let mut best: Option<(&'static str, usize)> = None;
    for key in document()["paths"].as_object()?.keys() {
        let parts: Vec<&str> = key.split('/').collect();
        if parts.len() != segments.len() {
            continue;
        }
        let mut literal = 0;
        let matches = parts.iter().zip(&segments).all(|(p, s)| {
            if p.starts_with('{') {
                !s.is_empty()
            } else {
                literal += 1;
                p == s
            }
        });
        if matches && best.is_none_or(|(_, l)| literal > l) {
            best = Some((key.as_str(), literal));
        }
    }
    best.map(|(k, _)| k)
}

/// A validator for the schema at `pointer` in the description, with its components.
fn validate(pointer: &str, body: &Value) -> Result<(), String> {
    static VALIDATORS: OnceLock<Mutex<HashMap<String, jsonschema::Validator>>> = OnceLock::new();
    let mut validators = VALIDATORS
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if !validators.contains_key(pointer) {
        let mut schema = document()
            .pointer(pointer)
            .unwrap_or_else(|| panic!("no schema at {pointer}"))
            .clone();
        schema["components"] = document()["components"].clone();
        let validator = jsonschema::draft202012::new(&schema)
            .unwrap_or_else(|e| panic!("the schema at {pointer} does not compile: {e}"));
        validators.insert(pointer.to_owned(), validator);
    }
    let errors: Vec<String> = validators[pointer]
        .iter_errors(body)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors.join("; "))
    }
}

fn escape(segment: &str) -> String {
    segment.replace('~', "~0").replace('/', "~1")
}

/// Panics unless the response is described: its status is listed for the operation, and a JSON
/// body matches the schema (an undescribed route, e.g. an unknown path's 404, is not checked).
pub fn check(method: &Method, path: &str, status: StatusCode, content_type: &str, body: &[u8]) {
    if *method == Method::OPTIONS {
        return;
    }
    let Some(template) = template(path) else {
        return;
    };
    // The admin app's HTML side (a browser's redirect to `/login`) is not part of the JSON API
    // the description covers.
    if status == StatusCode::SEE_OTHER && !path.starts_with("/api/v1") {
        return;
    }
    // Nor are its pages (the same routes rendered for a browser, issue 19).
    if !path.starts_with("/api/v1") && content_type.starts_with("text/html") {
        return;
    }
    let method_key = method.as_str().to_ascii_lowercase();
    let Some(operation) = document()["paths"][template].get(&method_key) else {
        return;
    };
    let status_key = status.as_u16().to_string();
    let mut response = operation["responses"].get(&status_key).unwrap_or_else(|| {
        panic!(
            "{method} {path} answered {status}, which the OpenAPI description does not list for \
             {method} {template}: {}",
            String::from_utf8_lossy(body)
        )
    });
    let mut pointer = format!(
        "/paths/{}/{method_key}/responses/{status_key}",
        escape(template)
    );
    if let Some(reference) = response.get("$ref").and_then(Value::as_str) {
        pointer = reference.trim_start_matches('#').to_owned();
        response = document().pointer(&pointer).unwrap();
    }
    let Some(content) = response.get("content").and_then(Value::as_object) else {
        assert!(
            body.is_empty(),
            "{method} {path} {status}: the description has no body, the response has one"
        );
        return;
    };
    if content_type.starts_with("application/json") {
        let described = content.get("application/json").unwrap_or_else(|| {
            panic!("{method} {path} {status}: JSON is not a described content type")
        });
        if described.get("schema").is_none() {
            return;
        }
        let value: Value = serde_json::from_slice(body)
            .unwrap_or_else(|e| panic!("{method} {path} {status}: not JSON: {e}"));
        let schema = format!("{pointer}/content/application~1json/schema");
        if let Err(errors) = validate(&schema, &value) {
            panic!(
                "{method} {path} {status} does not match the OpenAPI description: {errors}\n{value}"
            );
        }
    }
}

#[actix_web::test]
async fn the_description_is_served_as_json() {
    let app = TestApp::new(json!({})).await;
    let res = app.get("/api/v1/openapi.json").await;
    assert_eq!(res.status, StatusCode::OK);
    assert_eq!(res.header("content-type"), Some("application/json"));
    let doc = res.json();
    assert_eq!(doc, *document());
    assert_eq!(doc["openapi"], "3.1.0");
    for (path, method) in [
        ("/api/v1/collections", "get"),
        ("/api/v1/collections/{slug}", "get"),
        ("/api/v1/collections/{slug}/items", "get"),
        ("/api/v1/collections/{slug}/items", "post"),
        ("/api/v1/collections/{slug}/items/{id}", "get"),
        ("/api/v1/collections/{slug}/items/{id}", "patch"),
        ("/api/v1/collections/{slug}/items/{id}", "delete"),
        ("/api/v1/files", "get"),
        ("/api/v1/files", "post"),
        ("/api/v1/files/{id}", "get"),
        ("/api/v1/files/{id}", "patch"),
        ("/api/v1/files/{id}", "delete"),
        ("/api/v1/files/{id}/content", "get"),
        ("/api/v1/files/{id}/transforms/{key}", "get"),
    ] {
        assert!(doc["paths"][path][method].is_object(), "{method} {path}");
    }
}

/// The checker itself rejects what it should: a body of the wrong shape, and a status the
/// operation does not list.
#[test]
fn the_checker_rejects_drift() {
    let ok = br#"{"data":[{"id":1,"name":"A","slug":"a","is_singleton":false}]}"#;
    let ct = "application/json";
    check(&Method::GET, "/api/v1/collections", StatusCode::OK, ct, ok);
    let extra_key = br#"{"data":[{"id":1,"name":"A","slug":"a","is_singleton":false,"x":1}]}"#;
    let missing_key = br#"{"data":[{"id":1,"name":"A","slug":"a"}]}"#;
    for body in [&extra_key[..], &missing_key[..]] {
        let caught = std::panic::catch_unwind(|| {
            check(
                &Method::GET,
                "/api/v1/collections",
                StatusCode::OK,
                ct,
                body,
            );
        });
        assert!(caught.is_err(), "{}", String::from_utf8_lossy(body));
    }
    let caught = std::panic::catch_unwind(|| {
        check(
            &Method::GET,
            "/api/v1/collections",
            StatusCode::IM_A_TEAPOT,
            ct,
            b"{}",
        );
    });
    assert!(caught.is_err());
}

/// The described operations as docs rows (`| `id` | `METHOD path` |`): the public API's (paths
/// relative to `/api/v1`, as docs/api.md writes them), or the admin app's.
fn described_rows(admin: bool) -> Vec<String> {
    let methods = ["get", "put", "post", "delete", "patch"];
    let mut rows = Vec::new();
    for (key, item) in document()["paths"].as_object().unwrap() {
        let path = match key.strip_prefix("/api/v1") {
            Some(rest) if !admin => rest,
            None if admin => key.as_str(),
            _ => continue,
        };
        for (method, operation) in item.as_object().unwrap() {
            if !methods.contains(&method.as_str()) {
                continue;
            }
            let id = operation["operationId"].as_str().unwrap();
            rows.push(format!(
                "| `{id}` | `{} {path}` |",
                method.to_ascii_uppercase()
            ));
        }
    }
    rows
}

/// docs/api.md's operations table lists exactly the public API's operations (id, method, path).
#[test]
fn the_api_docs_list_every_operation() {
    let docs =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/api.md")).unwrap();
    let described = described_rows(false);
    for row in &described {
        assert!(docs.contains(row.as_str()), "docs/api.md lacks {row}");
    }
    let documented = docs
        .lines()
        .filter(|l| {
            l.starts_with("| `")
                && ["` | `GET ", "` | `POST ", "` | `PATCH ", "` | `DELETE "]
                    .iter()
                    .any(|m| l.contains(m))
        })
        .count();
    assert_eq!(
        documented,
        described.len(),
        "docs/api.md lists other operations"
    );
}

/// docs/admin.md lists every admin operation (id, method, path), each in its area's table.
#[test]
fn the_admin_docs_list_every_operation() {
    let docs = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/admin.md"))
        .unwrap();
    for row in described_rows(true) {
        assert!(docs.contains(row.as_str()), "docs/admin.md lacks {row}");
    }
}
