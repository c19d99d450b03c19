//! What the model may read, and only through these tools, each a use case of the admin app run
//! as the signed-in user: what the user could not open in the items admin, the model cannot
//! read either (the same permission checks, the same 403 and 404). Read-only: no tool writes.
//!
//! - `list_collections`: the collections (slug, name, item count);
//! - `search_items {collection, query?}`: up to 10 live items labelled by the collection's
//!   presentation, `query` matching the label;
//! - `get_item {collection, id}`: one item as the items admin shows it.
//!
//! Every result is JSON text of at most [`MAX_RESULT_CHARS`] characters; a refusal or a bad
//! argument is a result too (`{"error": …}`), so the model can say it could not look.

use serde_json::{Value as Json, json};

use super::clip;
use crate::context::AppState;
use crate::error::AppError;
use crate::llm::provider::ToolCall;
use crate::principal::Principal;

/// The items admin's read: without it the model gets no tools.
const ITEMS_PERMISSION: &str = "can-show-collections";
/// The longest tool result handed back to the model, in characters.
pub(crate) const MAX_RESULT_CHARS: usize = 8_000;
/// Items one search answers.
const SEARCH_LIMIT: u64 = 10;
/// Collections `list_collections` answers.
const MAX_COLLECTIONS: usize = 100;

/// The tool definitions offered to the model: none without the items admin's read.
pub(crate) fn definitions(principal: &Principal) -> Vec<Json> {
    if !principal.may(ITEMS_PERMISSION) {
        return Vec::new();
    }
    vec![
        function(
            "list_collections",
            "List the content collections (slug, name, number of items).",
            json!({"type": "object", "properties": {}}),
        ),
        function(
            "search_items",
            "Find items of a collection by their title or label. Answers up to 10 items with id and label.",
            json!({
                "type": "object",
                "properties": {
                    "collection": {"type": "string", "description": "The collection's slug."},
                    "query": {"type": "string", "description": "Words to look for in the item's label."}
                },
                "required": ["collection"]
            }),
        ),
        function(
            "get_item",
            "Read one item of a collection with all its fields.",
            json!({
                "type": "object",
                "properties": {
                    "collection": {"type": "string", "description": "The collection's slug."},
                    "id": {"type": "integer", "description": "The item's id."}
                },
                "required": ["collection", "id"]
            }),
        ),
    ]
}

fn function(name: &str, description: &str, parameters: Json) -> Json {
    json!({
        "type": "function",
        "function": {"name": name, "description": description, "parameters": parameters}
    })
}

/// Runs one tool call as the principal; the result as JSON text for the model.
pub(crate) async fn run(state: &AppState, principal: &Principal, call: &ToolCall) -> String {
    let arguments: Json = if call.arguments.trim().is_empty() {
        json!({})
    } else {
        match serde_json::from_str(&call.arguments) {
            Ok(arguments) => arguments,
            Err(_) => return error("The arguments are not valid JSON."),
        }
    };
    let result = match call.name.as_str() {
        "list_collections" => list_collections(state, principal).await,
        "search_items" => search_items(state, principal, &arguments).await,
        "get_item" => get_item(state, principal, &arguments).await,
        _ => return error("There is no such tool."),
    };
    match result {
        Ok(value) => clip(&value.to_string(), MAX_RESULT_CHARS),
        Err(AppError::NotFound) => error("Not found."),
        Err(AppError::Forbidden(_)) => error("You may not read this."),
        Err(AppError::Invalid(errors)) => error(
            &errors
                .iter()
                .flat_map(|(_, messages)| messages.iter().cloned())
                .collect::<Vec<_>>()
                .join(" "),
        ),
        Err(err) => {
            tracing::warn!(error = %crate::telemetry::error_chain(&err), tool = %call.name, "ai: a tool failed");
            error("The tool failed.")
        }
    }
}

fn error(message: &str) -> String {
    json!({ "error": message }).to_string()
}

fn argument<'a>(arguments: &'a Json, name: &str) -> Result<&'a str, AppError> {
    arguments
        .get(name)
        .and_then(Json::as_str)
        .filter(|s| !s.is_empty() && s.len() <= 255)
        .ok_or_else(|| AppError::invalid(name, format!("The {name} argument is required.")))
}

async fn list_collections(state: &AppState, principal: &Principal) -> Result<Json, AppError> {
    let collections = crate::schema::collections::list(state, principal).await?;
    Ok(Json::Array(
        collections
            .into_iter()
            .take(MAX_COLLECTIONS)
            .map(|c| json!({"slug": c.slug, "name": c.name, "items": c.items_count}))
            .collect(),
    ))
}

async fn search_items(
    state: &AppState,
    principal: &Principal,
    arguments: &Json,
) -> Result<Json, AppError> {
    principal.require(ITEMS_PERMISSION)?;
    let slug = argument(arguments, "collection")?;
    let query = arguments
        .get("query")
        .and_then(Json::as_str)
        .map(|q| clip(q.trim(), 255))
        .filter(|q| !q.is_empty());
    let collection = state
        .snapshot()
        .await?
        .collection(slug)
        .cloned()
        .ok_or(AppError::NotFound)?;
    let page =
        crate::options::collection_items(state, &collection, query.as_deref(), 1, SEARCH_LIMIT)
            .await?;
    Ok(json!({
        "total": page.meta.total,
        "items": page.data.into_iter().map(|item| json!({"id": item.id, "label": item.label})).collect::<Vec<_>>(),
    }))
}

async fn get_item(
    state: &AppState,
    principal: &Principal,
    arguments: &Json,
) -> Result<Json, AppError> {
    let slug = argument(arguments, "collection")?;
    let id = match arguments.get("id") {
        Some(Json::Number(n)) => n.as_i64().map(|id| id.to_string()),
        Some(Json::String(s)) => Some(s.clone()),
        _ => None,
    }
    .ok_or_else(|| AppError::invalid("id", "The id argument is required."))?;
    let shown = crate::admin_items::show(state, principal, slug, &id, "").await?;
    serde_json::to_value(shown.data).map_err(AppError::internal)
}
