//! The policy crate's filter AST (and typed sorting) compiled to SQL over `items.data`, on
//! SQLite (JSONB with `json_extract` / `json_type` / `json_each`) and PostgreSQL (`jsonb`).
//!
//! The SQL must give the same answers as [`vellum_policy::Filter::matches`]: the same table of
//! cases runs against both (see `tests/storage/filters.rs`). Two compilation strategies share that
//! contract:
//!
//! - **By shape** for scalar fields whose schema says what they hold (numbers, text,
//!   booleans, ids): a direct comparison on the extracted value, cheap enough to scan 100k items
//!   within the list budget. Stored values are normalized on write, so the shape is the type.
//! - **Generic** for everything else (lists, links, unknown fields): the value's JSON type is
//!   checked at run time and lists match when any element does, exactly like the evaluator.
//!
//! Field names and locale codes are embedded in JSON paths as literals: both are validated
//! newtypes restricted to identifier characters, and [`ident`] refuses anything else. Operands
//! are always bound.

use sea_orm::DbBackend;
use serde_json::Value as Json;
use vellum_domain::{
    CollectionSchema, ContentLocales, FieldDef, FieldType, LocaleCode, ValueShape,
};
use vellum_policy::{Condition, Filter, FilterField, FilterOp};

use crate::StorageError;
use crate::sql::Sql;

mod generic;
mod operands;
mod scalar;
mod system;

use generic::push_generic;
use scalar::{push_boolean, push_number, push_text};
use system::{instant_key, push_system};

/// What the compiler needs besides the filter: the schema (for shapes and translatability) and
/// the locale translatable values are compared in (with fallback to the default locale, like
/// the read path).
#[derive(Debug, Clone, Copy)]
pub struct FilterScope<'a> {
    pub schema: &'a CollectionSchema,
    pub locales: &'a ContentLocales,
    pub locale: &'a LocaleCode,
}

/// A sort key: a system key or a field, ascending unless `descending`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SortKey {
    pub field: FilterField,
    pub descending: bool,
}

impl SortKey {
    /// Parses `sort=-views,title`.
    ///
    /// # Errors
    /// A message naming the bad token (empty or not a field name).
    pub fn parse_list(raw: &str) -> Result<Vec<Self>, String> {
        raw.split(',')
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(|token| {
                let (descending, name) = match token.strip_prefix('-') {
                    Some(rest) => (true, rest),
                    None => (false, token),
                };
                FilterField::parse(name).map(|field| Self { field, descending })
            })
            .collect()
    }
}

/// Refuses a path segment that is not made of identifier characters (defence in depth: the
/// domain newtypes already guarantee it).
fn ident(s: &str) -> Result<&str, StorageError> {
    if !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        Ok(s)
    } else {
        Err(StorageError::corrupt(format!(
            "unsafe identifier in a JSON path: {s:?}"
        )))
    }
}

/// How to reach a field's (flattened) value inside `data`.
#[derive(Debug, Clone)]
struct Access {
    /// SQLite: an SQL expression giving the JSON path (a literal, or a CASE choosing the
    /// requested locale or the default one).
    lite_path: String,
    /// PostgreSQL: an SQL expression giving the `jsonb` value (SQL NULL when missing).
    pg_json: String,
    /// PostgreSQL: the value as text (`->>`), for text comparisons.
    pg_text: String,
}

