//! The handlers of the `/v1` API.

use std::collections::HashMap;

use agentweave_runtime::store::{RecordEnd, ThreadHead, ThreadRecord};
use agentweave_runtime::{InterruptInfo, Message};
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::access::RequestId;
use crate::approvals::{approvals_of, requester_of};
use crate::auth::Tenant;
use crate::error::ApiError;
use crate::extract::{ApiPath, JsonBody};
use crate::outward::{OutwardInterrupt, OutwardMessage};
use crate::principal::{Principal, Scope};
use crate::state::AppState;
use crate::thread::ThreadKey;
use crate::tree::{mermaid, svg, TreeNode};
use crate::turn;

/// Who may see the served flows and their trees: whoever may read, chat with or approve for
/// them (a requester needs a flow's name to chat; the console draws its tree for everyone).
const FLOW_READERS: &[Scope] = &[Scope::Read, Scope::Chat, Scope::Approve];

/// Who may see the interrupts threads wait on (the approvals queue): readers, and approvers,
/// whose work it is.
const QUEUE_READERS: &[Scope] = &[Scope::Read, Scope::Approve];

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

/// `GET /v1/health`: the process answers.
pub async fn health() -> Json<Value> {
    Json(json!({ "status": "ok" }))
}

/// `GET /v1/ready`: the store answers (503 otherwise).
pub async fn ready(State(state): State<AppState>) -> Result<Json<Value>, ApiError> {
    state.store().get("ready-probe").await?;
    Ok(Json(json!({ "status": "ready" })))
}

/// `GET /v1/me`: who the caller is (no scope needed): `{"id", "tenant", "scopes"}`. The console
/// shows Approve buttons only to a principal with `approve`.
pub async fn me(principal: Principal, Extension(tenant): Extension<Tenant>) -> Json<Value> {
    let scopes: Vec<&str> = principal.scope_set().iter().map(Scope::as_str).collect();
    Json(json!({ "id": principal.id(), "tenant": tenant.0, "scopes": scopes }))
}

/// `GET /v1/flows`: the served flows.
pub async fn list_flows(
    State(state): State<AppState>,
    principal: Principal,
) -> Result<Json<Value>, ApiError> {
    principal.require_any(FLOW_READERS)?;
    let flows: Vec<Value> = state
        .flows()
        .map(|f| {
            json!({
                "name": f.name(),
                "root": f.agent().name(),
                "description": f.agent().flow_description(),
            })
        })
        .collect();
    Ok(Json(json!({ "flows": flows })))
}

/// `GET /v1/flows/{flow}`: one flow, its tree and its Mermaid flowchart.
pub async fn get_flow(
    State(state): State<AppState>,
    principal: Principal,
    ApiPath(name): ApiPath<String>,
) -> Result<Json<Value>, ApiError> {
    principal.require_any(FLOW_READERS)?;
    let flow = state.flow(&name)?;
    Ok(Json(json!({
        "name": flow.name(),
        "root": flow.agent().name(),
        "description": flow.agent().flow_description(),
        "tree": TreeNode::of(flow.agent()),
        "mermaid": mermaid(flow.agent()),
    })))
}

/// `GET /v1/flows/{flow}/mermaid`: the flowchart as `text/vnd.mermaid`.
pub async fn get_mermaid(
    State(state): State<AppState>,
    principal: Principal,
    ApiPath(name): ApiPath<String>,
) -> Result<Response, ApiError> {
    principal.require_any(FLOW_READERS)?;
    let flow = state.flow(&name)?;
    Ok((
        [(header::CONTENT_TYPE, "text/vnd.mermaid; charset=utf-8")],
        mermaid(flow.agent()),
    )
        .into_response())
}

/// `GET /v1/flows/{flow}/svg`: the tree as an SVG picture (`image/svg+xml`).
pub async fn get_svg(
    State(state): State<AppState>,
    principal: Principal,
    ApiPath(name): ApiPath<String>,
) -> Result<Response, ApiError> {
    principal.require_any(FLOW_READERS)?;
    let flow = state.flow(&name)?;
    Ok((
        [(header::CONTENT_TYPE, "image/svg+xml; charset=utf-8")],
        svg(flow.name(), flow.agent()),
    )
        .into_response())
}

pub(crate) fn key(
    state: &AppState,
    flow: &str,
    tenant: &Tenant,
    id: &str,
) -> Result<ThreadKey, ApiError> {
    let flow = state.flow(flow)?;
    ThreadKey::new(flow.name(), &tenant.0, id)
}

