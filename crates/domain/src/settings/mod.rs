//! Typed field settings. Settings are free-form in the spec, so the raw object is kept whole
//! (unknown keys survive a round trip); the keys the server acts on are parsed once into types, and
//! a malformed known key is an error at schema time rather than a surprise at write time.

mod blocks;
mod conditions;
mod rules;

use serde_json::{Map, Value};

pub use blocks::{BlockType, BlocksSettings};
pub use conditions::{ConditionOperator, ConditionRule, Conditions};
pub use rules::{RuleOperator, ValidationRule};

use crate::locale::LocalizedText;
use crate::{CollectionSlug, DomainError, FieldName, FieldType, is_truthy};

/// `date_mode` of a `date` field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DateMode {
    Date,
    Time,
    #[default]
    Datetime,
}

/// `geometry_mode` of a `map` field. Only Point and MultiPoint exist in the spec.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum GeometryMode {
    #[default]
    Point,
    Multipoint,
}

/// Default `max_links`: how many links (related items, m2a entries or files) one value of a
/// field that holds several may carry. A value is stored whole, mirrored as link rows and
/// returned whole in every list, so without a bound one write could make every read of a page
/// as large as the request body limit allows (hundreds of thousands of links).
pub const DEFAULT_MAX_LINKS: u16 = 1000;
/// Ceiling of `max_links`: the largest value a field may declare.
pub const MAX_LINKS_CEILING: u16 = 10_000;

/// `layout_width`, a form concern kept typed so a typo is caught when the schema is saved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LayoutWidth {
    Half,
    #[default]
    Full,
    Fill,
}

/// Settings shared by every relation type.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RelationSettings {
    /// The related collection as the server stores it.
    pub related_collection_id: Option<i64>,
    /// The related collection by slug, as manifests may write it before the server resolves ids.
    pub related_collection: Option<CollectionSlug>,
    pub display_field: Option<String>,
    pub display_template: Option<String>,
    /// A filter in the item filter dialect restricting which items may be picked (kept as JSON:
    /// the policy crate owns the dialect).
    pub filter: Option<Value>,
    pub allow_duplicates: bool,
}

/// The type of a many_to_many junction field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JunctionFieldType {
    String,
    Number,
    Boolean,
}

/// One entry of many_to_many `junction_fields`: the mini-schema for per-link `meta`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JunctionField {
    pub name: FieldName,
    pub field_type: JunctionFieldType,
}

/// The settings that only some types have.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum TypeSettings {
    #[default]
    None,
    /// select, radio_group, multiselect, checkbox_group, checkbox_group_tree: the allowed values
    /// when `options` is given (nested `children` of a tree are flattened).
    Choice {
        options: Option<Vec<String>>,
    },
    Date {
        mode: DateMode,
    },
    Map {
        mode: GeometryMode,
    },
    Image {
        allow_multiple: bool,
    },
    /// relation, many_to_one, one_to_many, relation_tree, relation_many
    Relation(RelationSettings),
    ManyToMany {
        relation: RelationSettings,
        junction_fields: Vec<JunctionField>,
    },
    M2a {
        allowed_collection_ids: Vec<i64>,
        /// Slugs as manifests may write them (`allowed_collections`) before ids are resolved.
        allowed_collections: Vec<CollectionSlug>,
        allow_duplicates: bool,
    },
    Blocks(BlocksSettings),
}

/// Where a field definition sits: at the top of a collection, or inside a block type at some
/// depth under a root blocks field whose maximum it inherits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Nesting {
    /// Depth of the blocks field that contains this definition (0 at the top level).
    pub parent_depth: u8,
    /// The root blocks field's maximum, inherited by every nested blocks field.
    pub inherited_max: Option<u8>,
}

