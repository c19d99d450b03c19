//! The item form (`GET …/items/new`, `GET …/items/{item}`): one widget per field, chosen by its
//! type; a translatable field has one input per content locale, shown as locale tabs. Posted
//! (create) or put with htmx (update); a refusal shows the form again with each problem next to
//! its field.

use askama::Template;
use serde_json::Value;
use vellum_app::admin_items::ItemScreen;
use vellum_app::principal::Principal;
use vellum_domain::{DateMode, FieldDef, FieldType, LocalizedText, TypeSettings};

use crate::chrome::Chrome;
use crate::forms::FieldErrors;

#[derive(Debug, Clone, Template)]
#[template(path = "item.html")]
pub struct ItemPage {
    pub chrome: Chrome,
    pub collection_name: String,
    pub list_href: String,
    /// Where the form goes: the collection's items (create) or the item (update).
    pub action: String,
    pub id: Option<i64>,
    pub deleted: bool,
    pub slug: String,
    pub locales: Vec<String>,
    pub widgets: Vec<Widget>,
    /// Problems of no shown field (the body, a unique claim across fields).
    pub problems: Vec<String>,
    /// "Saved." after an update or a creation (`?saved=1`).
    pub saved: bool,
}

/// One field's widget.
#[derive(Debug, Clone)]
pub struct Widget {
    pub name: String,
    pub label: String,
    /// The HTML control: `text`, `password`, `textarea`, `code`, `number`, `checkbox`,
    /// `select`, `choices` (checkboxes), `date`, `time`, `color`, `id`, `ids`, `list`, `json`.
    pub kind: &'static str,
    pub field_type: &'static str,
    pub required: bool,
    pub readonly: bool,
    pub note: String,
    pub options: Vec<String>,
    /// The picker offered beside the input: `items` (a relation, from the options endpoint)
    /// or `files` (an image or file field, from the file manager).
    pub picker: Option<&'static str>,
    /// The field's id (the options endpoint's `field_id`).
    pub field_id: i64,
    /// A blocks field's types and depth, as JSON for the blocks editor (`blocks.js`).
    pub blocks: Option<String>,
    /// One per content locale for a translatable field, one otherwise.
    pub inputs: Vec<Input>,
}

/// One input of a widget.
#[derive(Debug, Clone)]
pub struct Input {
    /// The element's id (labels and error messages point at it).
    pub id: String,
    /// The form name: `data[field]` or `data[field][locale]`.
    pub name: String,
    pub locale: Option<String>,
    /// The value as the control shows it (text, the JSON of a structured value).
    pub value: String,
    /// The chosen values of a list of choices, or `["true"]` for a checked box.
    pub chosen: Vec<String>,
    pub error: Option<String>,
}

impl ItemPage {
    /// The form for `screen`; `errors` and `posted` (the refused body's `data`) when it is shown
    /// again after a 422.
    #[must_use]
    pub fn new(
        principal: &Principal,
        screen: ItemScreen,
        errors: &FieldErrors,
        posted: Option<&Value>,
        saved: bool,
    ) -> Self {
        let list_href = format!("/collections/{}/items", screen.slug);
        let default_locale = screen.locales.default.clone();
        let widgets: Vec<Widget> = screen
            .fields
            .iter()
            .zip(screen.field_ids.iter().copied().chain(std::iter::repeat(0)))
            .filter(|(f, _)| !f.settings.hidden_in_form)
            .map(|(field, field_id)| {
                let value = posted
                    .and_then(|p| p.get(field.name.as_str()))
                    .or_else(|| screen.values.get(field.name.as_str()));
                let locales = &screen.locales.enabled;
                let mut w = widget(field, value, locales, &default_locale, errors);
                w.field_id = field_id;
                w
            })
            .collect();
        let shown: Vec<String> = widgets
            .iter()
            .flat_map(|w| {
                std::iter::once(w.name.clone()).chain(
                    w.inputs
                        .iter()
                        .filter_map(|i| i.locale.as_ref().map(|l| format!("{}.{l}", w.name))),
                )
            })
            .collect();
        let shown: Vec<&str> = shown.iter().map(String::as_str).collect();
        Self {
            chrome: Chrome::new(principal, "collections"),
            collection_name: screen.name,
            action: screen
                .id
                .map_or_else(|| list_href.clone(), |id| format!("{list_href}/{id}")),
            list_href,
            id: screen.id,
            deleted: screen.deleted,
            slug: screen.slug,
            locales: screen.locales.enabled,
            widgets,
            problems: errors.others(&shown),
            saved,
        }
    }

    /// Whether a blocks field is shown (the blocks editor's module is loaded).
    #[must_use]
    pub fn has_blocks(&self) -> bool {
        self.widgets
            .iter()
            .any(|w| w.blocks.is_some() && !w.readonly)
    }