/// How a condition or sort key reads `name`, mirroring `flatten_for_read`: a field that is not
/// translatable (or not in the schema) as stored; a translatable one as its locale map's
/// translation in the scope's locale when that is present and not null, else the default
/// locale's (`ContentLocales::pick`), and as itself when the stored value is no locale map (a
/// value stored before the field became translatable).
fn access(
    data: &str,
    name: &str,
    field: Option<&FieldDef>,
    scope: &FilterScope<'_>,
) -> Result<Access, StorageError> {
    let name = ident(name)?;
    let base_path = plain_path(name);
    let base_pg = format!("({data} -> '{name}')");
    let Some(field) = field.filter(|f| f.translatable) else {
        return Ok(Access {
            lite_path: base_path,
            pg_json: base_pg,
            pg_text: format!("({data} ->> '{name}')"),
        });
    };
    let locale = ident(scope.locale.as_str())?;
    let default = ident(scope.locales.default_locale().as_str())?;
    let (lite_map, pg_map) = locale_map_test(data, name, field, scope)?;
    let wanted = format!("'$.\"{name}\".\"{locale}\"'");
    let (lite_pick, pg_pick) = if locale == default {
        (wanted, format!("({data} -> '{name}' -> '{locale}')"))
    } else {
        let fallback = format!("'$.\"{name}\".\"{default}\"'");
        (
            format!(
                "(CASE WHEN COALESCE(json_type({data}, {wanted}), 'null') <> 'null' THEN {wanted} ELSE {fallback} END)"
            ),
            format!(
                "COALESCE(NULLIF({data} -> '{name}' -> '{locale}', 'null'::jsonb), {data} -> '{name}' -> '{default}')"
            ),
        )
    };
    let pg_json = format!("(CASE WHEN {pg_map} THEN {pg_pick} ELSE {base_pg} END)");
    Ok(Access {
        lite_path: format!("(CASE WHEN {lite_map} THEN {lite_pick} ELSE {base_path} END)"),
        pg_text: format!("({pg_json} #>> '{{}}')"),
        pg_json,
    })
}

/// Whether the stored value of a translatable field is a locale map, as `is_locale_map`
/// decides on the read path: an object, unless the field's own values are objects (GeoJSON, an
/// expanded file or item) and it carries their keys without being made of enabled locales only.
/// `(SQLite, PostgreSQL)` boolean expressions; each test is its own WHEN, so PostgreSQL never
/// lists the keys of something that is not an object.
fn locale_map_test(
    data: &str,
    name: &str,
    field: &FieldDef,
    scope: &FilterScope<'_>,
) -> Result<(String, String), StorageError> {
    let path = plain_path(name);
    let markers: &[&str] = match field.shape() {
        ValueShape::Geometry => &["type", "coordinates", "lat", "lng"],
        ValueShape::FileId | ValueShape::FileIds | ValueShape::ItemId => &["id"],
        _ => &[],
    };
    if markers.is_empty() {
        return Ok((
            format!("json_type({data}, {path}) = 'object'"),
            format!("jsonb_typeof({data} -> '{name}') = 'object'"),
        ));
    }
    let enabled = scope
        .locales
        .enabled()
        .iter()
        .map(|l| ident(l.as_str()).map(|l| format!("'{l}'")))
        .collect::<Result<Vec<_>, _>>()?
        .join(", ");
    let lite_marked: Vec<String> = markers
        .iter()
        .map(|m| format!("json_type({data}, '$.\"{name}\".\"{m}\"') IS NOT NULL"))
        .collect();
    let pg_marked: Vec<String> = markers
        .iter()
        .map(|m| format!("({data} -> '{name}' -> '{m}') IS NOT NULL"))
        .collect();
    Ok((
        format!(
            "(CASE WHEN json_type({data}, {path}) IS NOT 'object' THEN FALSE WHEN NOT ({}) THEN TRUE ELSE NOT EXISTS (SELECT 1 FROM json_each({data}, {path}) AS k WHERE k.key NOT IN ({enabled})) END)",
            lite_marked.join(" OR ")
        ),
        format!(
            "(CASE WHEN jsonb_typeof({data} -> '{name}') IS DISTINCT FROM 'object' THEN FALSE WHEN NOT ({}) THEN TRUE ELSE NOT EXISTS (SELECT 1 FROM jsonb_object_keys({data} -> '{name}') AS k(key) WHERE k.key NOT IN ({enabled})) END)",
            pg_marked.join(" OR ")
        ),
    ))
}