/// The parsed `settings` of a field.
#[derive(Debug, Clone)]
pub struct FieldSettings {
    raw: Map<String, Value>,
    pub required: bool,
    pub readonly: bool,
    pub hidden_in_form: bool,
    pub display_name: Option<LocalizedText>,
    pub note: Option<LocalizedText>,
    pub placeholder: Option<LocalizedText>,
    pub validation_message: Option<LocalizedText>,
    /// Normalized for the field's type when the field is defined.
    pub default_value: Option<Value>,
    pub validation_rules: Vec<ValidationRule>,
    pub layout_width: LayoutWidth,
    pub layout_starts_new_row: bool,
    pub conditions: Option<Conditions>,
    /// `max_links`, as the field declares it, for the types that can hold several links
    /// ([`FieldType::holds_many_links`]); `None` elsewhere and when not set. Read it through
    /// [`FieldSettings::max_links`], which applies the default.
    pub declared_max_links: Option<u16>,
    pub kind: TypeSettings,
}

/// Settings compare by their stored JSON: the typed view is a pure function of it.
impl PartialEq for FieldSettings {
    fn eq(&self, other: &Self) -> bool {
        self.raw == other.raw
    }
}

impl Default for FieldSettings {
    fn default() -> Self {
        Self {
            raw: Map::new(),
            required: false,
            readonly: false,
            hidden_in_form: false,
            display_name: None,
            note: None,
            placeholder: None,
            validation_message: None,
            default_value: None,
            validation_rules: Vec::new(),
            layout_width: LayoutWidth::Full,
            layout_starts_new_row: false,
            conditions: None,
            declared_max_links: None,
            kind: TypeSettings::None,
        }
    }
}

impl FieldSettings {
    /// The settings as stored and returned in `CollectionFieldSummary.settings`, unknown keys
    /// included. Nested block definitions appear as saved (deeper block types stripped).
    #[must_use]
    pub fn to_json(&self) -> Value {
        Value::Object(self.raw.clone())
    }

    #[must_use]
    pub fn raw(&self) -> &Map<String, Value> {
        &self.raw
    }

    /// `allow_multiple`: only meaningful for `image`.
    #[must_use]
    pub fn allow_multiple(&self) -> bool {
        matches!(
            self.kind,
            TypeSettings::Image {
                allow_multiple: true
            }
        )
    }

    /// How many links one value of this field may hold: `max_links`, or [`DEFAULT_MAX_LINKS`].
    /// Meaningful for the types that can hold several ([`FieldType::holds_many_links`]).
    #[must_use]
    pub fn max_links(&self) -> usize {
        usize::from(self.declared_max_links.unwrap_or(DEFAULT_MAX_LINKS))
    }

    /// Whether `validation_rules` contains `operator`.
    #[must_use]
    pub fn has_rule(&self, operator: RuleOperator) -> bool {
        self.validation_rules.iter().any(|r| r.operator == operator)
    }

    /// Parses `raw` (an object, or null for no settings) for a field of `field_type`.
    pub(crate) fn parse(
        field_type: FieldType,
        raw: &Value,
        nesting: Nesting,
    ) -> Result<Self, DomainError> {
        let mut raw = match raw {
            Value::Null => Map::new(),
            Value::Object(map) => map.clone(),
            _ => return Err(DomainError::settings("", "must be an object")),
        };
        let flag = |key: &str| raw.get(key).is_some_and(is_truthy);
        let text = |key: &str| -> Result<Option<LocalizedText>, DomainError> {
            match raw.get(key) {
                None | Some(Value::Null) => Ok(None),
                Some(v) => LocalizedText::from_json(v)
                    .map(Some)
                    .map_err(|m| DomainError::settings(key, m)),
            }
        };
        let mut settings = Self {
            required: flag("required"),
            readonly: flag("readonly"),
            hidden_in_form: flag("hidden_in_form"),
            layout_starts_new_row: flag("layout_starts_new_row"),
            display_name: text("display_name")?,
            note: text("note")?,
            placeholder: text("placeholder")?,
            validation_message: text("validation_message")?,
            default_value: raw.get("default_value").filter(|v| !v.is_null()).cloned(),
            ..Self::default()
        };
        settings.layout_width = match raw.get("layout_width") {
            None | Some(Value::Null) => LayoutWidth::Full,
            Some(Value::String(s)) if s == "half" => LayoutWidth::Half,
            Some(Value::String(s)) if s == "full" => LayoutWidth::Full,
            Some(Value::String(s)) if s == "fill" => LayoutWidth::Fill,
            Some(other) => {
                return Err(DomainError::settings(
                    "layout_width",
                    format!("must be \"half\", \"full\" or \"fill\", got {other}"),
                ));
            }
        };
        match raw.get("validation_rules") {
            None | Some(Value::Null) => {}
            Some(Value::Array(list)) => {
                for (i, rule) in list.iter().enumerate() {
                    settings.validation_rules.push(
                        ValidationRule::from_json(rule)
                            .map_err(|e| e.within(&format!("validation_rules[{i}]")))?,
                    );
                }
            }
            Some(_) => {
                return Err(DomainError::settings(
                    "validation_rules",
                    "must be an array",
                ));
            }
        }
        settings.conditions = match raw.get("conditions") {
            None | Some(Value::Null) => None,
            Some(v) => Some(Conditions::from_json(v).map_err(|e| e.within("conditions"))?),
        };
        if field_type.holds_many_links() {
            settings.declared_max_links = parse_max_links(raw.get("max_links"))?;
        }
        settings.kind = parse_kind(field_type, &raw, nesting)?;
        if let TypeSettings::Blocks(blocks) = &settings.kind {
            // Store what the server will enforce: block definitions past the depth limit are gone.
            raw.insert("block_types".into(), blocks.block_types_json());
        }
        settings.raw = raw;
        Ok(settings)
    }
}

