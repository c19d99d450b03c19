//! The GraphQL schema of one role: a list field and a by-id field per collection the role may
//! read, and in each item's `data` only the fields its field rules let it read, so a hidden field
//! does not exist for the role (asking for it is a validation error, as for any unknown field).
//!
//! Every resolver of a root field calls the same use case as REST ([`items::list`],
//! [`items::show`]) with the REST query string its arguments stand for ([`ReadArgs`]), and the
//! fields below it pick from the rendered JSON: the data, the policy and the errors are REST's.

use std::collections::HashSet;
use std::sync::Arc;

use async_graphql::dynamic::{
    Field, FieldFuture, FieldValue, InputValue, Object, ResolverContext, Scalar, Schema,
    SchemaError, TypeRef,
};
use serde_json::Value;
use vellum_domain::{FieldDef, ValueShape};
use vellum_policy::{CollectionAction, Role};
use vellum_storage::model::Collection;

use super::args::ReadArgs;
use super::{Limits, Run, gql_value};
use crate::items;

/// The scalar every JSON-shaped value (relations, files, lists, blocks, translatable values,
/// expansions) and the `filter` argument use.
pub(super) const JSON: &str = "JSON";
const PAGE_META: &str = "PageMeta";

/// One collection's names in the schema.
struct Names {
    /// The list field; `<list>_by_id` is the by-id field.
    list: String,
    /// The prefix of `<prefix>Item`, `<prefix>Data`, `<prefix>Page`.
    prefix: String,
}

/// The schema of `role` over `collections` (in id order, which decides who keeps a name two
/// slugs would share).
///
/// # Errors
/// A bug in the names this module gives (the builder checks them).
pub fn build(
    role: &Role,
    collections: &[Arc<Collection>],
    limits: Limits,
) -> Result<Schema, SchemaError> {
    let mut query = Object::new("Query").description(
        "The collections this role may read: a list field and a `<collection>_by_id` field each.",
    );
    let mut builder = Schema::build("Query", None, None)
        .register(Scalar::new(JSON).description("Any JSON value, as the REST API answers it."))
        .register(page_meta())
        .limit_depth(limits.depth)
        .limit_complexity(limits.complexity)
        .limit_recursive_depth(limits.depth.max(32))
        .limit_directives(8);
    let mut taken: HashSet<String> = HashSet::from(["_collections".to_owned()]);
    let mut prefixes: HashSet<String> = HashSet::new();
    let mut exposed = Vec::new();
    for collection in collections {
        if !role.may(&collection.slug, CollectionAction::Read).allowed {
            continue;
        }
        let Some(names) = names_for(collection.slug.as_str(), &mut taken, &mut prefixes) else {
            tracing::warn!(
                collection = collection.slug.as_str(),
                "a collection's GraphQL name is taken by an earlier collection: left out"
            );
            continue;
        };
        let policy = role.field_policy(&collection.slug);
        // A name GraphQL reserves (`__…`) cannot be a field: such a field is left out.
        let readable: Vec<&FieldDef> = collection
            .schema()
            .fields()
            .iter()
            .filter(|f| policy.can_read(f.name.as_str()) && !f.name.as_str().starts_with("__"))
            .collect();
        let item = item_type(&names.prefix, !readable.is_empty());
        if !readable.is_empty() {
            builder = builder.register(data_type(&names.prefix, &readable));
        }
        builder = builder.register(item).register(page_type(&names.prefix));
        let slug = collection.slug.to_string();
        query = query
            .field(list_field(&names, &slug))
            .field(by_id_field(&names, &slug));
        exposed.push(slug);
    }
    query = query.field(
        Field::new(
            "_collections",
            TypeRef::named_nn_list_nn(TypeRef::STRING),
            move |_| {
                let slugs = exposed.iter().map(|s| FieldValue::value(s.clone()));
                FieldFuture::Value(Some(FieldValue::list(slugs)))
            },
        )
        .description("The slugs of the collections in this schema."),
    );
    builder.register(query).finish()
}

