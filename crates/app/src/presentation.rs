//! How the admin app presents a collection: the item list's columns
//! (`PUT /collections/{collection}/list-columns`) and the item form's layout
//! (`PUT /collections/{collection}/form-layout`), both gated by `can-edit-collections`, checked
//! against the collection's fields, stored with the rest of its presentation (display field and
//! template are the schema editor's) and logged; the epoch moves, as for any schema change.
//!
//! A form layout is a list of sections, each `{"type": "section", "title": …, "fields": [names],
//! "collapsed": false}`: at most [`MAX_SECTIONS`] sections and [`MAX_LAYOUT_BYTES`] of JSON,
//! every name a field of the collection, none placed twice. Fields no section names are shown
//! after the sections in schema order; `[]` clears the layout (schema order, no sections).

use serde::Serialize;
use serde_json::{Map, Value as Json, json};
use vellum_storage::collections::{collection_by_id, set_presentation};
use vellum_storage::model::{Collection, Presentation};

use crate::activity::{self, Change};
use crate::context::AppState;
use crate::error::AppError;
use crate::input::Input;
use crate::principal::Principal;

/// The most columns a list shows.
pub const MAX_LIST_COLUMNS: usize = 50;
/// The item keys a list can show besides the collection's fields.
pub const SYSTEM_COLUMNS: [&str; 3] = ["id", "created_at", "updated_at"];
/// The most sections a form layout holds.
pub const MAX_SECTIONS: usize = 100;
/// The largest form layout, as stored JSON.
pub const MAX_LAYOUT_BYTES: usize = 64 * 1024;
/// The longest section title, in characters.
pub const MAX_TITLE: usize = 255;

/// `{"columns": [...]}` as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ListColumns {
    pub columns: Vec<String>,
}

/// `{"layout": [...]}` as stored (`[]` when there is none).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FormLayout {
    pub layout: Vec<Json>,
}

/// The collection named by `slug` in the current snapshot.
pub(crate) async fn collection(
    state: &AppState,
    slug: &str,
) -> Result<std::sync::Arc<Collection>, AppError> {
    state
        .snapshot()
        .await?
        .collection(slug)
        .cloned()
        .ok_or(AppError::NotFound)
}

/// The collection's presentation as stored now (not as the snapshot last saw it): the other
/// parts are written back unchanged.
async fn current(state: &AppState, collection: &Collection) -> Result<Presentation, AppError> {
    Ok(collection_by_id(state.db(), collection.id)
        .await?
        .ok_or(AppError::NotFound)?
        .presentation)
}

/// `PUT /collections/{collection}/list-columns`: `{"columns": [names]}`, 1 to
/// [`MAX_LIST_COLUMNS`] distinct names of fields or [`SYSTEM_COLUMNS`], in column order.
///
/// # Errors
/// 403 without `can-edit-collections`; 404 for an unknown collection; 422 naming `columns` or
/// `columns.N`; the database.
pub async fn set_list_columns(
    state: &AppState,
    principal: &Principal,
    slug: &str,
    body: &Json,
) -> Result<ListColumns, AppError> {
    principal.require("can-edit-collections")?;
    let collection = collection(state, slug).await?;
    let mut input = Input::new(body)?;
    let columns = read_columns(&mut input, &collection);
    input.finish()?;
    let columns =
        columns.ok_or_else(|| AppError::invalid("columns", "The columns field is required."))?;
    let mut presentation = current(state, &collection).await?;
    if presentation.list_columns.as_ref() != Some(&columns) {
        presentation.list_columns = Some(columns.clone());
        save(state, principal, &collection, &presentation, "list_columns").await?;
    }
    Ok(ListColumns { columns })
}

fn read_columns(input: &mut Input<'_>, collection: &Collection) -> Option<Vec<String>> {
    let list = match input.raw("columns") {
        None | Some(Json::Null) => {
            input.error("columns", "The columns field is required.");
            return None;
        }
        Some(Json::Array(list)) => list,
        Some(_) => {
            input.error(
                "columns",
                "The columns field must be a list of field names.",
            );
            return None;
        }
    };
    if list.is_empty() || list.len() > MAX_LIST_COLUMNS {
        input.error(
            "columns",
            format!("The columns field must list between 1 and {MAX_LIST_COLUMNS} names."),
        );
        return None;
    }
    let mut columns: Vec<String> = Vec::with_capacity(list.len());
    let mut ok = true;
    for (i, entry) in list.iter().enumerate() {
        let at = format!("columns.{i}");
        let Some(name) = entry.as_str() else {
            input.error(&at, "A column must be a field name.");
            ok = false;
            continue;
        };
        if !SYSTEM_COLUMNS.contains(&name) && collection.field(name).is_none() {
            input.error(&at, format!("The collection has no field {}.", shown(name)));
            ok = false;
        } else if columns.iter().any(|c| c == name) {
            input.error(&at, format!("The column {name} is listed twice."));
            ok = false;
        } else {
            columns.push(name.to_owned());
        }
    }
    ok.then_some(columns)
}

/// A name from a request, for a message: quoted, and cut short.
pub(crate) fn shown(name: &str) -> String {
    let cut: String = name.chars().take(64).collect();
    format!("\"{cut}\"")
}