fn parse_kind(
    field_type: FieldType,
    raw: &Map<String, Value>,
    nesting: Nesting,
) -> Result<TypeSettings, DomainError> {
    let flag = |key: &str| raw.get(key).is_some_and(is_truthy);
    Ok(match field_type {
        FieldType::Select
        | FieldType::RadioGroup
        | FieldType::Multiselect
        | FieldType::CheckboxGroup
        | FieldType::CheckboxGroupTree => TypeSettings::Choice {
            options: parse_options(raw.get("options"))?,
        },
        FieldType::Date => TypeSettings::Date {
            mode: match raw.get("date_mode") {
                None | Some(Value::Null) => DateMode::Datetime,
                Some(Value::String(s)) if s == "date" => DateMode::Date,
                Some(Value::String(s)) if s == "time" => DateMode::Time,
                Some(Value::String(s)) if s == "datetime" => DateMode::Datetime,
                Some(other) => {
                    return Err(DomainError::settings(
                        "date_mode",
                        format!("must be \"date\", \"time\" or \"datetime\", got {other}"),
                    ));
                }
            },
        },
        FieldType::Map => TypeSettings::Map {
            mode: match raw.get("geometry_mode") {
                None | Some(Value::Null) => GeometryMode::Point,
                Some(Value::String(s)) if s == "point" => GeometryMode::Point,
                Some(Value::String(s)) if s == "multipoint" => GeometryMode::Multipoint,
                Some(other) => {
                    return Err(DomainError::settings(
                        "geometry_mode",
                        format!("must be \"point\" or \"multipoint\", got {other}"),
                    ));
                }
            },
        },
        FieldType::Image => TypeSettings::Image {
            allow_multiple: flag("allow_multiple"),
        },
        FieldType::Relation
        | FieldType::ManyToOne
        | FieldType::OneToMany
        | FieldType::RelationTree
        | FieldType::RelationMany => TypeSettings::Relation(parse_relation(raw)?),
        FieldType::ManyToMany => TypeSettings::ManyToMany {
            relation: parse_relation(raw)?,
            junction_fields: parse_junction_fields(raw.get("junction_fields"))?,
        },
        FieldType::M2a => TypeSettings::M2a {
            allowed_collection_ids: parse_ids(
                raw.get("allowed_collection_ids"),
                "allowed_collection_ids",
            )?,
            allowed_collections: parse_slugs(
                raw.get("allowed_collections"),
                "allowed_collections",
            )?,
            allow_duplicates: flag("allow_duplicates"),
        },
        FieldType::Blocks => TypeSettings::Blocks(BlocksSettings::parse(raw, nesting)?),
        _ => TypeSettings::None,
    })
}

