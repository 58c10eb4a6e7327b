//! Time travel over HTTP: a thread's steps (`GET .../threads/{thread}/history`, scope `read`;
//! each `{"id", "parent", "turn", "agent", "run_path", "kind", "text", "at_ms"}`, `text` what
//! the step says in a line: the user's words, the model's, a tool call or result, a question)
//! and a fork of a thread at a step into a new thread of the same flow and tenant
//! (`POST .../threads/{thread}/fork`, scope `chat`). The fork is then used like any thread:
//! `POST .../turns` after a turn's end, `POST .../resume` at an interrupt (answered again) or
//! at a fork point (`{"targets": {}}`: the turn goes on from the step; it answers nobody's
//! question, so `chat` is enough, and a fork point is in no approvals queue). A thread's values
//! (the session values its next turn starts with) are read with `GET .../threads/{thread}/state`
//! (scope `read`) and changed with `POST .../threads/{thread}/state` (scope `chat`), which
//! appends a values step to its history.

use agentweave_runtime::store::{RecordEnd, RecordStart, RecordedEvent, ThreadRecord};
use agentweave_runtime::{fork_point_step, ForkEnd, TimeTravelError};
use agentweave_runtime::{Action, InterruptInfo, Role};
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Extension, Json, Router};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::auth::Tenant;
use crate::error::ApiError;
use crate::extract::{ApiPath, JsonBody};
use crate::principal::{Principal, Scope};
use crate::routes::{key, pending_of};
use crate::state::AppState;
use crate::thread::ThreadKey;

/// The routes of this module, to merge under `/v1`.
pub(crate) fn routes() -> Router<AppState> {
    Router::new()
        .route("/flows/{flow}/threads/{thread}/history", get(history))
        .route("/flows/{flow}/threads/{thread}/fork", post(fork))
        .route(
            "/flows/{flow}/threads/{thread}/state",
            get(state_of).post(update_state),
        )
}

/// The body of `POST .../fork`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ForkRequest {
    /// The step to fork at (an `id` of `GET .../history`).
    pub at_step: u64,
    /// The new thread's id (1 to 40 characters of `A-Z a-z 0-9 _ -`; must not exist).
    pub thread: String,
}

/// The body of `POST .../state`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StateRequest {
    /// The values to set, by key; a `null` value removes its key.
    pub values: serde_json::Map<String, Value>,
}

/// A time-travel error in the caller's words (never the store's thread key).
pub(crate) fn api_error(e: TimeTravelError, from: &ThreadKey, to: Option<&ThreadKey>) -> ApiError {
    match e {
        TimeTravelError::UnknownThread { .. } => ApiError::UnknownThread {
            flow: from.flow.clone(),
            id: from.id.clone(),
        },
        TimeTravelError::UnknownStep { step, steps, .. } => ApiError::BadRequest(format!(
            "thread '{}' has no step {step} (it has {steps}); GET .../history lists them",
            from.id
        )),
        TimeTravelError::ThreadExists { .. } => ApiError::Conflict(format!(
            "thread '{}' already exists; fork into a new thread id",
            to.map_or(from.id.as_str(), |t| t.id.as_str())
        )),
        TimeTravelError::NothingToRerun { step, .. } => ApiError::BadRequest(format!(
            "step {step} of thread '{}' ends its turn; fork there and send a new message",
            from.id
        )),
        TimeTravelError::CheckpointGone { step, .. } => ApiError::Conflict(format!(
            "the interrupt at step {step} of thread '{}' can no longer be answered again; fork \
             at the step before it",
            from.id
        )),
        TimeTravelError::AwaitingResume { turn, .. } => ApiError::Conflict(format!(
            "thread '{}' waits for the answer to an interrupt of turn {turn}, so its values \
             cannot change now; answer it (POST .../resume) or fork at the step before it",
            from.id
        )),
        TimeTravelError::ReservedKey { key, .. } => ApiError::BadRequest(format!(
            "value key '{key}' is reserved (keys starting with 'agentflow.' belong to one \
             run); use another key"
        )),
        TimeTravelError::Thread(e) => e.into(),
        TimeTravelError::Checkpoint(e) => e.into(),
        _ => ApiError::Conflict("the fork could not be made".into()),
    }
}

