//! How an item is labelled (issue 18): by one field's value (`display_field`) or by a template
//! such as `{{title}} ({{sku}})` (`display_template`), used by the options picker and labels.
//! Both must name fields the collection has: a typo would otherwise label every item by its id,
//! silently.

use crate::{CollectionSchema, ValidationErrors};

/// The field names the template's `{{name}}` placeholders name, in order (spaces inside the
/// braces are ignored: `{{ title }}` names `title`).
#[must_use]
pub fn template_placeholders(template: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = template;
    while let Some((_, after)) = rest.split_once("{{") {
        let Some((name, tail)) = after.split_once("}}") else {
            break;
        };
        out.push(name.trim());
        rest = tail;
    }
    out
}

/// The template with every placeholder naming `from` renamed to `to`.
#[must_use]
pub fn rename_placeholder(template: &str, from: &str, to: &str) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some((before, after)) = rest.split_once("{{") {
        let Some((name, tail)) = after.split_once("}}") else {
            break;
        };
        out.push_str(before);
        out.push_str("{{");
        out.push_str(if name.trim() == from { to } else { name });
        out.push_str("}}");
        rest = tail;
    }
    out.push_str(rest);
    out
}

/// Every problem with a display field and template for `schema`, keyed `display_field` and
/// `display_template`.
#[must_use]
pub fn check_display(
    schema: &CollectionSchema,
    field: Option<&str>,
    template: Option<&str>,
) -> ValidationErrors {
    let mut errors = ValidationErrors::new();
    if let Some(name) = field
        && schema.field(name).is_none()
    {
        errors.add(
            "display_field",
            format!("The display field \"{name}\" is not a field of the collection."),
        );
    }
    if let Some(template) = template {
        let unknown: Vec<String> = template_placeholders(template)
            .into_iter()
            .filter(|name| schema.field(name).is_none())
            .map(|name| format!("\"{name}\""))
            .collect();
        if !unknown.is_empty() {
            errors.add(
                "display_template",
                format!(
                    "The display template names fields the collection does not have: {}.",
                    unknown.join(", ")
                ),
            );
        }
    }
    errors
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::{FieldDef, FieldType};

    #[test]
    fn placeholders_are_found_renamed_and_checked() {
        assert_eq!(
            template_placeholders("{{title}} ({{ sku }}) {{"),
            ["title", "sku"]
        );
        assert_eq!(
            rename_placeholder("{{ title }} - {{sku}}", "title", "name"),
            "{{name}} - {{sku}}"
        );
        let schema = CollectionSchema::new(vec![
            FieldDef::new("title", FieldType::String, false, &json!({})).unwrap(),
        ])
        .unwrap();
        assert!(check_display(&schema, Some("title"), Some("{{title}}")).is_empty());
        let errors = check_display(&schema, Some("nope"), Some("{{title}} {{sku}}"));
        let map = errors.into_map();
        assert_eq!(map.len(), 2);
        assert!(map["display_template"][0].contains("\"sku\""));
    }
}