/// The head of the thread `key` names; [`ApiError::UnknownThread`] if it has no record.
async fn head_of(state: &AppState, key: &ThreadKey) -> Result<ThreadHead, ApiError> {
    state
        .threads()
        .head(&key.store_id())
        .await?
        .ok_or_else(|| ApiError::UnknownThread {
            flow: key.flow.clone(),
            id: key.id.clone(),
        })
}

/// `POST /v1/flows/{flow}/threads/{thread}/turns`: runs one user turn, streamed as SSE. With
/// an `Idempotency-Key` header, a resend gets the turn the key started (see `idempotency`).
pub async fn post_turn(
    State(state): State<AppState>,
    request_id: RequestId,
    principal: Principal,
    Extension(tenant): Extension<Tenant>,
    ApiPath((flow, id)): ApiPath<(String, String)>,
    headers: axum::http::HeaderMap,
    JsonBody(request): JsonBody<TurnRequest>,
) -> Result<Response, ApiError> {
    principal.require(Scope::Chat)?;
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
    let served = state.flow(&flow)?;
    let mut turn_request = agentweave_runtime::TurnRequest::new(
        key.store_id(),
        Message::user(request.message.clone()),
    )
    .by(&principal);
    if let Some(idem) = crate::idempotency::header_key(&headers)? {
        let keyed = crate::idempotency::keyed(
            &state,
            "Idempotency-Key",
            principal.id(),
            &key,
            &idem,
            &json!({"route": "turns", "message": request.message}),
        )
        .await?;
        if keyed.again {
            let records = crate::idempotency::recorded(&state, &key, &keyed.run_id).await?;
            if !records.is_empty() {
                return Ok(crate::idempotency::recorded_turn_sse(
                    &records,
                    &key,
                    false,
                    state.limits(),
                ));
            }
        }
        turn_request = turn_request.run_id(keyed.run_id);
    }
    let permit = state.admit_run(&key.tenant, &key.store_id())?;
    let turn = served.runner().turn(turn_request).await?;
    let span = turn::turn_span(
        &key.flow,
        &key.id,
        Some(turn.number()),
        false,
        Some(turn.run_id()),
        &request_id.0,
        principal.id(),
    );
    Ok(turn::sse(turn, key.flow, key.id, false, state.limits(), permit, span).into_response())
}

/// `POST /v1/flows/{flow}/threads/{thread}/resume`: resumes the interrupt the thread waits on
/// with the caller's data, streamed as SSE. A checkpoint resumes once: a second resume gets 409.
pub async fn post_resume(
    State(state): State<AppState>,
    request_id: RequestId,
    principal: Principal,
    Extension(tenant): Extension<Tenant>,
    ApiPath((flow, id)): ApiPath<(String, String)>,
    headers: axum::http::HeaderMap,
    JsonBody(request): JsonBody<ResumeRequest>,
) -> Result<Response, ApiError> {
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
    // Scope before existence: a caller who may answer nothing learns nothing of the thread
    // (a fork point's continuation, which answers nothing, needs `chat`).
    state
        .flow(&flow)?
        .approvals()
        .require_resume(&state, &key.store_id(), &principal, &targets)
        .await?;
    let mut run_id = None;
    if let Some(idem) = crate::idempotency::header_key(&headers)? {
        let keyed = crate::idempotency::keyed(
            &state,
            "Idempotency-Key",
            principal.id(),
            &key,
            &idem,
            &json!({"route": "resume", "targets": targets.iter().collect::<std::collections::BTreeMap<_, _>>()}),
        )
        .await?;
        if keyed.again {
            let records = crate::idempotency::recorded(&state, &key, &keyed.run_id).await?;
            if !records.is_empty() {
                return Ok(crate::idempotency::recorded_turn_sse(
                    &records,
                    &key,
                    true,
                    state.limits(),
                ));
            }
        }
        run_id = Some(keyed.run_id);
    }
    head_of(&state, &key).await?;
    let served = state.flow(&flow)?;
    let permit = state.admit_run(&key.tenant, &key.store_id())?;
    // Who may answer is the engine's to check (the flow's approvals, as its runner's rule).
    let mut resume =
        agentweave_runtime::TurnRequest::resume(key.store_id(), targets).by(&principal);
    if let Some(run_id) = run_id {
        resume = resume.run_id(run_id);
    }
    let turn = served.runner().turn(resume).await?;
    let span = turn::turn_span(
        &key.flow,
        &key.id,
        Some(turn.number()),
        true,
        Some(turn.run_id()),
        &request_id.0,
        principal.id(),
    );
    Ok(turn::sse(turn, key.flow, key.id, true, state.limits(), permit, span).into_response())
}