/// `GET /v1/flows/{flow}/threads/{thread}/history`: the thread's steps, in order.
pub async fn history(
    State(state): State<AppState>,
    principal: Principal,
    Extension(tenant): Extension<Tenant>,
    ApiPath((flow, id)): ApiPath<(String, String)>,
) -> Result<Json<Value>, ApiError> {
    principal.require(Scope::Read)?;
    let key = key(&state, &flow, &tenant, &id)?;
    let steps = state
        .flow(&flow)?
        .runner()
        .thread(&key.store_id())
        .history()
        .await
        .map_err(|e| api_error(e, &key, None))?;
    // Steps are the records' parts in order, so the records read after them say each one's
    // text (a record appended in between only adds texts at the end).
    let records = state
        .flow(&flow)?
        .runner()
        .thread(&key.store_id())
        .records()
        .await?;
    let texts = step_texts(&records);
    let steps: Vec<Value> = steps
        .into_iter()
        .map(|s| {
            let text = texts.get(s.id as usize).cloned().unwrap_or_default();
            json!({
                "id": s.id,
                "parent": s.parent,
                "turn": s.turn,
                "agent": s.agent,
                "run_path": s.run_path,
                "kind": s.kind.label(),
                "text": text,
                "at_ms": s.at_ms,
            })
        })
        .collect();
    Ok(Json(
        json!({ "flow": key.flow, "thread": key.id, "steps": steps }),
    ))
}

/// The longest text a history step shows, in characters.
const STEP_TEXT_CHARS: usize = 200;

/// What each step of a thread whose records are `records` says, in the order of its steps
/// (the runtime's: a values change, a turn's input, each recorded event, the interrupt a record
/// ends at): the user's words, the model's, a tool's call or result, a transfer, a question.
fn step_texts(records: &[ThreadRecord]) -> Vec<String> {
    let mut out = Vec::new();
    for record in records {
        match &record.start {
            RecordStart::Values { values } => out.push(format!(
                "values: {}",
                values.keys().cloned().collect::<Vec<_>>().join(", ")
            )),
            RecordStart::Turn { input } => out.push(
                input
                    .iter()
                    .filter(|m| m.role == Role::User)
                    .map(|m| m.content.as_str())
                    .collect::<Vec<_>>()
                    .join("\n"),
            ),
            RecordStart::Resume { .. } => {}
        }
        for event in &record.events {
            out.push(event_text(event));
        }
        if let RecordEnd::Interrupted { interrupts, .. } = &record.end {
            out.push(match fork_point_step(&record.end) {
                Some(step) => format!("fork point at step {step}"),
                None => interrupts.first().map(question_of).unwrap_or_default(),
            });
        }
    }
    out.into_iter().map(|t| shorten(&t)).collect()
}

/// What a recorded event says in a line.
fn event_text(event: &RecordedEvent) -> String {
    let mut parts = Vec::new();
    if let Some(m) = &event.message {
        match m.role {
            Role::Tool => parts.push(format!(
                "{} returned: {}",
                m.tool_name.as_deref().unwrap_or("a tool"),
                m.content
            )),
            _ => {
                if !m.content.is_empty() {
                    parts.push(m.content.clone());
                }
                for call in &m.tool_calls {
                    parts.push(format!("calls {}({})", call.name, call.arguments));
                }
            }
        }
    }
    match &event.action {
        Some(Action::TransferToAgent(to)) => parts.push(format!("transfer to {to}")),
        Some(Action::Interrupted(info)) => parts.push(question_of(info)),
        Some(Action::Exit) => parts.push("exit".into()),
        Some(Action::BreakLoop(_)) => parts.push("break loop".into()),
        _ => {}
    }
    parts.join(" · ")
}