/// `blog-posts` is the field `blog_posts` and the types `BlogPosts…`; a slug that starts with a
/// digit gets a leading `_`. `None` when another collection already has the field names.
fn names_for(
    slug: &str,
    taken: &mut HashSet<String>,
    prefixes: &mut HashSet<String>,
) -> Option<Names> {
    let mut list = slug.replace('-', "_");
    if list.starts_with(|c: char| c.is_ascii_digit()) {
        list.insert(0, '_');
    }
    let by_id = format!("{list}_by_id");
    if taken.contains(&list) || taken.contains(&by_id) {
        return None;
    }
    taken.insert(list.clone());
    taken.insert(by_id);
    let base: String = list
        .split('_')
        .filter(|part| !part.is_empty())
        .map(|part| {
            let mut chars = part.chars();
            chars.next().map_or_else(String::new, |first| {
                first.to_ascii_uppercase().to_string() + chars.as_str()
            })
        })
        .collect();
    // A type name may not start with a digit either (`2024_posts` becomes `C2024Posts`).
    let base = if base.starts_with(|c: char| c.is_ascii_digit()) {
        format!("C{base}")
    } else {
        base
    };
    let mut prefix = base.clone();
    let mut n = 2;
    while !prefixes.insert(prefix.clone()) {
        prefix = format!("{base}{n}");
        n += 1;
    }
    Some(Names { list, prefix })
}

fn page_meta() -> Object {
    ["current_page", "last_page", "per_page", "total"]
        .into_iter()
        .fold(
            Object::new(PAGE_META).description("As REST's `meta`."),
            |object, key| object.field(pick(key, TypeRef::named_nn(TypeRef::INT))),
        )
}

/// `<prefix>Page { data: [<prefix>Item!]!, meta: PageMeta! }`.
fn page_type(prefix: &str) -> Object {
    let item = format!("{prefix}Item");
    Object::new(format!("{prefix}Page"))
        .field(Field::new("data", TypeRef::named_nn_list_nn(item), |ctx| {
            FieldFuture::new(async move {
                let page = ctx.parent_value.try_downcast_ref::<Value>()?;
                let items = page["data"].as_array().map_or(&[][..], Vec::as_slice);
                Ok(Some(FieldValue::list(
                    items.iter().map(|item| FieldValue::borrowed_any(item)),
                )))
            })
        }))
        .field(Field::new("meta", TypeRef::named_nn(PAGE_META), |ctx| {
            FieldFuture::new(async move {
                let page = ctx.parent_value.try_downcast_ref::<Value>()?;
                Ok(Some(FieldValue::borrowed_any(&page["meta"])))
            })
        }))
}

/// `<prefix>Item`: REST's CollectionItemResource, key for key.
fn item_type(prefix: &str, has_data: bool) -> Object {
    let int = || TypeRef::named(TypeRef::INT);
    let text = || TypeRef::named(TypeRef::STRING);
    let json = || TypeRef::named(JSON);
    let mut object = Object::new(format!("{prefix}Item"))
        .field(pick("id", TypeRef::named_nn(TypeRef::INT)))
        .field(pick("collection_id", TypeRef::named_nn(TypeRef::INT)))
        .field(pick("created_at", text()))
        .field(pick("updated_at", text()))
        .field(pick("user_created_id", int()))
        .field(pick("user_updated_id", int()))
        .field(pick("user_created", json()))
        .field(pick("user_updated", json()));
    if has_data {
        let data = format!("{prefix}Data");
        object = object.field(Field::new("data", TypeRef::named_nn(data), |ctx| {
            FieldFuture::new(async move {
                let item = ctx.parent_value.try_downcast_ref::<Value>()?;
                Ok(Some(FieldValue::borrowed_any(&item["data"])))
            })
        }));
    }
    object
}