/// The interrupts `record` ends waiting on, as the queue and the thread show them: each with
/// its thread, turn, id, info, address, the agent that asked (`agent`, the innermost agent of
/// its address) and who started the turn (`requested_by`, a principal id, when the server
/// knew). A fork point is no question for anyone (see [`agentweave_runtime::fork_point_step`])
/// and is left out.
pub(crate) fn pending_of(
    thread: &str,
    record: &ThreadRecord,
    requested_by: Option<&str>,
) -> Vec<Value> {
    if agentweave_runtime::fork_point_step(&record.end).is_some() {
        return Vec::new();
    }
    match &record.end {
        RecordEnd::Interrupted { interrupts, .. } => interrupts
            .iter()
            .map(|i| {
                let agent = i.address.last().map(|f| f.agent.clone());
                let i = OutwardInterrupt::of(i);
                json!({
                    "thread": thread,
                    "turn": record.turn,
                    "id": i.id,
                    "info": i.info,
                    "address": i.address,
                    "agent": agent,
                    "requested_by": requested_by,
                })
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// [`pending_of`] the head of the thread stored as `store_id` (`thread` in the caller's
/// words), with who started its last turn (read from the store when the head is a resume).
pub(crate) async fn pending_of_head(
    state: &AppState,
    store_id: &str,
    thread: &str,
    head: &ThreadHead,
) -> Result<Vec<Value>, ApiError> {
    if !matches!(head.last.end, RecordEnd::Interrupted { .. }) {
        return Ok(Vec::new());
    }
    let requester = if head.last.starts_turn() {
        head.last.by.clone()
    } else {
        let turn = head.last.turn;
        let records = state.threads().read(store_id, turn..turn + 1).await?;
        requester_of(&records, turn)
    };
    Ok(pending_of(thread, &head.last, requester.as_deref()))
}

/// `GET /v1/flows/{flow}/threads/{thread}`: the thread's messages and what it waits on.
pub async fn get_thread(
    State(state): State<AppState>,
    principal: Principal,
    Extension(tenant): Extension<Tenant>,
    ApiPath((flow, id)): ApiPath<(String, String)>,
) -> Result<Json<Value>, ApiError> {
    principal.require(Scope::Read)?;
    let key = key(&state, &flow, &tenant, &id)?;
    let head = head_of(&state, &key).await?;
    let messages = state
        .flow(&flow)?
        .runner()
        .thread(&key.store_id())
        .messages()
        .await?;
    let messages: Vec<Value> = messages
        .into_iter()
        .map(|m| {
            json!({
                "turn": m.turn,
                "agent": m.agent_name,
                "run_path": m.run_path,
                "message": OutwardMessage::of(&m.message),
            })
        })
        .collect();
    let records = state
        .flow(&flow)?
        .runner()
        .thread(&key.store_id())
        .records()
        .await?;
    Ok(Json(json!({
        "flow": key.flow,
        "thread": key.id,
        "turns": head.turns,
        "messages": messages,
        "pending": pending_of_head(&state, &key.store_id(), &key.id, &head).await?,
        "fork_point": agentweave_runtime::fork_point_step(&head.last.end)
            .map(|step| json!({ "step": step })),
        "approvals": approvals_of(&records),
        "spent": spent_of(&state, &key.store_id()).await,
    })))
}

/// What thread `store_id` has spent over all its turns (tokens, dollars, model calls), when
/// the server counts spending ([`ServerBuilder::spending`](crate::ServerBuilder::spending));
/// `null` otherwise, or if the store cannot say now.
async fn spent_of(state: &AppState, store_id: &str) -> Value {
    let Some(spending) = state.spending() else {
        return Value::Null;
    };
    match spending.thread_spent(store_id).await {
        Ok(spent) => json!({
            "input_tokens": spent.input_tokens,
            "output_tokens": spent.output_tokens,
            "total_tokens": spent.total_tokens(),
            "cost_usd": spent.cost_micro_usd as f64 / 1e6,
            "model_calls": spent.model_calls,
        }),
        Err(error) => {
            tracing::warn!(%error, "a thread's spending could not be read");
            Value::Null
        }
    }
}

/// `DELETE /v1/flows/{flow}/threads/{thread}`: deletes the thread and the checkpoint it waits
/// on (204; 404 if there is none).
pub async fn delete_thread(
    State(state): State<AppState>,
    principal: Principal,
    Extension(tenant): Extension<Tenant>,
    ApiPath((flow, id)): ApiPath<(String, String)>,
) -> Result<StatusCode, ApiError> {
    principal.require(Scope::Chat)?;
    let key = key(&state, &flow, &tenant, &id)?;
    if state
        .flow(&flow)?
        .runner()
        .thread(&key.store_id())
        .delete()
        .await?
    {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::UnknownThread { flow, id })
    }
}

/// `GET /v1/flows/{flow}/threads/{thread}/interrupts`: the interrupts the thread waits on, a
/// page at a time (`?limit=N&offset=M`, at most [`MAX_PAGE`](crate::paging::MAX_PAGE);
/// `next_offset` while more follow).
pub async fn thread_interrupts(
    State(state): State<AppState>,
    principal: Principal,
    Extension(tenant): Extension<Tenant>,
    ApiPath((flow, id)): ApiPath<(String, String)>,
    page: Result<Query<crate::paging::PageQuery>, QueryRejection>,
) -> Result<Json<Value>, ApiError> {
    principal.require_any(QUEUE_READERS)?;
    let page = crate::paging::PageQuery::of(page)?;
    let key = key(&state, &flow, &tenant, &id)?;
    let head = head_of(&state, &key).await?;
    let pending = pending_of_head(&state, &key.store_id(), &key.id, &head).await?;
    let (interrupts, next) = page.cut(pending, crate::paging::MAX_PAGE);
    Ok(Json(
        json!({ "interrupts": interrupts, "next_offset": next }),
    ))
}

/// `GET /v1/flows/{flow}/interrupts`: every interrupt the caller's threads of this flow wait
/// on, oldest thread id first, a page at a time (`?limit=N&offset=M`, at most
/// [`MAX_PAGE`](crate::paging::MAX_PAGE); `next_offset` while more follow).
pub async fn flow_interrupts(
    State(state): State<AppState>,
    principal: Principal,
    Extension(tenant): Extension<Tenant>,
    ApiPath(flow): ApiPath<String>,
    page: Result<Query<crate::paging::PageQuery>, QueryRejection>,
) -> Result<Json<Value>, ApiError> {
    principal.require_any(QUEUE_READERS)?;
    let page = crate::paging::PageQuery::of(page)?;
    let served = state.flow(&flow)?;
    let prefix = ThreadKey::prefix(served.name(), &tenant.0);
    let mut interrupts = Vec::new();
    for store_id in state.threads().list().await? {
        let Some(thread) = store_id.strip_prefix(&prefix) else {
            continue;
        };
        if let Some(head) = state.threads().head(&store_id).await? {
            interrupts.extend(pending_of_head(&state, &store_id, thread, &head).await?);
        }
    }
    let (interrupts, next) = page.cut(interrupts, crate::paging::MAX_PAGE);
    Ok(Json(
        json!({ "interrupts": interrupts, "next_offset": next }),
    ))
}

/// Any other path: a JSON 404.
pub async fn no_route() -> ApiError {
    ApiError::NoRoute
}

/// A known path with another method: a JSON 405.
pub async fn method_not_allowed() -> ApiError {
    ApiError::MethodNotAllowed
}

/// Checks that `principal` may give `targets` to the interrupts turn `turn` of `key`'s thread
/// waits on (`pending`), under the flow's approvals rule: what answers outside a turn request
/// (an A2A task's withdrawal) passes the same rule the engine checks for every turn request.
pub(crate) async fn authorize_answers(
    state: &AppState,
    served: &crate::ServedFlow,
    key: &ThreadKey,
    principal: &Principal,
    turn: u64,
    pending: &[InterruptInfo],
    targets: &std::collections::HashMap<String, serde_json::Value>,
) -> Result<(), ApiError> {
    let records = state
        .threads()
        .read(&key.store_id(), turn..turn + 1)
        .await?;
    let requester = requester_of(&records, turn);
    served
        .approvals()
        .check(principal, pending, targets, requester.as_deref())
}