/// An interrupt's question (`question` or `message` of its info), or its info as JSON.
fn question_of(info: &InterruptInfo) -> String {
    ["question", "message"]
        .iter()
        .find_map(|k| info.info.get(*k).and_then(Value::as_str))
        .map_or_else(|| info.info.to_string(), str::to_owned)
}

/// `text` cut to [`STEP_TEXT_CHARS`] characters (with `…` when cut).
fn shorten(text: &str) -> String {
    match text.char_indices().nth(STEP_TEXT_CHARS) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

/// `POST /v1/flows/{flow}/threads/{thread}/fork`: copies the thread up to `at_step` into the
/// new thread `thread` (201).
pub async fn fork(
    State(state): State<AppState>,
    principal: Principal,
    Extension(tenant): Extension<Tenant>,
    ApiPath((flow, id)): ApiPath<(String, String)>,
    JsonBody(request): JsonBody<ForkRequest>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    principal.require(Scope::Chat)?;
    let from = key(&state, &flow, &tenant, &id)?;
    let to = key(&state, &flow, &tenant, &request.thread)?;
    let runner = state.flow(&flow)?.runner();
    let forked = runner
        .thread(&from.store_id())
        .fork(request.at_step, &to.store_id())
        .await
        .map_err(|e| api_error(e, &from, Some(&to)))?;
    let end = match forked.end {
        ForkEnd::TurnEnd => "turn_end",
        ForkEnd::Interrupt => "interrupt",
        ForkEnd::ForkPoint => "fork_point",
    };
    let records = runner.thread(&to.store_id()).records().await?;
    let requester = records
        .last()
        .and_then(|last| crate::approvals::requester_of(&records, last.turn));
    let pending = records
        .last()
        .map(|r| pending_of(&to.id, r, requester.as_deref()))
        .unwrap_or_default();
    Ok((
        StatusCode::CREATED,
        Json(json!({
            "flow": to.flow,
            "thread": to.id,
            "from": from.id,
            "at_step": forked.at_step,
            "end": end,
            "pending": pending,
        })),
    ))
}

/// `GET /v1/flows/{flow}/threads/{thread}/state`: the thread's values.
pub async fn state_of(
    State(state): State<AppState>,
    principal: Principal,
    Extension(tenant): Extension<Tenant>,
    ApiPath((flow, id)): ApiPath<(String, String)>,
) -> Result<Json<Value>, ApiError> {
    principal.require(Scope::Read)?;
    let key = key(&state, &flow, &tenant, &id)?;
    let values = state
        .flow(&flow)?
        .runner()
        .thread(&key.store_id())
        .values()
        .await
        .map_err(|e| api_error(e, &key, None))?;
    Ok(Json(
        json!({ "flow": key.flow, "thread": key.id, "values": values }),
    ))
}

/// `POST /v1/flows/{flow}/threads/{thread}/state`: merges `values` into the thread's values
/// (a `null` removes a key) as a values step of its history; answers the values after it.
pub async fn update_state(
    State(state): State<AppState>,
    principal: Principal,
    Extension(tenant): Extension<Tenant>,
    ApiPath((flow, id)): ApiPath<(String, String)>,
    JsonBody(request): JsonBody<StateRequest>,
) -> Result<Json<Value>, ApiError> {
    principal.require(Scope::Chat)?;
    let key = key(&state, &flow, &tenant, &id)?;
    let updated = state
        .flow(&flow)?
        .runner()
        .thread(&key.store_id())
        .update_state_by(request.values, principal.id())
        .await
        .map_err(|e| api_error(e, &key, None))?;
    Ok(Json(json!({
        "flow": key.flow,
        "thread": key.id,
        "version": updated.version,
        "values": updated.values,
    })))
}
