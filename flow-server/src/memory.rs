//! Long-term memory served under the principals ([`ServerBuilder::memory`](crate::ServerBuilder::memory)):
//! the native `/v1/memory/...` routes, and the rules every memory door of the server shares
//! (the Agent Protocol's `/v1/store/...` routes use them too).
//!
//! # Who reaches what
//!
//! Every item a request reads or writes is in the request's tenant (the principal's, as for
//! threads): the tenant is part of the item's key, so no request reaches another tenant's
//! items, whatever it names. Inside the tenant, the memory scope a request names (`scope`) is
//! allowed by the principal's scopes:
//!
//! | `scope` | what | read (`read` or `chat`) | write (`chat`) |
//! | --- | --- | --- | --- |
//! | `user` (default) | the principal's own user memory (its id is the user's) | yes | yes |
//! | `app` | the tenant's application memory | yes | `admin` only |
//! | `user:ID`, `thread:ID`, `KIND:ID` | another user's, a thread's, a resource's | `admin` only | `admin` only |
//!
//! A principal whose id cannot name a memory scope (1 to 100 characters of `A-Z a-z 0-9 . _ -`)
//! is refused with 403. Addresses are validated as the library validates them (`..`,
//! separators, look-alike letters refused with 400, never rewritten).
//!
//! # Routes
//!
//! | route | does |
//! | --- | --- |
//! | `GET /v1/memory/items?scope=&prefix=&limit=&offset=` | lists items (a page, `next_offset` while more follow) |
//! | `GET /v1/memory/item?scope=&namespace=&key=` | one item (404 if none) |
//! | `PUT /v1/memory/item` | writes one: `{scope?, namespace, key, value, text?, ttl_seconds?, expect_version?}`; answers `{"version"}` (409 if `expect_version` is not the item's) |
//! | `DELETE /v1/memory/item?scope=&namespace=&key=` | deletes one: `{"deleted": bool}` |
//! | `POST /v1/memory/search` | `{scope?, query, prefix?, limit?}`: the best items, with their `score` |
//!
//! An item is `{"scope", "namespace", "key", "value", "text", "version", "created_at",
//! "updated_at", "expires_at"}` (times in RFC 3339).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use agentweave_runtime::memory::{
    Expect, ItemKey, ListQuery, Memory, MemoryError, MemoryItem, Namespace, Partition, PutItem,
    Scope as MemoryScope, SearchQuery, Tenant as MemoryTenant,
};
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::routing::{get, post};
use axum::{Extension, Json, Router};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::auth::Tenant;
use crate::error::ApiError;
use crate::extract::JsonBody;
use crate::paging::MAX_PAGE;
use crate::principal::{Principal, Scope};
use crate::state::AppState;

/// The scopes that may read memory.
const READERS: &[Scope] = &[Scope::Read, Scope::Chat];

/// The native memory routes, for the authenticated part of `/v1`.
pub(crate) fn routes() -> Router<AppState> {
    Router::new()
        .route("/memory/items", get(list_items))
        .route(
            "/memory/item",
            get(get_item).put(put_item).delete(delete_item),
        )
        .route("/memory/search", post(search_items))
}

/// Reading or writing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Access {
    Read,
    Write,
}

/// The memory the server serves, or a 404 saying there is none.
pub(crate) fn served(state: &AppState) -> Result<&Memory, ApiError> {
    state
        .memory()
        .ok_or_else(|| ApiError::UnknownItem("this server keeps no long-term memory".into()))
}

/// The principal's own user partition in the request's tenant, if its scopes allow `access`.
pub(crate) fn own_partition(
    principal: &Principal,
    tenant: &Tenant,
    access: Access,
) -> Result<Partition, ApiError> {
    partition(principal, tenant, None, access)
}

