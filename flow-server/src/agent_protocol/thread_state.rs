//! A thread's state beyond the current one: its history (a state per checkpoint), its
//! update (`update_state`), its copy, and the search over the caller's threads.

use std::sync::Arc;

use axum::Json;
use serde::Deserialize;
use serde_json::{json, Value};

use super::handlers::{Caller, ThreadMeta};
use crate::error::ApiError;
use crate::extract::{ApiPath, JsonBody};
use crate::principal::Scope;
use crate::thread::ThreadKey;
use agentweave_a2a::wire::{rfc3339, rfc3339_now};

/// `POST /v1/threads/{thread}/copy`: a new thread (a UUID) with the thread's records up to its
/// last step and its metadata (a fork at the last step: see the guide's "Durable execution").
pub(crate) async fn copy_thread(
    caller: Caller,
    ApiPath(thread): ApiPath<String>,
) -> Result<Json<Value>, ApiError> {
    caller.principal.require(Scope::Chat)?;
    let (meta, flow) = caller.known(&thread).await?;
    let copy = uuid::Uuid::new_v4().to_string();
    let meta = ThreadMeta {
        created_at: rfc3339_now(),
        ..meta
    };
    if let Some(flow) = &flow {
        let from = caller.key(flow, &thread)?;
        let to = caller.key(flow, &copy)?;
        let handle = flow.runner().thread(&from.store_id());
        let steps = handle
            .history()
            .await
            .map_err(|e| crate::time_travel::api_error(e, &from, Some(&to)))?;
        if let Some(last) = steps.len().checked_sub(1) {
            handle
                .fork(last as u64, &to.store_id())
                .await
                .map_err(|e| crate::time_travel::api_error(e, &from, Some(&to)))?;
        }
    }
    caller
        .threads
        .put(&caller.state, &caller.tenant, &copy, &meta)
        .await?;
    Ok(Json(caller.thread_json(&copy, &meta, flow.as_ref()).await?))
}

/// The body of `POST /v1/threads/{thread}/state` (LangGraph's `update_state`).
#[derive(Debug, Default, Deserialize)]
pub(crate) struct UpdateState {
    #[serde(default)]
    values: Option<Value>,
    #[serde(default)]
    as_node: Option<String>,
    #[serde(default)]
    checkpoint: Option<Value>,
    #[serde(default)]
    checkpoint_id: Option<String>,
}

/// `POST /v1/threads/{thread}/state`: merges `values` into the thread's values (a `null`
/// removes a key) as a state update of its history; answers the new checkpoint. `messages`
/// (the conversation, written by runs), `as_node` and an earlier `checkpoint` are refused
/// with a `422` saying what to do instead.
pub(crate) async fn update_state(
    caller: Caller,
    ApiPath(thread): ApiPath<String>,
    JsonBody(request): JsonBody<UpdateState>,
) -> Result<Json<Value>, ApiError> {
    caller.principal.require(Scope::Chat)?;
    if request.as_node.is_some() {
        return Err(ApiError::Unprocessable(
            "`as_node` is not served: an update here sets the thread's values, and the next \
             run starts where the thread's routing says; leave `as_node` out"
                .into(),
        ));
    }
    if request.checkpoint.is_some() || request.checkpoint_id.is_some() {
        return Err(ApiError::Unprocessable(
            "an update applies to the thread's latest checkpoint here: leave `checkpoint` out \
             (to change an earlier one, fork the thread at it: POST \
             /v1/flows/{flow}/threads/{thread}/fork)"
                .into(),
        ));
    }
    let values = match request.values {
        Some(Value::Object(map)) => map,
        _ => {
            return Err(ApiError::Unprocessable(
                "`values` is an object of the keys to set (a null removes a key)".into(),
            ))
        }
    };
    if values.contains_key("messages") {
        return Err(ApiError::Unprocessable(
            "`messages` is the thread's conversation, which only runs write: send the message \
             as a run's `input`; update other keys here"
                .into(),
        ));
    }
    let (_, flow) = caller.known(&thread).await?;
    let flow = flow.ok_or_else(|| {
        ApiError::Conflict(format!(
            "thread '{thread}' has had no run yet, so it has no state to update: start a run first"
        ))
    })?;
    let key = caller.key(&flow, &thread)?;
    let updated = flow
        .runner()
        .thread(&key.store_id())
        .update_state_by(values, caller.principal.id())
        .await
        .map_err(|e| crate::time_travel::api_error(e, &key, None))?;
    Ok(Json(json!({
        "checkpoint": {
            "thread_id": thread,
            "checkpoint_ns": "",
            "checkpoint_id": format!("{thread}-v{}", updated.version),
        },
    })))
}

