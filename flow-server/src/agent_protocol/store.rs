//! The Agent Protocol's `store` routes, as `langgraph-sdk`'s `client.store` calls them
//! (`put_item`, `get_item`, `search_items`, `list_namespaces`, `delete_item`), over the
//! server's long-term memory.
//!
//! Every item is kept in the caller's own user partition of the request's tenant (see
//! [`crate::memory`]): a LangGraph namespace (`["documents", "user123"]`) is a namespace inside
//! it, so two principals naming the same namespace reach two different items, and no namespace
//! reaches another tenant. Reading needs the `read` or `chat` scope, writing `chat`.
//!
//! | route | SDK call | answers |
//! | --- | --- | --- |
//! | `PUT /v1/store/items` | `put_item(namespace, key, value, index=, ttl=)` | 204 |
//! | `GET /v1/store/items?namespace=a.b&key=` | `get_item` | the item, 404 if none |
//! | `DELETE /v1/store/items` | `delete_item` | 204 |
//! | `POST /v1/store/items/search` | `search_items(prefix, filter=, limit=, offset=, query=)` | `{"items": [...]}` |
//! | `POST /v1/store/namespaces` | `list_namespaces(prefix=, suffix=, max_depth=, limit=, offset=)` | `{"namespaces": [[...]]}` |
//!
//! `index` picks the text an item is searched by: the value's string fields (the default),
//! the fields at the given paths (`"a.b"`, `"$"` for the whole value), or none (`false`).
//! `ttl` is in minutes. A search with a `query` ranks by full text, or by meaning when the
//! memory has an embedder; without one it lists in (namespace, key) order. `filter` keeps items
//! whose top-level fields equal the given values. Reads do not refresh a time to live
//! (`refresh_ttl` is accepted and has no effect). Labels are 1 to 64 characters of
//! `A-Z a-z 0-9 _ -` (the SDK joins them with `.` in `get_item`).

use std::collections::BTreeSet;
use std::time::Duration;

use agentweave_runtime::memory::{
    Filter, ItemKey, ListQuery, MemoryItem, Namespace, PutItem, SearchQuery, MAX_TEXT_BYTES,
};
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::{Extension, Json};
use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::auth::Tenant;
use crate::error::ApiError;
use crate::extract::JsonBody;
use crate::memory::{own_partition, refused, served, time, Access};
use crate::paging::MAX_PAGE;
use crate::principal::Principal;
use crate::state::AppState;

/// A LangGraph namespace as a memory namespace (labels with `.` refused: `get_item` could
/// not name them).
fn namespace(labels: &[String]) -> Result<Namespace, ApiError> {
    if let Some(label) = labels.iter().find(|l| l.contains('.')) {
        return Err(ApiError::BadRequest(format!(
            "namespace label '{}' holds a '.', which the store's namespaces cannot",
            label.chars().take(64).collect::<String>()
        )));
    }
    Namespace::new(labels).map_err(refused)
}

fn labels(namespace: &Namespace) -> Vec<&str> {
    namespace.segments().collect()
}

fn item_json(item: &MemoryItem) -> Value {
    json!({
        "namespace": labels(&item.namespace),
        "key": item.key.as_str(),
        "value": item.value,
        "created_at": time(item.created_at),
        "updated_at": time(item.updated_at),
    })
}

/// The body of `PUT /store/items`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PutBody {
    namespace: Vec<String>,
    key: String,
    value: Map<String, Value>,
    #[serde(default)]
    index: Option<Value>,
    /// Minutes.
    #[serde(default)]
    ttl: Option<f64>,
}