/// `max_links`: an integer from 1 to [`MAX_LINKS_CEILING`].
fn parse_max_links(raw: Option<&Value>) -> Result<Option<u16>, DomainError> {
    let Some(value) = raw.filter(|v| !v.is_null()) else {
        return Ok(None);
    };
    value
        .as_u64()
        .and_then(|n| u16::try_from(n).ok())
        .filter(|n| (1..=MAX_LINKS_CEILING).contains(n))
        .map(Some)
        .ok_or_else(|| {
            DomainError::settings(
                "max_links",
                format!("must be an integer from 1 to {MAX_LINKS_CEILING}, got {value}"),
            )
        })
}

fn parse_relation(raw: &Map<String, Value>) -> Result<RelationSettings, DomainError> {
    let opt_string = |key: &str| -> Result<Option<String>, DomainError> {
        match raw.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(DomainError::settings(key, "must be a string")),
        }
    };
    let related_collection_id = match raw.get("related_collection_id") {
        None | Some(Value::Null) => None,
        Some(v) => Some(v.as_i64().filter(|id| *id > 0).ok_or_else(|| {
            DomainError::settings("related_collection_id", "must be a positive integer")
        })?),
    };
    let related_collection = match raw.get("related_collection") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(
            CollectionSlug::parse(s)
                .map_err(|e| DomainError::settings("related_collection", e.to_string()))?,
        ),
        Some(_) => {
            return Err(DomainError::settings(
                "related_collection",
                "must be a collection slug",
            ));
        }
    };
    if let Some(filter) = raw.get("filter").filter(|v| !v.is_null())
        && !filter.is_object()
    {
        return Err(DomainError::settings("filter", "must be an object"));
    }
    Ok(RelationSettings {
        related_collection_id,
        related_collection,
        display_field: opt_string("display_field")?,
        display_template: opt_string("display_template")?,
        filter: raw.get("filter").filter(|v| !v.is_null()).cloned(),
        allow_duplicates: raw.get("allow_duplicates").is_some_and(is_truthy),
    })
}

fn parse_junction_fields(raw: Option<&Value>) -> Result<Vec<JunctionField>, DomainError> {
    let list = match raw {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(list)) => list,
        Some(_) => return Err(DomainError::settings("junction_fields", "must be an array")),
    };
    let mut out: Vec<JunctionField> = Vec::with_capacity(list.len());
    for (i, entry) in list.iter().enumerate() {
        let at = |k: &str| format!("junction_fields[{i}]{k}");
        let obj = entry
            .as_object()
            .ok_or_else(|| DomainError::settings(at(""), "must be an object with name and type"))?;
        let name = obj
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| DomainError::settings(at(".name"), "is required"))
            .and_then(|n| {
                FieldName::parse(n).map_err(|e| DomainError::settings(at(".name"), e.to_string()))
            })?;
        let field_type = match obj.get("type").and_then(Value::as_str) {
            Some("string") => JunctionFieldType::String,
            Some("number") => JunctionFieldType::Number,
            Some("boolean") => JunctionFieldType::Boolean,
            _ => {
                return Err(DomainError::settings(
                    at(".type"),
                    "must be \"string\", \"number\" or \"boolean\"",
                ));
            }
        };
        if out.iter().any(|f| f.name == name) {
            return Err(DomainError::settings(
                at(".name"),
                format!("duplicate junction field \"{name}\""),
            ));
        }
        out.push(JunctionField { name, field_type });
    }
    Ok(out)
}

fn parse_ids(raw: Option<&Value>, key: &str) -> Result<Vec<i64>, DomainError> {
    match raw {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(list)) => list
            .iter()
            .map(|v| {
                v.as_i64().filter(|id| *id > 0).ok_or_else(|| {
                    DomainError::settings(key, "must be an array of positive integers")
                })
            })
            .collect(),
        Some(_) => Err(DomainError::settings(
            key,
            "must be an array of positive integers",
        )),
    }
}

fn parse_slugs(raw: Option<&Value>, key: &str) -> Result<Vec<CollectionSlug>, DomainError> {
    match raw {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(list)) => list
            .iter()
            .map(|v| {
                v.as_str()
                    .ok_or_else(|| {
                        DomainError::settings(key, "must be an array of collection slugs")
                    })
                    .and_then(|s| {
                        CollectionSlug::parse(s)
                            .map_err(|e| DomainError::settings(key, e.to_string()))
                    })
            })
            .collect(),
        Some(_) => Err(DomainError::settings(
            key,
            "must be an array of collection slugs",
        )),
    }
}

