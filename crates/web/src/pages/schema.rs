//! A collection's schema (`GET /collections/{collection}`): its fields with type, translation
//! and settings; a form to add a field (or a pack of them), one to change each field (a change
//! that touches stored values is shown as a dry run first), deletion of a field or of the
//! collection after a dry run of what goes with it.

use askama::Template;
use serde_json::{Map, Value, json};
use vellum_app::principal::Principal;
use vellum_app::schema::CollectionDefinition;
use vellum_domain::FieldType;

use crate::chrome::Chrome;
use crate::forms::FieldErrors;
use crate::paging::param;

#[derive(Debug, Clone, Template)]
#[template(path = "schema.html")]
pub struct SchemaPage {
    pub chrome: Chrome,
    pub slug: String,
    pub name: String,
    pub is_singleton: bool,
    pub fields: Vec<FieldRow>,
    pub packs: Vec<&'static str>,
    pub errors: FieldErrors,
    /// The add form as typed (after a refusal).
    pub draft: FieldDraft,
    pub notice: Option<String>,
}

/// One field as the table shows it.
#[derive(Debug, Clone)]
pub struct FieldRow {
    pub name: String,
    pub field_type: String,
    pub translatable: bool,
    /// Its settings as indented JSON (`{}` for none).
    pub settings: String,
    /// The field order with this field one place up or down (none at either end).
    pub up: Option<Vec<String>>,
    pub down: Option<Vec<String>>,
}

/// A field form's values.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldDraft {
    pub name: String,
    pub field_type: String,
    pub translatable: bool,
    pub settings: String,
}

impl SchemaPage {
    #[must_use]
    pub fn new(
        principal: &Principal,
        collection: CollectionDefinition,
        packs: &[&'static str],
        query: &str,
    ) -> Self {
        let notice = [
            ("added", "Field added: "),
            ("saved", "Field saved: "),
            ("deleted", "Field deleted: "),
            ("pack", "Pack added: "),
            ("moved", "Field moved: "),
        ]
        .iter()
        .find_map(|(key, text)| param(query, key).map(|v| format!("{text}{v}.")));
        Self {
            chrome: Chrome::new(principal, "collections"),
            slug: collection.slug,
            name: collection.name,
            is_singleton: collection.is_singleton,
            fields: {
                let order: Vec<String> = collection.fields.iter().map(|f| f.name.clone()).collect();
                let swapped = |a: usize, b: usize| {
                    let mut moved = order.clone();
                    moved.swap(a, b);
                    moved
                };
                collection
                    .fields
                    .into_iter()
                    .enumerate()
                    .map(|(at, f)| FieldRow {
                        name: f.name,
                        field_type: f.field_type,
                        translatable: f.translatable,
                        settings: serde_json::to_string_pretty(&f.settings)
                            .unwrap_or_else(|_| "{}".to_owned()),
                        up: (at > 0).then(|| swapped(at - 1, at)),
                        down: (at + 1 < order.len()).then(|| swapped(at, at + 1)),
                    })
                    .collect()
            },
            packs: packs.to_vec(),
            errors: FieldErrors::default(),
            draft: FieldDraft {
                field_type: "string".to_owned(),
                settings: "{}".to_owned(),
                ..FieldDraft::default()
            },
            notice,
        }
    }

    /// The page after a refused add: the form as typed and its problems.
    #[must_use]
    pub fn with_refusal(mut self, draft: FieldDraft, errors: FieldErrors) -> Self {
        self.draft = draft;
        self.errors = errors;
        self
    }

    /// Every field type, for the type selects.
    #[must_use]
    pub fn types(&self) -> Vec<&'static str> {
        FieldType::ALL.iter().map(|t| t.as_str()).collect()
    }

    /// Every problem, for the list above the forms (a field form's keys are manifest paths).
    #[must_use]
    pub fn problems(&self) -> Vec<String> {
        self.errors.others(&[])
    }
}

impl FieldDraft {
    /// The form as posted.
    #[must_use]
    pub fn posted(form: &[(String, String)]) -> Self {
        let last = |key: &str| {
            form.iter()
                .rev()
                .find(|(k, _)| k == key)
                .map(|(_, v)| v.clone())
                .unwrap_or_default()
        };
        Self {
            name: last("name").trim().to_owned(),
            field_type: last("type"),
            translatable: last("translatable") == "true",
            settings: last("settings"),
        }
    }

    /// The manifest's field shape: settings parsed as JSON (empty: `{}`; text that is not JSON
    /// is passed on for the use case to refuse at `settings`); no name on a change that keeps it.
    #[must_use]
    pub fn to_json(&self) -> Value {
        let settings = match self.settings.trim() {
            "" => Value::Object(Map::new()),
            text => serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_owned())),
        };
        let mut body = json!({
            "type": self.field_type,
            "translatable": self.translatable,
            "settings": settings,
        });
        if let (false, Value::Object(map)) = (self.name.is_empty(), &mut body) {
            map.insert("name".to_owned(), Value::String(self.name.clone()));
        }
        body
    }

    /// The form's fields again (a confirmation posts them once more).
    #[must_use]
    pub fn fields(&self) -> Vec<(String, String)> {
        vec![
            ("name".to_owned(), self.name.clone()),
            ("type".to_owned(), self.field_type.clone()),
            ("translatable".to_owned(), self.translatable.to_string()),
            ("settings".to_owned(), self.settings.clone()),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_field_form_is_the_manifest_shape() {
        let form: Vec<(String, String)> = [
            ("name", " subtitle "),
            ("type", "string"),
            ("translatable", "false"),
            ("translatable", "true"),
            ("settings", r#"{"required": true}"#),
        ]
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
        let draft = FieldDraft::posted(&form);
        assert_eq!(
            draft.to_json(),
            json!({"name": "subtitle", "type": "string", "translatable": true, "settings": {"required": true}})
        );
        let odd = FieldDraft {
            settings: "not json".to_owned(),
            ..FieldDraft::default()
        };
        assert_eq!(odd.to_json()["settings"], "not json");
        assert!(odd.to_json().get("name").is_none());
    }
}
