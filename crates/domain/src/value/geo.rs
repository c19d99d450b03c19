use serde_json::{Map, Value, json};

use crate::GeometryMode;

/// `map` values as GeoJSON with `[lng, lat]` coordinates. The legacy `{ lat, lng }` object (and a
/// list of them in multipoint mode) is converted. In `multipoint` mode a single Point is wrapped
/// into a MultiPoint so the stored shape is always the one the mode promises; in `point` mode a
/// MultiPoint is rejected rather than silently truncated.
pub(super) fn normalize(value: &Value, mode: GeometryMode) -> Result<Value, String> {
    match value {
        Value::Null => return Ok(Value::Null),
        Value::String(s) if s.trim().is_empty() => return Ok(Value::Null),
        _ => {}
    }
    let points = read_points(value)?;
    match (mode, points) {
        (GeometryMode::Point, Points::One(p)) => Ok(point(p)),
        (GeometryMode::Point, Points::Many(_)) => {
            Err("must be a GeoJSON Point; this field does not take MultiPoint.".into())
        }
        (GeometryMode::Multipoint, Points::One(p)) => Ok(multipoint(&[p])),
        (GeometryMode::Multipoint, Points::Many(ps)) => Ok(multipoint(&ps)),
    }
}

enum Points {
    One([f64; 2]),
    Many(Vec<[f64; 2]>),
}

const SHAPE: &str =
    "must be a GeoJSON Point or MultiPoint with [lng, lat] coordinates, or { lat, lng }.";

fn read_points(value: &Value) -> Result<Points, String> {
    match value {
        Value::Object(obj) if obj.contains_key("lat") || obj.contains_key("lng") => {
            legacy(obj).map(Points::One)
        }
        Value::Object(obj) => match obj.get("type").and_then(Value::as_str) {
            Some("Point") => {
                position(obj.get("coordinates").unwrap_or(&Value::Null)).map(Points::One)
            }
            Some("MultiPoint") => match obj.get("coordinates") {
                Some(Value::Array(list)) if !list.is_empty() => list
                    .iter()
                    .map(position)
                    .collect::<Result<_, _>>()
                    .map(Points::Many),
                _ => Err("MultiPoint coordinates must be a non-empty list of [lng, lat].".into()),
            },
            Some(other) => Err(format!(
                "has unsupported geometry type \"{other}\"; only Point and MultiPoint are supported."
            )),
            None => Err(SHAPE.into()),
        },
        Value::Array(list) if !list.is_empty() && list.iter().all(Value::is_object) => list
            .iter()
            .map(|v| match v {
                Value::Object(obj) => legacy(obj),
                _ => Err(SHAPE.to_owned()),
            })
            .collect::<Result<_, _>>()
            .map(Points::Many),
        _ => Err(SHAPE.into()),
    }
}

fn legacy(obj: &Map<String, Value>) -> Result<[f64; 2], String> {
    let coord = |k: &str| match obj.get(k) {
        Some(Value::Number(n)) => n.as_f64(),
        Some(Value::String(s)) => s.trim().parse::<f64>().ok(),
        _ => None,
    };
    match (coord("lng"), coord("lat")) {
        (Some(lng), Some(lat)) => check(lng, lat),
        _ => Err("legacy coordinates need numeric lat and lng.".into()),
    }
}

fn position(value: &Value) -> Result<[f64; 2], String> {
    match value {
        Value::Array(pair) if pair.len() == 2 => match (
            pair.first().and_then(Value::as_f64),
            pair.get(1).and_then(Value::as_f64),
        ) {
            (Some(lng), Some(lat)) => check(lng, lat),
            _ => Err("coordinates must be numbers [lng, lat].".into()),
        },
        _ => Err("coordinates must be a pair [lng, lat].".into()),
    }
}

fn check(lng: f64, lat: f64) -> Result<[f64; 2], String> {
    if !lng.is_finite() || !(-180.0..=180.0).contains(&lng) {
        return Err("longitude must be between -180 and 180.".into());
    }
    if !lat.is_finite() || !(-90.0..=90.0).contains(&lat) {
        return Err("latitude must be between -90 and 90.".into());
    }
    Ok([lng, lat])
}

fn point(p: [f64; 2]) -> Value {
    json!({"type": "Point", "coordinates": p})
}

fn multipoint(ps: &[[f64; 2]]) -> Value {
    json!({"type": "MultiPoint", "coordinates": ps})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn points() {
        let p = json!({"type": "Point", "coordinates": [13.4, 52.5]});
        assert_eq!(normalize(&p, GeometryMode::Point), Ok(p.clone()));
        assert_eq!(
            normalize(&json!({"lat": 52.5, "lng": 13.4}), GeometryMode::Point),
            Ok(p.clone())
        );
        assert_eq!(
            normalize(&json!({"lat": "52.5", "lng": "13.4"}), GeometryMode::Point),
            Ok(p)
        );
        assert_eq!(
            normalize(&json!(null), GeometryMode::Point),
            Ok(json!(null))
        );
    }

    #[test]
    fn multipoints() {
        let mp = json!({"type": "MultiPoint", "coordinates": [[1.0, 2.0], [3.0, 4.0]]});
        assert_eq!(normalize(&mp, GeometryMode::Multipoint), Ok(mp.clone()));
        assert_eq!(
            normalize(
                &json!([{"lat": 2, "lng": 1}, {"lat": 4, "lng": 3}]),
                GeometryMode::Multipoint
            ),
            Ok(mp.clone())
        );
        assert_eq!(
            normalize(
                &json!({"type": "Point", "coordinates": [1, 2]}),
                GeometryMode::Multipoint
            ),
            Ok(json!({"type": "MultiPoint", "coordinates": [[1.0, 2.0]]}))
        );
        assert!(normalize(&mp, GeometryMode::Point).is_err());
    }

    #[test]
    fn rejects() {
        for bad in [
            json!({"type": "Polygon", "coordinates": []}),
            json!({"type": "Point", "coordinates": [200, 0]}),
            json!({"type": "Point", "coordinates": [0, 91]}),
            json!({"type": "Point", "coordinates": [0]}),
            json!({"type": "Point", "coordinates": ["a", "b"]}),
            json!({"type": "MultiPoint", "coordinates": []}),
            json!({"lat": 1}),
            json!({"lat": "x", "lng": 1}),
            json!("52.5,13.4"),
            json!([1, 2]),
            json!({}),
        ] {
            assert!(normalize(&bad, GeometryMode::Point).is_err(), "{bad}");
        }
    }
}