/// `<prefix>Data`: the fields the role may read, typed by their value shape.
fn data_type(prefix: &str, fields: &[&FieldDef]) -> Object {
    fields
        .iter()
        .fold(Object::new(format!("{prefix}Data")), |object, field| {
            object.field(
                pick(field.name.as_str(), scalar_for(field)).description(format!(
                    "A `{}` field{}.",
                    field.field_type.as_str(),
                    if field.translatable {
                        ", translatable"
                    } else {
                        ""
                    }
                )),
            )
        })
}

/// Plain text, numbers and booleans get GraphQL's scalars; everything else (and any translatable
/// value, which `includeAllTranslations` turns into a locale map) is `JSON`, so `include`
/// can turn an id into an object without changing the schema.
fn scalar_for(field: &FieldDef) -> TypeRef {
    if field.translatable {
        return TypeRef::named(JSON);
    }
    match field.shape() {
        ValueShape::Text | ValueShape::Fingerprint => TypeRef::named(TypeRef::STRING),
        ValueShape::Number => TypeRef::named(TypeRef::FLOAT),
        ValueShape::Boolean => TypeRef::named(TypeRef::BOOLEAN),
        ValueShape::StringList
        | ValueShape::Geometry
        | ValueShape::FileId
        | ValueShape::FileIds
        | ValueShape::ItemId
        | ValueShape::ItemIds
        | ValueShape::JunctionLinks
        | ValueShape::Blocks
        | ValueShape::CollectionLinks => TypeRef::named(JSON),
    }
}

/// A field whose value is its parent JSON object's member `key` (null when absent), as is.
fn pick(key: &str, ty: TypeRef) -> Field {
    let member = key.to_owned();
    Field::new(key, ty, move |ctx| {
        let member = member.clone();
        FieldFuture::new(async move {
            let parent = ctx.parent_value.try_downcast_ref::<Value>()?;
            match parent.get(&member) {
                None | Some(Value::Null) => Ok(None),
                Some(value) => Ok(Some(FieldValue::value(gql_value(value.clone())?))),
            }
        })
    })
}

/// `<list>(filter, sort, page, perPage, locale, include, includeAllTranslations): <prefix>Page!`.
fn list_field(names: &Names, slug: &str) -> Field {
    let owned = slug.to_owned();
    let field = Field::new(
        names.list.clone(),
        TypeRef::named_nn(format!("{}Page", names.prefix)),
        move |ctx| {
            let slug = owned.clone();
            FieldFuture::new(async move {
                let run = ctx.data::<Arc<Run>>()?;
                run.count_call()?;
                let query = read_args(&ctx, true)?
                    .query_string()
                    .map_err(|e| run.error(e))?;
                let page = items::list(&run.state, &run.actor, &slug, &query)
                    .await
                    .map_err(|e| run.error(e))?;
                let data: Vec<Value> = page
                    .data
                    .iter()
                    .map(|raw| serde_json::from_str(raw.get()))
                    .collect::<Result<_, _>>()
                    .map_err(|e| run.error(crate::AppError::internal(e)))?;
                let meta = serde_json::to_value(page.meta)
                    .map_err(|e| run.error(crate::AppError::internal(e)))?;
                Ok(Some(FieldValue::owned_any(
                    serde_json::json!({"data": data, "meta": meta}),
                )))
            })
        },
    )
    .description(format!(
        "A page of `{slug}` items, as `GET /api/v1/collections/{slug}/items` answers it."
    ));
    [
        ("filter", JSON),
        ("sort", TypeRef::STRING),
        ("page", TypeRef::INT),
        ("perPage", TypeRef::INT),
    ]
    .into_iter()
    .fold(field, |field, (name, ty)| {
        field.argument(InputValue::new(name, TypeRef::named(ty)))
    })
    .argument(InputValue::new("locale", TypeRef::named(TypeRef::STRING)))
    .argument(InputValue::new("include", TypeRef::named(TypeRef::STRING)))
    .argument(InputValue::new(
        "includeAllTranslations",
        TypeRef::named(TypeRef::BOOLEAN),
    ))
}