/// The SQLite JSON path literal of a top-level, non-translatable field.
fn plain_path(name: &str) -> String {
    format!("'$.\"{name}\"'")
}

/// Field types whose text values are short enough to be worth an index entry.
fn is_short_text(field_type: FieldType) -> bool {
    !matches!(
        field_type,
        FieldType::Textarea
            | FieldType::Wysiwyg
            | FieldType::Markdown
            | FieldType::Code
            | FieldType::Hash
    )
}

/// At most this many fields go into a collection's scalar index: wide enough for the usual
/// filterable fields (status, dates, counts, flags, references), narrow enough to stay cheap.
const MAX_INDEXED_FIELDS: usize = 12;

/// SQLite only: the partial index over a collection's short scalar fields that makes filtered
/// counts and lists read narrow index entries instead of every item's whole `data`. Its
/// expressions are exactly the ones [`push_filter`] generates for those fields (SQLite reads an
/// indexed expression from the index instead of computing it, and treats such an index as
/// covering), and its predicate names the collection id as a literal, as the list queries do,
/// so the planner can prove the index applies. `None` on PostgreSQL, or without such fields.
///
/// Returns `(drop, create)` statements.
pub(crate) fn scalar_index_sql(
    backend: DbBackend,
    collection_id: i64,
    schema: &CollectionSchema,
) -> Result<(String, Option<String>), StorageError> {
    let name = scalar_index_name(collection_id);
    let drop = format!("DROP INDEX IF EXISTS {name}");
    if backend != DbBackend::Sqlite {
        return Ok((drop, None));
    }
    let mut exprs = Vec::new();
    for (field, kind) in indexed_fields(schema) {
        let path = plain_path(ident(field)?);
        exprs.push(match kind {
            Kind::Boolean => format!("json_type(data, {path})"),
            _ => format!("json_extract(data, {path})"),
        });
    }
    if exprs.is_empty() {
        return Ok((drop, None));
    }
    let create = format!(
        "CREATE INDEX {name} ON items ({}) WHERE collection_id = {collection_id} AND deleted_at IS NULL",
        exprs.join(", ")
    );
    Ok((drop, Some(create)))
}

fn scalar_index_name(collection_id: i64) -> String {
    format!("ix_items_scalars_c{collection_id}")
}

/// The fields of the scalar index, in schema order, with how they are compiled.
fn indexed_fields(schema: &CollectionSchema) -> Vec<(&str, Kind)> {
    schema
        .fields()
        .iter()
        .filter(|f| !f.translatable)
        .filter_map(|f| {
            let kind = kind_of(f.shape());
            let wanted = match kind {
                Kind::Number | Kind::Boolean => true,
                Kind::Text => is_short_text(f.field_type),
                Kind::Generic => false,
            };
            wanted.then_some((f.name.as_str(), kind))
        })
        .take(MAX_INDEXED_FIELDS)
        .collect()
}

/// ` INDEXED BY …` for a filtered count on SQLite when every condition reads a field of the
/// collection's scalar index: a scan of the narrow index entries then answers it without
/// touching the items' `data` (several times faster on a large collection). SQLite's planner
/// does not pick that index by itself, because no condition can seek into it; when a condition
/// reads anything else the plain table scan is the better plan and no hint is given.
pub(crate) fn scalar_index_hint(
    backend: DbBackend,
    collection_id: i64,
    schema: &CollectionSchema,
    filter: &Filter,
) -> Option<String> {
    if backend != DbBackend::Sqlite || filter.is_empty() {
        return None;
    }
    let indexed = indexed_fields(schema);
    let covered = filter.conditions().iter().all(|c| match &c.field {
        FilterField::Data(name) => indexed.iter().any(|(f, _)| *f == name.as_str()),
        FilterField::Id => true,
        FilterField::CreatedAt | FilterField::UpdatedAt => false,
    });
    covered.then(|| format!(" INDEXED BY {}", scalar_index_name(collection_id)))
}

