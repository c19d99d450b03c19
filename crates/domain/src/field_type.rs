use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::DomainError;

/// The type of a collection field, exactly the 31 names of the spec. Parsing is strict (an unknown
/// name is an error, never a fallback to `string`) because a typo in a schema would otherwise store
/// unvalidated data silently.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "&'static str")]
pub enum FieldType {
    String,
    Autocomplete,
    ApiAutocomplete,
    Number,
    Boolean,
    Textarea,
    Wysiwyg,
    Markdown,
    Code,
    Hash,
    Slider,
    Select,
    Multiselect,
    CheckboxGroup,
    CheckboxGroupTree,
    RadioGroup,
    Tag,
    Date,
    Map,
    Color,
    Image,
    File,
    Files,
    Relation,
    ManyToOne,
    OneToMany,
    ManyToMany,
    RelationTree,
    RelationMany,
    Blocks,
    M2a,
}

/// The normalized JSON shape a field's value takes in stored and returned `data` (the spec's
/// "Normalized value shapes" table).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ValueShape {
    /// string or null
    Text,
    /// number or null
    Number,
    /// boolean or null
    Boolean,
    /// string[]
    StringList,
    /// GeoJSON Point or MultiPoint, `[lng, lat]`
    Geometry,
    /// integer file id (or null)
    FileId,
    /// integer[] of file ids
    FileIds,
    /// integer item id (or null)
    ItemId,
    /// integer[] of item ids
    ItemIds,
    /// `{ related_item_id, meta }[]`
    JunctionLinks,
    /// `{ id, type, data }[]`
    Blocks,
    /// `{ related_collection_id, related_item_id }[]`
    CollectionLinks,
    /// string fingerprint (never the clear value)
    Fingerprint,
}

impl ValueShape {
    /// Whether the shape is a JSON array; an absent array-shaped value reads as `[]`, the others
    /// as `null`.
    #[must_use]
    pub fn is_array(self) -> bool {
        matches!(
            self,
            Self::StringList
                | Self::FileIds
                | Self::ItemIds
                | Self::JunctionLinks
                | Self::Blocks
                | Self::CollectionLinks
        )
    }
}

impl FieldType {
    /// Every field type, in the order of the spec.
    pub const ALL: [Self; 31] = [
        Self::String,
        Self::Autocomplete,
        Self::ApiAutocomplete,
        Self::Number,
        Self::Boolean,
        Self::Textarea,
        Self::Wysiwyg,
        Self::Markdown,
        Self::Code,
        Self::Hash,
        Self::Slider,
        Self::Select,
        Self::Multiselect,
        Self::CheckboxGroup,
        Self::CheckboxGroupTree,
        Self::RadioGroup,
        Self::Tag,
        Self::Date,
        Self::Map,
        Self::Color,
        Self::Image,
        Self::File,
        Self::Files,
        Self::Relation,
        Self::ManyToOne,
        Self::OneToMany,
        Self::ManyToMany,
        Self::RelationTree,
        Self::RelationMany,
        Self::Blocks,
        Self::M2a,
    ];