/// The partition `scope` names (`None`: `user`) in the request's tenant, if the principal's
/// scopes allow `access` to it (see the [module docs](self)).
pub(crate) fn partition(
    principal: &Principal,
    tenant: &Tenant,
    scope: Option<&str>,
    access: Access,
) -> Result<Partition, ApiError> {
    let tenant = MemoryTenant::new(tenant.0.as_str()).map_err(|_| {
        ApiError::Forbidden("this request's tenant cannot name a memory partition".into())
    })?;
    let scope = match scope.unwrap_or("user") {
        "user" => {
            match access {
                Access::Read => principal.require_any(READERS)?,
                Access::Write => principal.require(Scope::Chat)?,
            }
            MemoryScope::user(principal.id()).map_err(|_| {
                ApiError::Forbidden(
                    "your principal's id cannot name a memory scope (1 to 100 characters of \
                     A-Z, a-z, 0-9, '.', '_' or '-'); ask the operator for such an id"
                        .into(),
                )
            })?
        }
        "app" => {
            match access {
                Access::Read => principal.require_any(READERS)?,
                Access::Write => principal.require(Scope::Admin)?,
            }
            MemoryScope::Application
        }
        other => {
            principal.require(Scope::Admin)?;
            let bad = |e: MemoryError| ApiError::BadRequest(format!("scope '{other}': {e}"));
            match other.split_once(':') {
                Some(("thread", id)) => MemoryScope::thread(id).map_err(bad)?,
                Some((kind, id)) => MemoryScope::resource(kind, id).map_err(bad)?,
                None => {
                    return Err(ApiError::BadRequest(format!(
                        "scope '{other}' is not one this server knows: use user, app, \
                         user:ID, thread:ID or KIND:ID"
                    )))
                }
            }
        }
    };
    Ok(Partition::new(tenant, scope))
}

/// A memory error as the caller sees it: what it can fix is said; what is internal is logged.
pub(crate) fn refused(e: MemoryError) -> ApiError {
    match e {
        MemoryError::Invalid { .. } | MemoryError::TooLarge { .. } => {
            ApiError::BadRequest(e.to_string())
        }
        MemoryError::VersionConflict { .. } => ApiError::Conflict(e.to_string()),
        other => {
            tracing::warn!(error = %other, "a memory request failed");
            ApiError::StoreUnavailable
        }
    }
}

/// Milliseconds since the epoch of `at`.
pub(crate) fn millis(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis().min(u64::MAX as u128) as u64)
}

/// An RFC 3339 time.
pub(crate) fn time(at: SystemTime) -> String {
    agentweave_a2a::wire::rfc3339(millis(at))
}

fn item_json(at: &Partition, item: &MemoryItem) -> Value {
    json!({
        "scope": shown_scope(at),
        "namespace": item.namespace.as_str(),
        "key": item.key.as_str(),
        "value": item.value,
        "text": item.text,
        "version": item.version,
        "created_at": time(item.created_at),
        "updated_at": time(item.updated_at),
        "expires_at": item.expires_at.map(time),
    })
}

/// The scope as a request names it (`user:ID` for a user's, so an admin sees whose).
fn shown_scope(at: &Partition) -> String {
    match &at.scope {
        MemoryScope::Application => "app".into(),
        MemoryScope::Thread(id) => format!("thread:{id}"),
        MemoryScope::Resource { kind, id } => format!("{kind}:{id}"),
    }
}

fn query<T>(query: Result<Query<T>, QueryRejection>) -> Result<T, ApiError> {
    query.map(|Query(q)| q).map_err(|e| {
        ApiError::BadRequest(format!(
            "the query string is not what this endpoint takes: {e}"
        ))
    })
}

fn namespace(path: &str) -> Result<Namespace, ApiError> {
    Namespace::parse(path).map_err(refused)
}

fn key(key: &str) -> Result<ItemKey, ApiError> {
    ItemKey::new(key).map_err(refused)
}

/// `?scope=&prefix=&limit=&offset=` of `GET /memory/items`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ListParams {
    #[serde(default)]
    scope: Option<String>,
    #[serde(default)]
    prefix: Option<String>,
    #[serde(default)]
    limit: Option<usize>,
    #[serde(default)]
    offset: Option<usize>,
}

async fn list_items(
    State(state): State<AppState>,
    principal: Principal,
    Extension(tenant): Extension<Tenant>,
    params: Result<Query<ListParams>, QueryRejection>,
) -> Result<Json<Value>, ApiError> {
    let params = query(params)?;
    let memory = served(&state)?;
    let at = partition(&principal, &tenant, params.scope.as_deref(), Access::Read)?;
    let size = params.limit.unwrap_or(MAX_PAGE).clamp(1, MAX_PAGE);
    let offset = params.offset.unwrap_or(0);
    let mut list = ListQuery::all().page(offset, size + 1);
    list.prefix = params.prefix.as_deref().map(namespace).transpose()?;
    let mut items = memory.list(&at, &list).await.map_err(refused)?;
    let more = items.len() > size;
    items.truncate(size);
    let items: Vec<Value> = items.iter().map(|i| item_json(&at, i)).collect();
    Ok(Json(json!({
        "items": items,
        "next_offset": more.then_some(offset + size),
    })))
}