/// The body of `POST /v1/threads/search`.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct SearchThreads {
    #[serde(default)]
    metadata: Option<serde_json::Map<String, Value>>,
    #[serde(default)]
    values: Option<serde_json::Map<String, Value>>,
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    ids: Option<Vec<String>>,
    #[serde(default)]
    limit: Option<usize>,
    #[serde(default)]
    offset: Option<usize>,
}

/// The most threads `POST /v1/threads/search` looks at (by id, per flow).
const SEARCH_THREADS: usize = 1000;

/// `POST /v1/threads/search`: the caller's threads that have had a run (of every served
/// flow, at most [`SEARCH_THREADS`] per flow), filtered by `metadata` and `values` (each key
/// equal), `status` (`idle`, `busy`, `interrupted`) and `ids`; `limit` (default 10, at most
/// [`MAX_PAGE`](crate::paging::MAX_PAGE)) from `offset`, most recently updated first.
pub(crate) async fn search_threads(
    caller: Caller,
    JsonBody(request): JsonBody<SearchThreads>,
) -> Result<Json<Value>, ApiError> {
    caller.principal.require(Scope::Read)?;
    if let Some(status) = request.status.as_deref() {
        if !matches!(status, "idle" | "busy" | "interrupted" | "error") {
            return Err(ApiError::Unprocessable(format!(
                "status '{}' is not a thread status: use idle, busy, interrupted or error",
                status.chars().take(40).collect::<String>()
            )));
        }
    }
    let limit = request
        .limit
        .unwrap_or(10)
        .clamp(1, crate::paging::MAX_PAGE);
    let offset = request.offset.unwrap_or(0);
    let ids = caller.state.threads().list().await?;
    let mut found: Vec<(u64, Value)> = Vec::new();
    for flow in caller.state.flows() {
        let prefix = ThreadKey::prefix(flow.name(), &caller.tenant.0);
        let threads: Vec<&str> = ids
            .iter()
            .filter_map(|id| id.strip_prefix(&prefix))
            .filter(|t| {
                request
                    .ids
                    .as_ref()
                    .map_or(true, |ids| ids.iter().any(|i| i == t))
            })
            .take(SEARCH_THREADS)
            .collect();
        for thread in threads {
            let meta = caller
                .threads
                .get(&caller.state, &caller.tenant, thread)
                .await?
                .unwrap_or(ThreadMeta {
                    flow: Some(flow.name().to_owned()),
                    metadata: json!({}),
                    created_at: rfc3339_now(),
                });
            let t = caller.thread_json(thread, &meta, Some(flow)).await?;
            let matches = |want: &Option<serde_json::Map<String, Value>>, have: &Value| {
                want.as_ref()
                    .map_or(true, |w| w.iter().all(|(k, v)| have.get(k) == Some(v)))
            };
            if !matches(&request.metadata, &t["metadata"])
                || !matches(&request.values, &t["values"])
                || request.status.as_deref().is_some_and(|s| t["status"] != s)
            {
                continue;
            }
            let key = caller.key(flow, thread)?;
            let at = caller
                .state
                .threads()
                .head(&key.store_id())
                .await?
                .map_or(0, |h| h.last.at_ms);
            found.push((at, t));
        }
    }
    found.sort_by_key(|(at, _)| std::cmp::Reverse(*at));
    Ok(Json(Value::Array(
        found
            .into_iter()
            .skip(offset)
            .take(limit)
            .map(|(at, mut t)| {
                t["updated_at"] = json!(rfc3339(at));
                t
            })
            .collect(),
    )))
}

/// The body of `POST .../history`.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct History {
    #[serde(default)]
    limit: Option<usize>,
    /// The page after `before`: a `checkpoint_id` an earlier page gave (a string, or
    /// `{"configurable": {"checkpoint_id": ID}}` as LangGraph's clients send it).
    #[serde(default)]
    before: Option<Value>,
}