/// The text an item is searched by, as `index` asks.
fn indexed_text(value: &Value, index: Option<&Value>) -> Result<Option<String>, ApiError> {
    let mut parts = Vec::new();
    match index {
        None | Some(Value::Null) => strings(value, &mut parts),
        Some(Value::Bool(false)) => return Ok(None),
        Some(Value::Array(paths)) => {
            for path in paths {
                let Some(path) = path.as_str() else {
                    return Err(ApiError::BadRequest(
                        "index lists field paths as strings (\"a.b\", or \"$\" for the whole value)"
                            .into(),
                    ));
                };
                let mut at = Some(value);
                if path != "$" {
                    for field in path.split('.') {
                        at = at.and_then(|v| v.get(field));
                    }
                }
                if let Some(found) = at {
                    strings(found, &mut parts);
                }
            }
        }
        Some(_) => {
            return Err(ApiError::BadRequest(
                "index is false, or a list of field paths".into(),
            ))
        }
    }
    let mut text = parts.join(" ");
    if text.len() > MAX_TEXT_BYTES {
        let mut cut = MAX_TEXT_BYTES;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
    }
    Ok((!text.trim().is_empty()).then_some(text))
}

/// Every string in `value`, in order.
fn strings<'a>(value: &'a Value, out: &mut Vec<&'a str>) {
    match value {
        Value::String(s) => out.push(s),
        Value::Array(items) => items.iter().for_each(|v| strings(v, out)),
        Value::Object(fields) => fields.values().for_each(|v| strings(v, out)),
        _ => {}
    }
}

/// `PUT /store/items`.
pub(crate) async fn put_item(
    State(state): State<AppState>,
    principal: Principal,
    Extension(tenant): Extension<Tenant>,
    JsonBody(body): JsonBody<PutBody>,
) -> Result<StatusCode, ApiError> {
    let memory = served(&state)?;
    let at = own_partition(&principal, &tenant, Access::Write)?;
    let ns = namespace(&body.namespace)?;
    let key = ItemKey::new(body.key).map_err(refused)?;
    let value = Value::Object(body.value);
    let text = indexed_text(&value, body.index.as_ref())?;
    let mut put = PutItem::new(value);
    put.text = text;
    put.ttl = match body.ttl {
        None => None,
        Some(minutes) if minutes.is_finite() && minutes > 0.0 && minutes < 1e9 => {
            Some(Duration::from_secs_f64(minutes * 60.0))
        }
        Some(_) => {
            return Err(ApiError::BadRequest(
                "ttl is a positive number of minutes (leave it out for no expiry)".into(),
            ))
        }
    };
    memory.put(&at, &ns, &key, put).await.map_err(refused)?;
    Ok(StatusCode::NO_CONTENT)
}

/// `?namespace=a.b&key=` of `GET /store/items`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct GetParams {
    namespace: String,
    key: String,
    #[serde(default)]
    #[allow(dead_code)]
    refresh_ttl: Option<bool>,
}

/// `GET /store/items`.
pub(crate) async fn get_item(
    State(state): State<AppState>,
    principal: Principal,
    Extension(tenant): Extension<Tenant>,
    params: Result<Query<GetParams>, QueryRejection>,
) -> Result<Json<Value>, ApiError> {
    let Query(params) = params
        .map_err(|e| ApiError::BadRequest(format!("get_item takes ?namespace=a.b&key=k ({e})")))?;
    let memory = served(&state)?;
    let at = own_partition(&principal, &tenant, Access::Read)?;
    let ns = Namespace::new(params.namespace.split('.')).map_err(refused)?;
    let key = ItemKey::new(params.key).map_err(refused)?;
    match memory.get(&at, &ns, &key).await.map_err(refused)? {
        Some(item) => Ok(Json(item_json(&item))),
        None => Err(ApiError::UnknownItem(format!(
            "no item '{key}' in namespace {:?}",
            labels(&ns)
        ))),
    }
}

/// The body of `DELETE /store/items`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct DeleteBody {
    namespace: Vec<String>,
    key: String,
}

/// `DELETE /store/items`.
pub(crate) async fn delete_item(
    State(state): State<AppState>,
    principal: Principal,
    Extension(tenant): Extension<Tenant>,
    JsonBody(body): JsonBody<DeleteBody>,
) -> Result<StatusCode, ApiError> {
    let memory = served(&state)?;
    let at = own_partition(&principal, &tenant, Access::Write)?;
    let ns = namespace(&body.namespace)?;
    let key = ItemKey::new(body.key).map_err(refused)?;
    memory.delete(&at, &ns, &key, None).await.map_err(refused)?;
    Ok(StatusCode::NO_CONTENT)
}