/// How a field's values are compiled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Number,
    Text,
    Boolean,
    Generic,
}

fn kind_of(shape: ValueShape) -> Kind {
    match shape {
        ValueShape::Number | ValueShape::FileId | ValueShape::ItemId => Kind::Number,
        ValueShape::Text | ValueShape::Fingerprint => Kind::Text,
        ValueShape::Boolean => Kind::Boolean,
        _ => Kind::Generic,
    }
}

/// Appends `AND (…)` for every condition of `filter`.
pub(crate) fn push_filter(
    sql: &mut Sql,
    data: &str,
    filter: &Filter,
    scope: &FilterScope<'_>,
) -> Result<(), StorageError> {
    refuse_nul(filter)?;
    for condition in filter.conditions() {
        sql.push(" AND ");
        push_condition(sql, data, condition, scope)?;
    }
    Ok(())
}

/// PostgreSQL's text cannot hold U+0000, so an operand holding one would fail the statement
/// there and be compared on SQLite: refused on both, like any invalid filter.
fn refuse_nul(filter: &Filter) -> Result<(), StorageError> {
    let text = |v: &Json| matches!(v, Json::String(s) if s.contains('\0'));
    for c in filter.conditions() {
        let nul = match &c.op {
            FilterOp::Contains(s) => s.contains('\0'),
            FilterOp::Eq(v)
            | FilterOp::Neq(v)
            | FilterOp::Gt(v)
            | FilterOp::Gte(v)
            | FilterOp::Lt(v)
            | FilterOp::Lte(v) => text(v),
            FilterOp::In(values) => values.iter().any(text),
            FilterOp::Null | FilterOp::NotNull => false,
        };
        if nul {
            let mut errors = vellum_domain::ValidationErrors::new();
            errors.add(
                format!("filter[{}]", c.field),
                "The filter value must not contain NUL characters.",
            );
            return Err(StorageError::Invalid(errors));
        }
    }
    Ok(())
}

fn push_condition(
    sql: &mut Sql,
    data: &str,
    c: &Condition,
    scope: &FilterScope<'_>,
) -> Result<(), StorageError> {
    let name = match &c.field {
        FilterField::Id => return push_system(sql, "id", &c.op, true),
        FilterField::CreatedAt => return push_system(sql, "created_at", &c.op, false),
        FilterField::UpdatedAt => return push_system(sql, "updated_at", &c.op, false),
        FilterField::Data(name) => name.as_str(),
    };
    // A field that is no longer in the schema is absent on the read path (`flatten_for_read`
    // drops it), whatever its stale stored values: the condition is decided as for a missing
    // value, without reading `data`.
    let Some(field) = scope.schema.field(name) else {
        sql.push(match &c.op {
            FilterOp::Null | FilterOp::Neq(_) => "(TRUE)",
            _ => "(FALSE)",
        });
        return Ok(());
    };
    let kind = kind_of(field.shape());
    let at = access(data, name, Some(field), scope)?;
    sql.push("(");
    match kind {
        Kind::Number => push_number(sql, data, &at, &c.op),
        Kind::Text => push_text(sql, data, &at, &c.op),
        Kind::Boolean => push_boolean(sql, data, &at, &c.op),
        Kind::Generic => push_generic(sql, data, &at, &c.op),
    }
    sql.push(")");
    Ok(())
}

// ---- sorting -----------------------------------------------------------------------------------