/// `?scope=&namespace=&key=` of one item.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ItemParams {
    #[serde(default)]
    scope: Option<String>,
    namespace: String,
    key: String,
    #[serde(default)]
    expect_version: Option<u64>,
}

async fn get_item(
    State(state): State<AppState>,
    principal: Principal,
    Extension(tenant): Extension<Tenant>,
    params: Result<Query<ItemParams>, QueryRejection>,
) -> Result<Json<Value>, ApiError> {
    let params = query(params)?;
    let memory = served(&state)?;
    let at = partition(&principal, &tenant, params.scope.as_deref(), Access::Read)?;
    let (ns, k) = (namespace(&params.namespace)?, key(&params.key)?);
    match memory.get(&at, &ns, &k).await.map_err(refused)? {
        Some(item) => Ok(Json(item_json(&at, &item))),
        None => Err(ApiError::UnknownItem(format!(
            "no memory item '{k}' in namespace '{ns}' of this scope"
        ))),
    }
}

async fn delete_item(
    State(state): State<AppState>,
    principal: Principal,
    Extension(tenant): Extension<Tenant>,
    params: Result<Query<ItemParams>, QueryRejection>,
) -> Result<Json<Value>, ApiError> {
    let params = query(params)?;
    let memory = served(&state)?;
    let at = partition(&principal, &tenant, params.scope.as_deref(), Access::Write)?;
    let (ns, k) = (namespace(&params.namespace)?, key(&params.key)?);
    let deleted = memory
        .delete(&at, &ns, &k, params.expect_version)
        .await
        .map_err(refused)?;
    Ok(Json(json!({ "deleted": deleted })))
}

/// The body of `PUT /memory/item`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PutBody {
    #[serde(default)]
    scope: Option<String>,
    namespace: String,
    key: String,
    value: Value,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    ttl_seconds: Option<u64>,
    /// The version the item must be at (0: it must not exist).
    #[serde(default)]
    expect_version: Option<u64>,
}

async fn put_item(
    State(state): State<AppState>,
    principal: Principal,
    Extension(tenant): Extension<Tenant>,
    JsonBody(body): JsonBody<PutBody>,
) -> Result<Json<Value>, ApiError> {
    let memory = served(&state)?;
    let at = partition(&principal, &tenant, body.scope.as_deref(), Access::Write)?;
    let (ns, k) = (namespace(&body.namespace)?, key(&body.key)?);
    let mut put = PutItem::new(body.value).expect(match body.expect_version {
        None => Expect::Any,
        Some(0) => Expect::Absent,
        Some(v) => Expect::Version(v),
    });
    put.text = body.text;
    put.ttl = match body.ttl_seconds {
        Some(0) => {
            return Err(ApiError::BadRequest(
                "ttl_seconds must be at least 1 (leave it out for no expiry)".into(),
            ))
        }
        other => other.map(Duration::from_secs),
    };
    let version = memory.put(&at, &ns, &k, put).await.map_err(refused)?;
    Ok(Json(json!({ "version": version })))
}

/// The body of `POST /memory/search`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SearchBody {
    #[serde(default)]
    scope: Option<String>,
    query: String,
    #[serde(default)]
    prefix: Option<String>,
    #[serde(default)]
    limit: Option<usize>,
}

async fn search_items(
    State(state): State<AppState>,
    principal: Principal,
    Extension(tenant): Extension<Tenant>,
    JsonBody(body): JsonBody<SearchBody>,
) -> Result<Json<Value>, ApiError> {
    let memory = served(&state)?;
    let at = partition(&principal, &tenant, body.scope.as_deref(), Access::Read)?;
    let mut search =
        SearchQuery::new(body.query).limit(body.limit.unwrap_or(10).clamp(1, MAX_PAGE));
    if let Some(prefix) = &body.prefix {
        search = search.under(namespace(prefix)?);
    }
    let hits = memory.search(&at, search).await.map_err(refused)?;
    let items: Vec<Value> = hits
        .iter()
        .map(|h| {
            let mut item = item_json(&at, &h.item);
            item["score"] = json!(h.score);
            item
        })
        .collect();
    Ok(Json(json!({ "items": items })))
}