/// The body of `POST /store/items/search`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SearchBody {
    #[serde(default)]
    namespace_prefix: Vec<String>,
    #[serde(default)]
    filter: Option<Map<String, Value>>,
    #[serde(default)]
    limit: Option<usize>,
    #[serde(default)]
    offset: Option<usize>,
    #[serde(default)]
    query: Option<String>,
    #[serde(default)]
    #[allow(dead_code)]
    refresh_ttl: Option<bool>,
}

/// `POST /store/items/search`.
pub(crate) async fn search_items(
    State(state): State<AppState>,
    principal: Principal,
    Extension(tenant): Extension<Tenant>,
    JsonBody(body): JsonBody<SearchBody>,
) -> Result<Json<Value>, ApiError> {
    let memory = served(&state)?;
    let at = own_partition(&principal, &tenant, Access::Read)?;
    let prefix = if body.namespace_prefix.is_empty() {
        None
    } else {
        Some(namespace(&body.namespace_prefix)?)
    };
    let filters: Vec<Filter> = body
        .filter
        .unwrap_or_default()
        .into_iter()
        .map(|(field, value)| Filter::eq([field], value))
        .collect();
    let limit = body.limit.unwrap_or(10).clamp(1, MAX_PAGE);
    let offset = body.offset.unwrap_or(0);
    let items: Vec<Value> = match body.query.filter(|q| !q.trim().is_empty()) {
        Some(query) => {
            let mut search = SearchQuery::new(query).limit(offset + limit);
            search.prefix = prefix;
            search.filters = filters;
            let hits = memory.search(&at, search).await.map_err(refused)?;
            hits.iter()
                .skip(offset)
                .map(|h| {
                    let mut item = item_json(&h.item);
                    item["score"] = json!(h.score);
                    item
                })
                .collect()
        }
        None => {
            let mut list = ListQuery::all().page(offset, limit);
            list.prefix = prefix;
            list.filters = filters;
            let items = memory.list(&at, &list).await.map_err(refused)?;
            items.iter().map(item_json).collect()
        }
    };
    Ok(Json(json!({ "items": items })))
}

/// The body of `POST /store/namespaces`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct NamespacesBody {
    #[serde(default)]
    prefix: Option<Vec<String>>,
    #[serde(default)]
    suffix: Option<Vec<String>>,
    #[serde(default)]
    max_depth: Option<usize>,
    #[serde(default)]
    limit: Option<usize>,
    #[serde(default)]
    offset: Option<usize>,
}

/// `POST /store/namespaces`.
pub(crate) async fn list_namespaces(
    State(state): State<AppState>,
    principal: Principal,
    Extension(tenant): Extension<Tenant>,
    JsonBody(body): JsonBody<NamespacesBody>,
) -> Result<Json<Value>, ApiError> {
    let memory = served(&state)?;
    let at = own_partition(&principal, &tenant, Access::Read)?;
    let prefix = match body.prefix.as_deref() {
        None | Some([]) => None,
        Some(labels) => Some(namespace(labels)?),
    };
    let mut list = ListQuery::all();
    list.prefix = prefix;
    let items = memory.list(&at, &list).await.map_err(refused)?;
    let suffix = body.suffix.unwrap_or_default();
    let mut found = BTreeSet::new();
    for item in &items {
        let labels: Vec<&str> = item.namespace.segments().collect();
        if !labels.ends_with(&suffix.iter().map(String::as_str).collect::<Vec<_>>()) {
            continue;
        }
        let depth = body
            .max_depth
            .unwrap_or(usize::MAX)
            .max(1)
            .min(labels.len());
        found.insert(
            labels[..depth]
                .iter()
                .map(|l| (*l).to_owned())
                .collect::<Vec<_>>(),
        );
    }
    let limit = body.limit.unwrap_or(MAX_PAGE).clamp(1, MAX_PAGE);
    let namespaces: Vec<Vec<String>> = found
        .into_iter()
        .skip(body.offset.unwrap_or(0))
        .take(limit)
        .collect();
    Ok(Json(json!({ "namespaces": namespaces })))
}