/// Appends ` ORDER BY …`: the keys in order, missing values last ascending (first descending)
/// on both backends, then `id` so pages never overlap.
pub(crate) fn push_order(
    sql: &mut Sql,
    data: &str,
    keys: &[SortKey],
    scope: &FilterScope<'_>,
) -> Result<(), StorageError> {
    sql.push(" ORDER BY ");
    for key in keys {
        let expr = match &key.field {
            FilterField::Id => "id".to_owned(),
            // In time order (on SQLite the stored text does not sort as time: `instant_key`).
            FilterField::CreatedAt => instant_key(sql.backend(), "created_at"),
            FilterField::UpdatedAt => instant_key(sql.backend(), "updated_at"),
            FilterField::Data(name) => {
                let field = scope.schema.field(name.as_str());
                let kind = field.map_or(Kind::Generic, |f| kind_of(f.shape()));
                let at = access(data, name.as_str(), field, scope)?;
                sort_expr(sql.backend(), data, &at, kind)
            }
        };
        let dir = if key.descending {
            "DESC NULLS FIRST"
        } else {
            "ASC NULLS LAST"
        };
        sql.push(&expr).push(" ").push(dir).push(", ");
    }
    let id_dir = if keys
        .last()
        .is_some_and(|k| k.descending && k.field == FilterField::Id)
    {
        "DESC"
    } else {
        "ASC"
    };
    sql.push("id ").push(id_dir);
    Ok(())
}

fn sort_expr(backend: DbBackend, data: &str, at: &Access, kind: Kind) -> String {
    if backend == DbBackend::Postgres {
        let j = &at.pg_json;
        match kind {
            Kind::Number => format!(
                "(CASE WHEN jsonb_typeof({j}) = 'number' THEN ({j} #>> '{{}}')::float8 END)"
            ),
            Kind::Text => format!("({} COLLATE \"C\")", at.pg_text),
            Kind::Boolean | Kind::Generic => format!("NULLIF({j}, 'null'::jsonb)"),
        }
    } else {
        // SQLite orders NULL, numbers, text, blobs: one expression covers every kind.
        format!("json_extract({data}, {})", at.lite_path)
    }
}

#[cfg(test)]
mod tests {
    use super::operands::blank_chars;
    use super::system::{instant_floor, whole_micros};
    use super::*;

    #[test]
    fn sort_lists_parse() {
        let keys = SortKey::parse_list("-views, title,id").unwrap();
        assert_eq!(keys.len(), 3);
        assert!(keys[0].descending);
        assert_eq!(keys[0].field.as_str(), "views");
        assert!(!keys[1].descending);
        assert_eq!(keys[2].field, FilterField::Id);
        assert!(SortKey::parse_list("-bad name").is_err());
        assert!(SortKey::parse_list("").unwrap().is_empty());
    }

    #[test]
    fn path_segments_must_be_identifiers() {
        assert!(ident("title_1").is_ok());
        assert!(ident("en-GB").is_ok());
        assert!(ident("a'b").is_err());
        assert!(ident("").is_err());
    }

    /// Regression (found by `tests/storage/fuzz_filter_sql.rs`): `filter[created_at][_gt]=` with an
    /// instant past year 9999 in UTC panicked ("local datetime out of valid range").
    #[test]
    fn instants_past_the_representable_range_do_not_panic() {
        let read = |s: &str| instant_floor(&Json::String(s.to_owned()));
        assert!(read("9999-12-31T23:00:00-02:00").is_none());
        assert!(read("9999-12-31T21:00:00-02:00").is_some());
        assert!(read("0000-01-01T00:30:00+01:00").is_some());
    }

    #[test]
    fn operands_are_cut_to_the_stored_microseconds() {
        let read = |s: &str| instant_floor(&Json::String(s.to_owned()));
        let (at, exact) = read("2026-01-02T03:04:05.1234567Z").unwrap();
        assert!(!exact);
        assert_eq!(at.nanosecond(), 123_456_000);
        assert!(read("2026-01-02T03:04:05.123456Z").unwrap().1);
        assert!(whole_micros(&Json::String("2026-01-02T03:04:05.1234567Z".into())).is_none());
    }

