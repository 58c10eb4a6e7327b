//! The handlers of the `/v1` API.

use std::collections::HashMap;

use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use axum::http::{header, StatusCode};
use axum::response::sse::{KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use flow_runtime::{Message, Session};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::auth::Tenant;
use crate::error::ApiError;
use crate::state::AppState;
use crate::thread::{self, ThreadKey, ThreadRecord};
use crate::tree::{mermaid, TreeNode};
use crate::turn::{self, Start, TurnContext};
use crate::wire::PublicInterrupt;

/// The body of `POST .../turns`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TurnRequest {
    /// The user's message.
    pub message: String,
}

/// The body of `POST .../resume`: either `targets` (interrupt id -> data) or one
/// `interrupt_id` with its `data`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResumeRequest {
    /// Resume data by interrupt id.
    #[serde(default)]
    pub targets: HashMap<String, Value>,
    /// One interrupt's id (with `data`).
    #[serde(default)]
    pub interrupt_id: Option<String>,
    /// The data for `interrupt_id`.
    #[serde(default)]
    pub data: Option<Value>,
}

fn body<T>(json: Result<Json<T>, JsonRejection>, state: &AppState) -> Result<T, ApiError> {
    match json {
        Ok(Json(v)) => Ok(v),
        Err(JsonRejection::BytesRejection(_)) => Err(ApiError::PayloadTooLarge {
            limit: state.limits().max_body_bytes,
        }),
        Err(e) if e.status() == StatusCode::PAYLOAD_TOO_LARGE => Err(ApiError::PayloadTooLarge {
            limit: state.limits().max_body_bytes,
        }),
        Err(e) => Err(ApiError::BadRequest(e.body_text())),
    }
}

/// `GET /v1/health`: the process answers.
pub async fn health() -> Json<Value> {
    Json(json!({ "status": "ok" }))
}

/// `GET /v1/ready`: the store answers (503 otherwise).
pub async fn ready(State(state): State<AppState>) -> Result<Json<Value>, ApiError> {
    state.store().get("ready-probe").await?;
    Ok(Json(json!({ "status": "ready" })))
}

/// `GET /v1/flows`: the served flows.
pub async fn list_flows(State(state): State<AppState>) -> Json<Value> {
    let flows: Vec<Value> = state
        .flows()
        .map(|f| {
            json!({
                "name": f.name(),
                "root": f.agent().name(),
                "description": f.agent().description(),
            })
        })
        .collect();
    Json(json!({ "flows": flows }))
}

/// `GET /v1/flows/{flow}`: one flow, its tree and its Mermaid flowchart.
pub async fn get_flow(
    State(state): State<AppState>,
    Path(name): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let flow = state.flow(&name)?;
    Ok(Json(json!({
        "name": flow.name(),
        "root": flow.agent().name(),
        "description": flow.agent().description(),
        "tree": TreeNode::of(flow.agent()),
        "mermaid": mermaid(flow.agent()),
    })))
}

/// `GET /v1/flows/{flow}/mermaid`: the flowchart as `text/vnd.mermaid`.
pub async fn get_mermaid(
    State(state): State<AppState>,
    Path(name): Path<String>,
) -> Result<Response, ApiError> {
    let flow = state.flow(&name)?;
    Ok((
        [(header::CONTENT_TYPE, "text/vnd.mermaid; charset=utf-8")],
        mermaid(flow.agent()),
    )
        .into_response())
}

fn key(state: &AppState, flow: &str, tenant: &Tenant, id: &str) -> Result<ThreadKey, ApiError> {
    let flow = state.flow(flow)?;
    ThreadKey::new(flow.name(), &tenant.0, id)
}

/// `POST /v1/flows/{flow}/threads/{thread}/turns`: runs one user turn, streamed as SSE.
pub async fn post_turn(
    State(state): State<AppState>,
    Extension(tenant): Extension<Tenant>,
    Path((flow, id)): Path<(String, String)>,
    request: Result<Json<TurnRequest>, JsonRejection>,
) -> Result<Response, ApiError> {
    let request = body(request, &state)?;
    let key = key(&state, &flow, &tenant, &id)?;
    let limit = state.limits().max_message_bytes;
    if request.message.len() > limit {
        return Err(ApiError::BadRequest(format!(
            "the message has {} bytes; this server takes at most {limit} (Limits::max_message_bytes)",
            request.message.len()
        )));
    }
    if request.message.trim().is_empty() {
        return Err(ApiError::BadRequest("the message is empty".into()));
    }
    let record = thread::load(&**state.store(), &key)
        .await?
        .unwrap_or_else(ThreadRecord::empty);
    if let Some(pending) = &record.pending {
        let ids: Vec<&str> = pending.interrupts.iter().map(|i| &*i.id).collect();
        return Err(ApiError::Conflict(format!(
            "thread '{id}' waits for interrupt(s) {}: resume it (POST .../resume) before the next turn",
            ids.join(", ")
        )));
    }
    let turn = record.turns + 1;
    let user = Message::user(request.message);
    let mut input: Vec<_> = record
        .messages
        .iter()
        .cloned()
        .map(std::sync::Arc::new)
        .collect();
    input.push(std::sync::Arc::new(user.clone()));
    let served = state.flow(&flow)?;
    let events = served
        .runner()
        .run_checkpointed(key.checkpoint_id(turn), Session::new(), input);
    let cx = TurnContext {
        state: state.clone(),
        key,
        record,
        turn,
        start: Start::Turn(user),
    };
    Ok(Sse::new(turn::sse(cx, events))
        .keep_alive(KeepAlive::new().interval(state.limits().sse_keep_alive))
        .into_response())
}