    /// The spec name, as used in `type` on the wire and in manifests.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::String => "string",
            Self::Autocomplete => "autocomplete",
            Self::ApiAutocomplete => "api_autocomplete",
            Self::Number => "number",
            Self::Boolean => "boolean",
            Self::Textarea => "textarea",
            Self::Wysiwyg => "wysiwyg",
            Self::Markdown => "markdown",
            Self::Code => "code",
            Self::Hash => "hash",
            Self::Slider => "slider",
            Self::Select => "select",
            Self::Multiselect => "multiselect",
            Self::CheckboxGroup => "checkbox_group",
            Self::CheckboxGroupTree => "checkbox_group_tree",
            Self::RadioGroup => "radio_group",
            Self::Tag => "tag",
            Self::Date => "date",
            Self::Map => "map",
            Self::Color => "color",
            Self::Image => "image",
            Self::File => "file",
            Self::Files => "files",
            Self::Relation => "relation",
            Self::ManyToOne => "many_to_one",
            Self::OneToMany => "one_to_many",
            Self::ManyToMany => "many_to_many",
            Self::RelationTree => "relation_tree",
            Self::RelationMany => "relation_many",
            Self::Blocks => "blocks",
            Self::M2a => "m2a",
        }
    }

    /// # Errors
    /// [`DomainError::UnknownFieldType`] for any name outside the spec's list (case-sensitive).
    pub fn parse(name: &str) -> Result<Self, DomainError> {
        Self::ALL
            .into_iter()
            .find(|t| t.as_str() == name)
            .ok_or_else(|| DomainError::UnknownFieldType(name.to_owned()))
    }

    /// The spec's relation types. `m2a` is array-stored but deliberately not one of them.
    #[must_use]
    pub fn is_relation(self) -> bool {
        matches!(
            self,
            Self::Relation
                | Self::ManyToOne
                | Self::OneToMany
                | Self::ManyToMany
                | Self::RelationTree
                | Self::RelationMany
        )
    }

    /// Fields whose values are file ids, expanded by `include=files`.
    #[must_use]
    pub fn is_file(self) -> bool {
        matches!(self, Self::Image | Self::File | Self::Files)
    }

    /// Whether the value is stored as a JSON array of links or entries (relations to many, m2a,
    /// blocks, multi-file fields, string lists).
    #[must_use]
    pub fn is_array_stored(self, allow_multiple: bool) -> bool {
        self.value_shape(allow_multiple).is_array()
    }

    /// Whether a value can hold several links (item ids, m2a entries or file ids), so the
    /// `max_links` setting applies: one_to_many, relation_many, many_to_many, m2a, files and
    /// image (with `allow_multiple`; the setting is kept for when it is turned on).
    #[must_use]
    pub fn holds_many_links(self) -> bool {
        matches!(
            self,
            Self::OneToMany
                | Self::RelationMany
                | Self::ManyToMany
                | Self::M2a
                | Self::Files
                | Self::Image
        )
    }

    /// `hash`, `blocks` and every relation type are never translatable; `blocks` localizes inside
    /// its nested fields instead. The server forces `translatable = false` for them.
    #[must_use]
    pub fn can_be_translatable(self) -> bool {
        !(self.is_relation() || matches!(self, Self::Hash | Self::Blocks))
    }

    /// Whether `default_value` applies on create. The spec excludes hash, files, relations, blocks
    /// and m2a: their values are references or secrets that a schema default cannot sensibly hold.
    #[must_use]
    pub fn accepts_default_value(self) -> bool {
        !(self.is_relation() || matches!(self, Self::Hash | Self::Files | Self::Blocks | Self::M2a))
    }

    /// The normalized value shape. Only `image` depends on settings: with `allow_multiple` it holds
    /// a list of file ids.
    #[must_use]
    pub fn value_shape(self, allow_multiple: bool) -> ValueShape {
        match self {
            Self::String
            | Self::Autocomplete
            | Self::ApiAutocomplete
            | Self::Textarea
            | Self::Wysiwyg
            | Self::Markdown
            | Self::Code
            | Self::Select
            | Self::RadioGroup
            | Self::Date
            | Self::Color => ValueShape::Text,
            Self::Number | Self::Slider => ValueShape::Number,
            Self::Boolean => ValueShape::Boolean,
            Self::Multiselect | Self::CheckboxGroup | Self::CheckboxGroupTree | Self::Tag => {
                ValueShape::StringList
            }
            Self::Map => ValueShape::Geometry,
            Self::File => ValueShape::FileId,
            Self::Image if !allow_multiple => ValueShape::FileId,
            Self::Image | Self::Files => ValueShape::FileIds,
            Self::Relation | Self::ManyToOne | Self::RelationTree => ValueShape::ItemId,
            Self::OneToMany | Self::RelationMany => ValueShape::ItemIds,
            Self::ManyToMany => ValueShape::JunctionLinks,
            Self::Blocks => ValueShape::Blocks,
            Self::M2a => ValueShape::CollectionLinks,
            Self::Hash => ValueShape::Fingerprint,
        }
    }
}