    /// The SQLite key of a stored timestamp orders as the instants do.
    #[test]
    fn sqlite_instant_keys_order_as_time() {
        use time::format_description::well_known::Rfc3339;
        let stored = [
            "0000-01-01T00:00:00Z",
            "1999-12-31T23:59:59.999999Z",
            "2000-01-01T00:00:00Z",
            "2026-01-02T03:04:05Z",
            "2026-01-02T03:04:05.000001Z",
            "2026-01-02T03:04:05.5Z",
            "2026-01-02T03:04:05.51Z",
            "2026-01-02T03:04:06Z",
            "9999-12-31T23:59:59.999999Z",
        ];
        let keys: Vec<String> = stored
            .iter()
            .map(|s| {
                let at = time::OffsetDateTime::parse(s, &Rfc3339).unwrap();
                assert_eq!(at.format(&Rfc3339).unwrap(), *s, "sqlx's text");
                s.replace('.', "").trim_end_matches('Z').to_owned()
            })
            .collect();
        let mut sorted = keys.clone();
        sorted.sort();
        assert_eq!(keys, sorted);
    }

    /// The common filters on indexed fields compile to the scalar index's own expressions,
    /// unchanged (SQLite reads them from the index, and seeks it for comparisons); only a
    /// numeric operand of 2^53 or more casts the value.
    #[test]
    fn shape_compiled_filters_keep_the_indexed_expressions() {
        let fields = [
            serde_json::json!({"name": "views", "type": "number"}),
            serde_json::json!({"name": "status", "type": "string"}),
            serde_json::json!({"name": "featured", "type": "boolean"}),
        ]
        .iter()
        .map(|f| FieldDef::from_json(f).unwrap())
        .collect();
        let schema = CollectionSchema::new(fields).unwrap();
        let locales = ContentLocales::new(&["en"], "en").unwrap();
        let scope = FilterScope {
            schema: &schema,
            locales: &locales,
            locale: locales.default_locale(),
        };
        let (_, index) = scalar_index_sql(DbBackend::Sqlite, 1, &schema).unwrap();
        assert_eq!(
            index.unwrap(),
            "CREATE INDEX ix_items_scalars_c1 ON items (json_extract(data, '$.\"views\"'), json_extract(data, '$.\"status\"'), json_type(data, '$.\"featured\"')) WHERE collection_id = 1 AND deleted_at IS NULL"
        );
        let compiled = |query: &str| {
            let (key, value) = query.split_once('=').unwrap();
            let filter = Filter::from_query([(key, value)]).unwrap();
            let mut sql = Sql::new(DbBackend::Sqlite);
            push_filter(&mut sql, "data", &filter, &scope).unwrap();
            sql.text().to_owned()
        };
        let views = "json_extract(data, '$.\"views\"')";
        let status = "json_extract(data, '$.\"status\"')";
        let featured = "json_type(data, '$.\"featured\"')";
        for (query, sql) in [
            ("filter[views][_gt]=10", format!(" AND ({views} > ?)")),
            ("filter[views][_eq]=10", format!(" AND ({views} = ?)")),
            (
                "filter[views][_in]=1,2",
                format!(" AND ({views} IN (?, ?))"),
            ),
            ("filter[views][_null]=1", format!(" AND ({views} IS NULL)")),
            (
                "filter[views][_gt]=9007199254740992",
                format!(" AND (CAST({views} AS REAL) > ?)"),
            ),
            ("filter[status][_eq]=x", format!(" AND ({status} = ?)")),
            ("filter[status][_lte]=x", format!(" AND ({status} <= ?)")),
            (
                "filter[status][_null]=1",
                format!(" AND (({status} IS NULL OR trim({status}, char(32, 9, 13, 10)) = ''))"),
            ),
            (
                "filter[featured][_eq]=1",
                format!(" AND ({featured} IN (?))"),
            ),
        ] {
            assert_eq!(compiled(query), sql, "{query}");
        }
    }

    #[test]
    fn blank_is_the_evaluators_set() {
        assert_eq!(blank_chars(false), "char(32, 9, 13, 10)");
        assert_eq!(
            blank_chars(true),
            "(chr(32) || chr(9) || chr(13) || chr(10))"
        );
    }
}