    /// Whether a field offers a picker (its module is loaded).
    #[must_use]
    pub fn has_pickers(&self) -> bool {
        self.widgets
            .iter()
            .any(|w| w.picker.is_some() && !w.readonly)
    }

    /// Whether any field has one input per locale (the locale tabs are shown).
    #[must_use]
    pub fn translated(&self) -> bool {
        self.widgets.iter().any(|w| w.inputs.len() > 1)
    }
}

impl Widget {
    /// The `type` and hints of a one-line input (static text, so it is not escaped).
    #[must_use]
    pub fn input_attributes(&self) -> &'static str {
        match self.kind {
            "password" => {
                r#"type="password" autocomplete="new-password" placeholder="Leave empty to keep the current value""#
            }
            "number" => r#"type="number" step="any""#,
            "date" => r#"type="date""#,
            "time" => r#"type="time" step="1""#,
            "id" => r#"type="number" min="1" step="1" inputmode="numeric" placeholder="An id""#,
            "ids" => r#"type="text" inputmode="numeric" placeholder="Ids, separated by commas""#,
            "list" => r#"type="text" placeholder="Values, separated by commas""#,
            "color" => r##"type="text" placeholder="#RRGGBB" spellcheck="false""##,
            _ => r#"type="text""#,
        }
    }
}

impl Widget {
    /// The picker's kind as the page's module reads it.
    #[must_use]
    pub fn picker_kind(&self) -> &'static str {
        self.picker.unwrap_or_default()
    }

    /// Whether the chosen value is one image (shown beside the input, with a link to its page
    /// where its focal point is set).
    #[must_use]
    pub fn shows_image(&self) -> bool {
        self.field_type == "image" && self.kind == "id"
    }
}

impl Input {
    /// Whether `choice` is among the chosen values (or the box is checked, for `"true"`).
    #[must_use]
    pub fn has(&self, choice: &str) -> bool {
        self.chosen.iter().any(|c| c == choice)
    }
}

fn widget(
    field: &FieldDef,
    value: Option<&Value>,
    locales: &[String],
    default_locale: &str,
    errors: &FieldErrors,
) -> Widget {
    let name = field.name.as_str();
    let text = |t: &Option<LocalizedText>| {
        t.as_ref()
            .map_or_else(String::new, |t| localized(t, default_locale))
    };
    let inputs = if field.translatable {
        locales
            .iter()
            .map(|locale| {
                let key = format!("{name}.{locale}");
                input(
                    format!("f-{name}-{locale}"),
                    format!("data[{name}][{locale}]"),
                    Some(locale.clone()),
                    value.and_then(|v| v.get(locale)),
                    errors.first(&key).or_else(|| errors.first(name)),
                )
            })
            .collect()
    } else {
        vec![input(
            format!("f-{name}"),
            format!("data[{name}]"),
            None,
            value,
            errors.first(name),
        )]
    };
    let label = text(&field.settings.display_name);
    Widget {
        name: name.to_owned(),
        label: if label.is_empty() {
            name.to_owned()
        } else {
            label
        },
        kind: kind(field),
        field_type: field.field_type.as_str(),
        required: field.settings.required,
        readonly: field.settings.readonly,
        note: text(&field.settings.note),
        options: match &field.settings.kind {
            TypeSettings::Choice {
                options: Some(options),
            } => options.clone(),
            _ => Vec::new(),
        },
        picker: picker(field.field_type),
        field_id: 0,
        blocks: blocks(field, default_locale),
        inputs,
    }
}

fn input(
    id: String,
    name: String,
    locale: Option<String>,
    value: Option<&Value>,
    error: Option<&str>,
) -> Input {
    let chosen = match value {
        Some(Value::Array(list)) => list
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        Some(Value::Bool(true)) => vec!["true".to_owned()],
        _ => Vec::new(),
    };
    Input {
        id,
        name,
        locale,
        value: shown(value),
        chosen,
        error: error.map(str::to_owned),
    }
}

/// A value as its input shows it: text as is, numbers and ids written out, a list of ids or
/// words comma-separated, anything structured as JSON.
fn shown(value: Option<&Value>) -> String {
    match value {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        Some(Value::Bool(b)) => b.to_string(),
        Some(Value::Array(list))
            if list.iter().all(|v| v.is_number() || v.is_string()) && !list.is_empty() =>
        {
            list.iter()
                .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned))
                .collect::<Vec<_>>()
                .join(", ")
        }
        Some(Value::Array(list)) if list.is_empty() => String::new(),
        Some(other) => serde_json::to_string_pretty(other).unwrap_or_default(),
    }
}