/// `PUT /collections/{collection}/form-layout`: `{"layout": [sections]}` (see the module
/// documentation); `[]` clears it.
///
/// # Errors
/// 403 without `can-edit-collections`; 404 for an unknown collection; 422 naming `layout`,
/// `layout.N`, `layout.N.title`, `layout.N.fields` or `layout.N.fields.M`; the database.
pub async fn set_form_layout(
    state: &AppState,
    principal: &Principal,
    slug: &str,
    body: &Json,
) -> Result<FormLayout, AppError> {
    principal.require("can-edit-collections")?;
    let collection = collection(state, slug).await?;
    let mut input = Input::new(body)?;
    let layout = read_layout(&mut input, &collection);
    input.finish()?;
    let layout =
        layout.ok_or_else(|| AppError::invalid("layout", "The layout field is required."))?;
    let stored = (!layout.is_empty()).then(|| Json::Array(layout.clone()));
    let mut presentation = current(state, &collection).await?;
    if presentation.form_layout != stored {
        presentation.form_layout = stored;
        save(state, principal, &collection, &presentation, "form_layout").await?;
    }
    Ok(FormLayout { layout })
}

/// Stores a changed presentation, records which `part` changed and moves the epoch (every
/// replica's snapshot then carries it).
async fn save(
    state: &AppState,
    principal: &Principal,
    collection: &Collection,
    presentation: &Presentation,
    part: &'static str,
) -> Result<(), AppError> {
    set_presentation(state.db(), collection.id, presentation).await?;
    activity::record(
        state,
        Some(principal.user_id()),
        Change::new("collections", "updated")
            .subject("collection", &collection.slug)
            .changed([part]),
    )
    .await;
    state.invalidate().await;
    Ok(())
}

fn read_layout(input: &mut Input<'_>, collection: &Collection) -> Option<Vec<Json>> {
    let list = match input.raw("layout") {
        None | Some(Json::Null) => {
            input.error("layout", "The layout field is required.");
            return None;
        }
        Some(Json::Array(list)) => list,
        Some(_) => {
            input.error("layout", "The layout field must be a list of sections.");
            return None;
        }
    };
    if list.len() > MAX_SECTIONS {
        input.error(
            "layout",
            format!("The layout must not have more than {MAX_SECTIONS} sections."),
        );
        return None;
    }
    let mut placed: Vec<&str> = Vec::new();
    let mut sections = Vec::with_capacity(list.len());
    let mut ok = true;
    for (i, entry) in list.iter().enumerate() {
        match read_section(input, collection, i, entry, &mut placed) {
            Some(section) => sections.push(section),
            None => ok = false,
        }
    }
    if !ok {
        return None;
    }
    let size = serde_json::to_vec(&sections).map_or(usize::MAX, |b| b.len());
    if size > MAX_LAYOUT_BYTES {
        input.error(
            "layout",
            format!("The layout must not be larger than {MAX_LAYOUT_BYTES} bytes of JSON."),
        );
        return None;
    }
    Some(sections)
}

/// One section, normalized (`type`, `title`, `fields`, `collapsed`); `None` after recording its
/// problems.
fn read_section<'a>(
    input: &mut Input<'_>,
    collection: &Collection,
    i: usize,
    entry: &'a Json,
    placed: &mut Vec<&'a str>,
) -> Option<Json> {
    let at = format!("layout.{i}");
    let Some(section) = entry.as_object() else {
        input.error(&at, "A section must be an object with a title and fields.");
        return None;
    };
    let mut ok = true;
    if let Some(key) = section
        .keys()
        .find(|k| !["type", "title", "fields", "collapsed"].contains(&k.as_str()))
    {
        input.error(&at, format!("A section has no key {}.", shown(key)));
        ok = false;
    }
    match section.get("type") {
        None => {}
        Some(Json::String(t)) if t == "section" => {}
        Some(_) => {
            input.error(&format!("{at}.type"), "The type must be \"section\".");
            ok = false;
        }
    }
    let title = match section.get("title") {
        Some(Json::String(t)) if !t.trim().is_empty() && t.chars().count() <= MAX_TITLE => {
            Some(t.clone())
        }
        _ => {
            input.error(
                &format!("{at}.title"),
                format!("The title must be a text of 1 to {MAX_TITLE} characters."),
            );
            None
        }
    };
    let collapsed = match section.get("collapsed") {
        None | Some(Json::Null) => Some(false),
        Some(Json::Bool(b)) => Some(*b),
        Some(_) => {
            input.error(
                &format!("{at}.collapsed"),
                "The collapsed key must be true or false.",
            );
            None
        }
    };
    let fields = read_section_fields(input, collection, &at, section, placed);
    match (ok, title, collapsed, fields) {
        (true, Some(title), Some(collapsed), Some(fields)) => Some(json!({
            "type": "section", "title": title, "fields": fields, "collapsed": collapsed
        })),
        _ => None,
    }
}

fn read_section_fields<'a>(
    input: &mut Input<'_>,
    collection: &Collection,
    at: &str,
    section: &'a Map<String, Json>,
    placed: &mut Vec<&'a str>,
) -> Option<Vec<String>> {
    let Some(Json::Array(names)) = section.get("fields") else {
        input.error(
            &format!("{at}.fields"),
            "The fields key must be a list of field names.",
        );
        return None;
    };
    if names.is_empty() {
        input.error(
            &format!("{at}.fields"),
            "A section must hold at least one field.",
        );
        return None;
    }
    let mut fields = Vec::with_capacity(names.len());
    let mut ok = true;
    for (j, name) in names.iter().enumerate() {
        let key = format!("{at}.fields.{j}");
        let Some(name) = name.as_str() else {
            input.error(&key, "A field must be named by a string.");
            ok = false;
            continue;
        };
        if collection.field(name).is_none() {
            input.error(
                &key,
                format!("The collection has no field {}.", shown(name)),
            );
            ok = false;
        } else if placed.contains(&name) {
            input.error(&key, format!("The field {name} is placed twice."));
            ok = false;
        } else {
            placed.push(name);
            fields.push(name.to_owned());
        }
    }
    ok.then_some(fields)
}
