//! Telling a locale map from a value in translatable fields.
//!
//! Translatable values are stored as `{ "<locale>": value }`. Most field values are never JSON
//! objects, so any object is a locale map. Three shapes can be objects themselves: GeoJSON (`map`)
//! and the expanded file or item a client read with `include` (`{ "id": 7, ... }`). For those, an
//! object carrying the shape's marker keys is a value, unless every key is an enabled locale
//! (`id` is also Indonesian's code).

use serde_json::{Map, Value};

use crate::{ContentLocales, FieldDef, ValueShape};

pub(crate) fn is_locale_map(
    field: &FieldDef,
    obj: &Map<String, Value>,
    locales: &ContentLocales,
) -> bool {
    let markers: &[&str] = match field.shape() {
        ValueShape::Geometry => &["type", "coordinates", "lat", "lng"],
        ValueShape::FileId | ValueShape::FileIds | ValueShape::ItemId => &["id"],
        _ => return true,
    };
    !markers.iter().any(|k| obj.contains_key(*k)) || obj.keys().all(|k| locales.is_enabled(k))
}

/// Whether a normalized translation carries nothing, so its locale is dropped (and reads fall
/// back to the default locale) rather than stored as an empty value that would read differently
/// from a missing one.
pub(crate) fn is_blank_translation(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Array(a) => a.is_empty(),
        _ => false,
    }
}