/// The most states one page of a thread's history holds.
pub(crate) const MAX_HISTORY_PAGE: usize = 20;

/// The most bytes of states one page of a thread's history holds (at least one state).
pub(crate) const MAX_HISTORY_BYTES: usize = 4 * 1024 * 1024;

/// `POST /v1/threads/{thread}/history`: the state at each checkpoint (after each record of
/// the thread: a turn, the part of a turn before an interrupt, its resume, a state update),
/// newest first, a page at a time: `limit` (default 10) at most [`MAX_HISTORY_PAGE`], within
/// [`MAX_HISTORY_BYTES`]; `before` (the last state's `checkpoint_id`) gives the next page.
pub(crate) async fn thread_history(
    caller: Caller,
    ApiPath(thread): ApiPath<String>,
    JsonBody(request): JsonBody<History>,
) -> Result<Json<Value>, ApiError> {
    caller.principal.require(Scope::Read)?;
    let limit = request.limit.unwrap_or(10).clamp(1, MAX_HISTORY_PAGE);
    let (_, flow) = caller.known(&thread).await?;
    let Some(flow) = flow else {
        return Ok(Json(json!([])));
    };
    let key = caller.key(&flow, &thread)?;
    let records = flow.runner().thread(&key.store_id()).records().await?;
    // The page starts below `before`'s record (`{thread}-t{seq}`, as each state names it).
    let before = request.before.as_ref().map(|b| {
        b.as_str()
            .or_else(|| b["configurable"]["checkpoint_id"].as_str())
            .or_else(|| b["checkpoint_id"].as_str())
            .and_then(|id| id.strip_prefix(&format!("{thread}-t")))
            .and_then(|n| n.parse::<u64>().ok())
            .ok_or_else(|| {
                ApiError::BadRequest(
                    "`before` is a checkpoint_id of this thread's history (as a page gave it)"
                        .into(),
                )
            })
    });
    let below = match before {
        None => u64::MAX,
        Some(seq) => seq?,
    };
    // The thread's messages, and how many of them each record's checkpoint holds.
    let mut messages = Vec::new();
    let mut upto = Vec::with_capacity(records.len());
    for record in &records {
        if let agentweave_runtime::store::RecordStart::Turn { input } = &record.start {
            messages.extend(input.iter().map(|m| agentweave_runtime::ThreadMessage {
                turn: record.turn,
                agent_name: Arc::from(""),
                run_path: agentweave_runtime::RunPath::default(),
                message: m.clone(),
            }));
        }
        messages.extend(record.events.iter().filter_map(|e| {
            Some(agentweave_runtime::ThreadMessage {
                turn: record.turn,
                agent_name: e.agent_name.clone(),
                run_path: e.run_path.clone(),
                message: e.message.clone()?,
            })
        }));
        upto.push(messages.len());
    }
    let mut out = Vec::new();
    let mut bytes = 0;
    for (k, record) in records.iter().enumerate().rev() {
        if record.seq >= below {
            continue;
        }
        if out.len() == limit {
            break;
        }
        let head = agentweave_runtime::store::ThreadHead {
            id: key.store_id(),
            version: record.seq + 1,
            turns: record.turn + 1,
            last: record.clone(),
        };
        let mut s = super::convert::state(&thread, &messages[..upto[k]], Some(&head));
        s["checkpoint"]["checkpoint_id"] = json!(format!("{thread}-t{}", record.seq));
        s["created_at"] = json!(rfc3339(record.at_ms));
        s["metadata"]["step"] = json!(record.seq);
        s["metadata"]["source"] = json!(match record.start {
            agentweave_runtime::store::RecordStart::Turn { .. } => "input",
            agentweave_runtime::store::RecordStart::Resume { .. } => "loop",
            agentweave_runtime::store::RecordStart::Values { .. } => "update",
        });
        if let Some(parent) = k.checked_sub(1).map(|p| records[p].seq) {
            s["parent_checkpoint"] = json!({
                "thread_id": thread,
                "checkpoint_ns": "",
                "checkpoint_id": format!("{thread}-t{parent}"),
            });
        }
        bytes += s.to_string().len();
        if bytes > MAX_HISTORY_BYTES && !out.is_empty() {
            break;
        }
        out.push(s);
    }
    Ok(Json(Value::Array(out)))
}
