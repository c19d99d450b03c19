//! The manifest's JSON Schema, shipped as `docs/manifest.schema.json` for editors and CI, and
//! compiled into the binary so the file on disk and the check can never disagree.

use serde_json::Value;

use crate::{Invalid, ManifestError, path};

const SCHEMA: &str = include_str!("../../../docs/manifest.schema.json");

/// Checks the shape of `manifest`; the first error (in document order) is reported.
pub(crate) fn check(manifest: &Value) -> Result<(), ManifestError> {
    check_against(manifest, None, "")
}

/// Checks `instance` against the definition `$defs/<def>` of the same schema (`collection`,
/// `field`), so the admin app's bodies get the manifest's messages; paths are prefixed by `at`.
pub(crate) fn check_def(instance: &Value, def: &str, at: &str) -> Result<(), ManifestError> {
    check_against(instance, Some(def), at)
}

fn check_against(instance: &Value, def: Option<&str>, at: &str) -> Result<(), ManifestError> {
    let mut schema: Value = serde_json::from_str(SCHEMA)
        .map_err(|e| ManifestError::invalid("", format!("the manifest schema is broken: {e}")))?;
    if let (Some(def), Value::Object(root)) = (def, &mut schema) {
        for key in ["type", "properties", "additionalProperties", "required"] {
            root.remove(key);
        }
        root.insert("$ref".into(), Value::String(format!("#/$defs/{def}")));
    }
    let validator = jsonschema::validator_for(&schema)
        .map_err(|e| ManifestError::invalid("", format!("the manifest schema is broken: {e}")))?;
    let mut errors: Vec<Invalid> = validator
        .iter_errors(instance)
        .map(|e| Invalid {
            path: path::join(at, &path::from_pointer(e.instance_path().as_str())),
            message: e.to_string(),
        })
        .collect();
    errors.sort_by(|a, b| a.path.cmp(&b.path));
    match errors.into_iter().next() {
        Some(first) => Err(ManifestError::Invalid(first)),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_contract_example_passes_and_unknown_keys_fail_with_their_path() {
        let ok = json!({
            "settings": {"content_locales": ["en", "de"], "default_locale": "en"},
            "collections": [{"slug": "articles", "name": "Articles", "fields": [
                {"name": "title", "type": "string", "translatable": true, "settings": {"required": true}}
            ]}],
            "roles": [{"name": "public", "collection_permissions": {"articles": {"read": true}}, "file_permissions": {"read": true}}],
            "api_keys": [{"name": "k", "role": "public"}],
            "folders": [{"name": "press", "parent": null, "access": "private"}],
            "items": {"articles": [{"data": {"title": "x"}}]}
        });
        check(&ok).unwrap();
        let bad = json!({"collections": [{"slug": "a", "fields": [{"name": "t", "type": "string", "colour": 1}]}]});
        let Err(ManifestError::Invalid(e)) = check(&bad) else {
            panic!("accepted");
        };
        assert_eq!(e.path, "collections[0].fields[0]");
        assert!(e.message.contains("colour"), "{}", e.message);
        // One collection alone gets the same message under its own path.
        let Err(ManifestError::Invalid(one)) = check_def(&bad["collections"][0], "collection", "")
        else {
            panic!("accepted");
        };
        assert_eq!(one.path, "fields[0]");
        assert_eq!(one.message, e.message);
    }
}