/// `POST /v1/flows/{flow}/threads/{thread}/resume`: resumes the interrupt the thread waits on
/// with the caller's data, streamed as SSE. A checkpoint resumes once: a second resume gets 409.
pub async fn post_resume(
    State(state): State<AppState>,
    Extension(tenant): Extension<Tenant>,
    Path((flow, id)): Path<(String, String)>,
    request: Result<Json<ResumeRequest>, JsonRejection>,
) -> Result<Response, ApiError> {
    let request = body(request, &state)?;
    let key = key(&state, &flow, &tenant, &id)?;
    let mut targets = request.targets;
    match (request.interrupt_id, request.data) {
        (Some(i), data) => {
            targets.insert(i, data.unwrap_or(Value::Null));
        }
        (None, Some(_)) => {
            return Err(ApiError::BadRequest(
                "`data` needs the `interrupt_id` it is for".into(),
            ))
        }
        (None, None) => {}
    }
    let record =
        thread::load(&**state.store(), &key)
            .await?
            .ok_or_else(|| ApiError::UnknownThread {
                flow: flow.clone(),
                id: id.clone(),
            })?;
    let Some(pending) = record.pending.clone() else {
        return Err(ApiError::Conflict(format!(
            "thread '{id}' waits for no interrupt (it may have been resumed already)"
        )));
    };
    let served = state.flow(&flow)?;
    let events = served.runner().resume(&pending.checkpoint, targets).await?;
    let turn = record.turns;
    let cx = TurnContext {
        state: state.clone(),
        key,
        record,
        turn,
        start: Start::Resume,
    };
    Ok(Sse::new(turn::sse(cx, events))
        .keep_alive(KeepAlive::new().interval(state.limits().sse_keep_alive))
        .into_response())
}

/// `GET /v1/flows/{flow}/threads/{thread}`: the thread's messages and what it waits on.
pub async fn get_thread(
    State(state): State<AppState>,
    Extension(tenant): Extension<Tenant>,
    Path((flow, id)): Path<(String, String)>,
) -> Result<Json<Value>, ApiError> {
    let key = key(&state, &flow, &tenant, &id)?;
    let record = thread::load(&**state.store(), &key)
        .await?
        .ok_or(ApiError::UnknownThread { flow, id })?;
    let pending = record.pending.as_ref().map(|p| {
        json!({
            "checkpoint": p.checkpoint,
            "interrupts": p.interrupts.iter().map(PublicInterrupt::of).collect::<Vec<_>>(),
        })
    });
    Ok(Json(json!({
        "flow": key.flow,
        "thread": key.id,
        "turns": record.turns,
        "messages": record.messages,
        "pending": pending,
    })))
}

/// `DELETE /v1/flows/{flow}/threads/{thread}`: deletes the thread and its checkpoints (204; 404
/// if there is none).
pub async fn delete_thread(
    State(state): State<AppState>,
    Extension(tenant): Extension<Tenant>,
    Path((flow, id)): Path<(String, String)>,
) -> Result<StatusCode, ApiError> {
    let key = key(&state, &flow, &tenant, &id)?;
    if thread::delete(&**state.store(), &key).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::UnknownThread { flow, id })
    }
}

/// `GET /v1/flows/{flow}/threads/{thread}/interrupts`: the interrupts the thread waits on.
pub async fn thread_interrupts(
    State(state): State<AppState>,
    Extension(tenant): Extension<Tenant>,
    Path((flow, id)): Path<(String, String)>,
) -> Result<Json<Value>, ApiError> {
    let key = key(&state, &flow, &tenant, &id)?;
    let record = thread::load(&**state.store(), &key)
        .await?
        .ok_or(ApiError::UnknownThread { flow, id })?;
    let interrupts: Vec<Value> = record
        .pending
        .iter()
        .flat_map(|p| {
            let key = &key;
            p.interrupts.iter().map(move |i| {
                json!({
                    "thread": key.id,
                    "checkpoint": p.checkpoint,
                    "id": i.id,
                    "info": i.info,
                    "address": i.address_string(),
                })
            })
        })
        .collect();
    Ok(Json(json!({ "interrupts": interrupts })))
}

/// Any other path: a JSON 404.
pub async fn no_route() -> ApiError {
    ApiError::NoRoute
}