/// What the blocks editor offers for a blocks field: each block type (key, label, field names)
/// and the depth limit (nested blocks fields are edited in a block's JSON, within it).
fn blocks(field: &FieldDef, default_locale: &str) -> Option<String> {
    let TypeSettings::Blocks(settings) = &field.settings.kind else {
        return None;
    };
    let types: Vec<Value> = settings
        .block_types
        .iter()
        .map(|t| {
            let label = t
                .label
                .as_ref()
                .map_or_else(|| t.key.clone(), |l| localized(l, default_locale));
            let fields: Vec<&str> = t.fields.iter().map(|f| f.name.as_str()).collect();
            serde_json::json!({ "key": t.key, "label": label, "fields": fields })
        })
        .collect();
    Some(
        serde_json::json!({
            "types": types,
            "max_depth": settings.max_blocks_depth,
            "depth": settings.depth,
        })
        .to_string(),
    )
}

/// The picker a field's input gets: the options endpoint's items for a relation (not `m2a`,
/// whose links name a collection each), the file manager's files for an image or file field.
fn picker(field_type: FieldType) -> Option<&'static str> {
    match field_type {
        FieldType::Image | FieldType::File | FieldType::Files => Some("files"),
        FieldType::Relation
        | FieldType::ManyToOne
        | FieldType::OneToMany
        | FieldType::RelationTree
        | FieldType::RelationMany
        | FieldType::ManyToMany => Some("items"),
        _ => None,
    }
}

/// The control a field is edited with.
fn kind(field: &FieldDef) -> &'static str {
    let has_options = matches!(
        &field.settings.kind,
        TypeSettings::Choice { options: Some(o) } if !o.is_empty()
    );
    match field.field_type {
        FieldType::Hash => "password",
        FieldType::Textarea | FieldType::Wysiwyg | FieldType::Markdown => "textarea",
        FieldType::Code => "code",
        FieldType::Number | FieldType::Slider => "number",
        FieldType::Boolean => "checkbox",
        FieldType::Select | FieldType::RadioGroup if has_options => "select",
        FieldType::Multiselect | FieldType::CheckboxGroup | FieldType::CheckboxGroupTree
            if has_options =>
        {
            "choices"
        }
        FieldType::Multiselect
        | FieldType::CheckboxGroup
        | FieldType::CheckboxGroupTree
        | FieldType::Tag => "list",
        FieldType::Date => match &field.settings.kind {
            TypeSettings::Date {
                mode: DateMode::Date,
            } => "date",
            TypeSettings::Date {
                mode: DateMode::Time,
            } => "time",
            _ => "text",
        },
        FieldType::Color => "color",
        FieldType::Image | FieldType::File | FieldType::ManyToOne | FieldType::Relation
            if !field.shape().is_array() =>
        {
            "id"
        }
        FieldType::Image
        | FieldType::File
        | FieldType::Files
        | FieldType::Relation
        | FieldType::OneToMany
        | FieldType::RelationTree
        | FieldType::RelationMany
        | FieldType::ManyToOne => "ids",
        FieldType::Map | FieldType::ManyToMany | FieldType::Blocks | FieldType::M2a => "json",
        FieldType::String
        | FieldType::Autocomplete
        | FieldType::ApiAutocomplete
        | FieldType::Select
        | FieldType::RadioGroup => "text",
    }
}

/// A settings text in the default locale (or its only translation).
fn localized(text: &LocalizedText, default_locale: &str) -> String {
    match text {
        LocalizedText::Plain(s) => s.clone(),
        LocalizedText::Map(map) => map
            .iter()
            .find(|(code, _)| code.as_str() == default_locale)
            .or_else(|| map.iter().next())
            .map(|(_, s)| s.clone())
            .unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn every_type_has_a_control_and_values_show_as_text() {
        for t in FieldType::ALL {
            let field =
                FieldDef::from_json(&json!({"name": "f", "type": t.as_str(), "settings": {}}));
            if let Ok(field) = field {
                assert!(!kind(&field).is_empty(), "{t:?}");
            }
        }
        let body = FieldDef::from_json(&json!({"name": "body", "type": "blocks", "settings": {
            "max_blocks_depth": 2,
            "block_types": [{"key": "hero", "label": {"en": "Hero"}, "fields": [{"name": "title", "type": "string"}]}]
        }}))
        .unwrap();
        let spec: serde_json::Value = serde_json::from_str(&blocks(&body, "en").unwrap()).unwrap();
        assert_eq!(
            spec,
            json!({"types": [{"key": "hero", "label": "Hero", "fields": ["title"]}], "max_depth": 2, "depth": 1})
        );
        assert_eq!(kind(&body), "json");
        assert_eq!(shown(Some(&json!([1, 2]))), "1, 2");
        assert_eq!(shown(Some(&json!(["a", "b"]))), "a, b");
        assert_eq!(shown(Some(&json!(null))), "");
        assert!(shown(Some(&json!({"type": "Point"}))).contains("\"type\": \"Point\""));
    }
}