/// `options` as a list of strings, or of `{ value, label?, children? }` objects (trees for
/// checkbox_group_tree). Numbers are accepted as values and compared as their text.
fn parse_options(raw: Option<&Value>) -> Result<Option<Vec<String>>, DomainError> {
    fn collect(list: &[Value], out: &mut Vec<String>, depth: usize) -> Result<(), DomainError> {
        if depth > 16 {
            return Err(DomainError::settings("options", "nests too deeply"));
        }
        for entry in list {
            match entry {
                Value::String(s) => out.push(s.clone()),
                Value::Number(n) => out.push(n.to_string()),
                Value::Object(obj) => {
                    match obj.get("value") {
                        Some(Value::String(s)) => out.push(s.clone()),
                        Some(Value::Number(n)) => out.push(n.to_string()),
                        _ => {
                            return Err(DomainError::settings(
                                "options",
                                "each option needs a string \"value\"",
                            ));
                        }
                    }
                    if let Some(Value::Array(children)) = obj.get("children") {
                        collect(children, out, depth + 1)?;
                    }
                }
                _ => {
                    return Err(DomainError::settings(
                        "options",
                        "each option must be a string or an object",
                    ));
                }
            }
        }
        Ok(())
    }
    match raw {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(list)) => {
            let mut out = Vec::new();
            collect(list, &mut out, 0)?;
            Ok(Some(out))
        }
        Some(_) => Err(DomainError::settings("options", "must be an array")),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::FieldDef;

    fn def(field_type: &str, settings: Value) -> Result<FieldDef, DomainError> {
        FieldDef::from_json(&json!({"name": "f", "type": field_type, "settings": settings}))
    }

    #[test]
    fn max_links_defaults_to_1000_and_takes_1_to_10000() {
        for ty in [
            "one_to_many",
            "relation_many",
            "many_to_many",
            "m2a",
            "files",
            "image",
        ] {
            let default = def(ty, json!({})).unwrap();
            assert_eq!(default.settings.declared_max_links, None, "{ty}");
            assert_eq!(default.settings.max_links(), 1000, "{ty}");
            for n in [1, 50, 10_000] {
                let set = def(ty, json!({"max_links": n})).unwrap();
                assert_eq!(set.settings.max_links(), n, "{ty}");
                // Kept in the stored settings as written.
                assert_eq!(set.settings.to_json()["max_links"], json!(n));
            }
            assert_eq!(
                def(ty, json!({"max_links": null}))
                    .unwrap()
                    .settings
                    .max_links(),
                1000
            );
            for bad in [
                json!(0),
                json!(10_001),
                json!(-1),
                json!(2.5),
                json!("50"),
                json!(true),
                json!(70_000),
            ] {
                let err = def(ty, json!({"max_links": bad})).unwrap_err();
                assert_eq!(
                    err,
                    DomainError::InvalidSettings {
                        path: "settings.max_links".into(),
                        message: format!("must be an integer from 1 to 10000, got {bad}"),
                    },
                    "{ty}"
                );
            }
        }
    }

    #[test]
    fn max_links_means_nothing_to_single_valued_types_and_is_kept_raw() {
        for ty in ["many_to_one", "relation", "relation_tree", "file", "string"] {
            let f = def(ty, json!({"max_links": "whatever"})).unwrap();
            assert_eq!(f.settings.declared_max_links, None, "{ty}");
            assert_eq!(f.settings.to_json()["max_links"], json!("whatever"));
        }
    }

    #[test]
    fn max_links_inside_blocks_is_checked_with_its_path() {
        let err = def(
            "blocks",
            json!({"block_types": [{"key": "b", "fields": [
                {"name": "refs", "type": "one_to_many", "settings": {"max_links": 0}}
            ]}]}),
        )
        .unwrap_err();
        let DomainError::InvalidSettings { path, .. } = err else {
            panic!("{err:?}");
        };
        assert!(path.ends_with("settings.max_links"), "{path}");
    }
}