/// `<list>_by_id(id: ID!, locale, include, includeAllTranslations): <prefix>Item` (null when
/// the item does not exist for the role, as REST's 404).
fn by_id_field(names: &Names, slug: &str) -> Field {
    let owned = slug.to_owned();
    Field::new(
        format!("{}_by_id", names.list),
        TypeRef::named(format!("{}Item", names.prefix)),
        move |ctx| {
            let slug = owned.clone();
            FieldFuture::new(async move {
                let run = ctx.data::<Arc<Run>>()?;
                run.count_call()?;
                let id = match ctx.args.try_get("id")?.as_value() {
                    async_graphql::Value::String(id) => id.clone(),
                    other => other.to_string(),
                };
                let query = read_args(&ctx, false)?
                    .query_string()
                    .map_err(|e| run.error(e))?;
                match items::show(&run.state, &run.actor, &slug, &id, &query).await {
                    Ok(raw) => {
                        let item: Value = serde_json::from_str(raw.get())
                            .map_err(|e| run.error(crate::AppError::internal(e)))?;
                        Ok(Some(FieldValue::owned_any(item)))
                    }
                    Err(crate::AppError::NotFound) => Ok(None),
                    Err(err) => Err(run.error(err)),
                }
            })
        },
    )
    .description(format!(
        "One `{slug}` item, as `GET /api/v1/collections/{slug}/items/{{id}}` answers it; null \
         where REST answers 404."
    ))
    .argument(InputValue::new("id", TypeRef::named_nn(TypeRef::ID)))
    .argument(InputValue::new("locale", TypeRef::named(TypeRef::STRING)))
    .argument(InputValue::new("include", TypeRef::named(TypeRef::STRING)))
    .argument(InputValue::new(
        "includeAllTranslations",
        TypeRef::named(TypeRef::BOOLEAN),
    ))
}

/// The arguments a field was given (`list`: the list-only ones too).
fn read_args(ctx: &ResolverContext<'_>, list: bool) -> async_graphql::Result<ReadArgs> {
    let text = |name: &str| -> async_graphql::Result<Option<String>> {
        ctx.args
            .get(name)
            .filter(|v| !v.is_null())
            .map(|v| v.string().map(str::to_owned))
            .transpose()
    };
    let int = |name: &str| -> async_graphql::Result<Option<i64>> {
        ctx.args
            .get(name)
            .filter(|v| !v.is_null())
            .map(|v| v.i64())
            .transpose()
    };
    let mut args = ReadArgs {
        locale: text("locale")?,
        include: text("include")?,
        all_translations: ctx
            .args
            .get("includeAllTranslations")
            .filter(|v| !v.is_null())
            .map(|v| v.boolean())
            .transpose()?,
        ..ReadArgs::default()
    };
    if list {
        args.filter = ctx
            .args
            .get("filter")
            .map(|v| v.as_value().clone().into_json())
            .transpose()?;
        args.sort = text("sort")?;
        args.page = int("page")?;
        args.per_page = int("perPage")?;
    }
    Ok(args)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_graphql_names_and_never_shared() {
        let mut taken = HashSet::from(["_collections".to_owned()]);
        let mut prefixes = HashSet::new();
        let mut name =
            |slug: &str| names_for(slug, &mut taken, &mut prefixes).map(|n| (n.list, n.prefix));
        assert_eq!(
            name("blog-posts"),
            Some(("blog_posts".into(), "BlogPosts".into()))
        );
        // Same field name as an earlier collection: left out.
        assert_eq!(name("blog_posts"), None);
        assert_eq!(
            name("2024-news"),
            Some(("_2024_news".into(), "C2024News".into()))
        );
        // `a_b` and `a__b` are different fields but would be the same types.
        assert_eq!(name("a_b"), Some(("a_b".into(), "AB".into())));
        assert_eq!(name("a__b"), Some(("a__b".into(), "AB2".into())));
        // `x` takes `x_by_id`, so a collection `x_by_id` cannot have its list field.
        assert_eq!(name("x"), Some(("x".into(), "X".into())));
        assert_eq!(name("x_by_id"), None);
    }
}