impl fmt::Display for FieldType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for FieldType {
    type Err = DomainError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl TryFrom<String> for FieldType {
    type Error = DomainError;
    fn try_from(value: String) -> Result<Self, Self::Error> {
        Self::parse(&value)
    }
}

impl From<FieldType> for &'static str {
    fn from(value: FieldType) -> Self {
        value.as_str()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPEC_NAMES: &str = "string, autocomplete, api_autocomplete, number, boolean, textarea, \
        wysiwyg, markdown, code, hash, slider, select, multiselect, checkbox_group, \
        checkbox_group_tree, radio_group, tag, date, map, color, image, file, files, relation, \
        many_to_one, one_to_many, many_to_many, relation_tree, relation_many, blocks, m2a";

    #[test]
    fn every_spec_name_round_trips() {
        let names: Vec<&str> = SPEC_NAMES.split(", ").collect();
        assert_eq!(names.len(), 31);
        for name in names {
            let t = FieldType::parse(name).unwrap();
            assert_eq!(t.as_str(), name);
            assert_eq!(t.to_string(), name);
            let json = serde_json::to_string(&t).unwrap();
            assert_eq!(json, format!("\"{name}\""));
            assert_eq!(serde_json::from_str::<FieldType>(&json).unwrap(), t);
        }
    }

    #[test]
    fn unknown_names_are_errors() {
        for bad in ["strng", "String", "", " string", "m2m", "json"] {
            assert_eq!(
                FieldType::parse(bad),
                Err(DomainError::UnknownFieldType(bad.to_owned()))
            );
        }
        assert_eq!(
            FieldType::parse("strng").unwrap_err().to_string(),
            "unknown field type \"strng\""
        );
    }

    #[test]
    fn relation_classification() {
        let relations: Vec<_> = FieldType::ALL
            .into_iter()
            .filter(|t| t.is_relation())
            .collect();
        assert_eq!(
            relations,
            [
                FieldType::Relation,
                FieldType::ManyToOne,
                FieldType::OneToMany,
                FieldType::ManyToMany,
                FieldType::RelationTree,
                FieldType::RelationMany
            ]
        );
        assert!(!FieldType::M2a.is_relation());
        assert!(FieldType::M2a.is_array_stored(false));
    }

    #[test]
    fn translatability() {
        for t in FieldType::ALL {
            let expected = !(t.is_relation() || t == FieldType::Hash || t == FieldType::Blocks);
            assert_eq!(t.can_be_translatable(), expected, "{t}");
        }
        assert!(FieldType::M2a.can_be_translatable());
        assert!(FieldType::String.can_be_translatable());
    }

    #[test]
    fn file_types() {
        let files: Vec<_> = FieldType::ALL.into_iter().filter(|t| t.is_file()).collect();
        assert_eq!(files, [FieldType::Image, FieldType::File, FieldType::Files]);
    }

    #[test]
    fn default_value_applicability() {
        let without: Vec<_> = FieldType::ALL
            .into_iter()
            .filter(|t| !t.accepts_default_value())
            .collect();
        assert_eq!(
            without,
            [
                FieldType::Hash,
                FieldType::Files,
                FieldType::Relation,
                FieldType::ManyToOne,
                FieldType::OneToMany,
                FieldType::ManyToMany,
                FieldType::RelationTree,
                FieldType::RelationMany,
                FieldType::Blocks,
                FieldType::M2a
            ]
        );
    }

    /// One row per line of the spec's "Normalized value shapes" table.
    #[test]
    fn value_shape_table() {
        use ValueShape as S;
        let rows: &[(&str, S)] = &[
            (
                "string autocomplete api_autocomplete textarea wysiwyg markdown code select radio_group date color",
                S::Text,
            ),
            ("number slider", S::Number),
            ("boolean", S::Boolean),
            (
                "multiselect checkbox_group checkbox_group_tree tag",
                S::StringList,
            ),
            ("map", S::Geometry),
            ("file", S::FileId),
            ("files", S::FileIds),
            ("relation many_to_one relation_tree", S::ItemId),
            ("one_to_many relation_many", S::ItemIds),
            ("many_to_many", S::JunctionLinks),
            ("blocks", S::Blocks),
            ("m2a", S::CollectionLinks),
            ("hash", S::Fingerprint),
        ];
        let mut seen = 0;
        for (names, shape) in rows {
            for name in names.split(' ') {
                assert_eq!(
                    FieldType::parse(name).unwrap().value_shape(false),
                    *shape,
                    "{name}"
                );
                seen += 1;
            }
        }
        // image is the 31st: its shape depends on allow_multiple.
        assert_eq!(FieldType::Image.value_shape(false), S::FileId);
        assert_eq!(FieldType::Image.value_shape(true), S::FileIds);
        assert_eq!(seen + 1, 31);
    }
}
