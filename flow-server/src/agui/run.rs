//! `POST /agui/{flow}`: one AG-UI run of a thread, streamed as Server-Sent Events (`data:`
//! one AG-UI event as JSON).

use crate::principal::{Principal, Scope};
use std::sync::Arc;
use std::time::Duration;

use agentweave_runtime::store::RecordEnd;
use agentweave_runtime::{Message, Turn, TurnItem, TurnOutcome, TurnStream};
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::Extension;
use futures::{Stream, StreamExt};
use serde_json::Value;

use super::call_ids::CallIds;
use super::map::{self, RunAgentInput};
use crate::auth::Tenant;
use crate::error::ApiError;
use crate::extract::{ApiPath, JsonBody};
use crate::outward::{OutwardValues, PublicCode, PublicError};
use crate::sse::SseBody;
use crate::state::AppState;
use crate::thread::ThreadKey;
use agentweave_runtime::TurnRequest;

/// Runs a turn of thread `threadId` from the input's last user message, or, when the thread
/// waits on interrupts, resumes it with the input's `resume` entries.
pub(crate) async fn run(
    State(state): State<AppState>,
    principal: Principal,
    Extension(tenant): Extension<Tenant>,
    ApiPath(flow): ApiPath<String>,
    JsonBody(input): JsonBody<RunAgentInput>,
) -> Result<Response, ApiError> {
    principal.require(Scope::Chat)?;
    let served = state.flow(&flow)?;
    let key = ThreadKey::new(served.name(), &tenant.0, &input.thread_id)?;
    let values = map::state_values(&input.state, state.limits().max_message_bytes)
        .map_err(ApiError::BadRequest)?;
    let store_id = key.store_id();
    let head = state.threads().head(&store_id).await?;
    let waiting = head.and_then(|h| match h.last.end {
        RecordEnd::Interrupted { interrupts, .. } => Some(interrupts),
        RecordEnd::Completed { .. } => None,
    });
    // The front end's tools, added to the agents' own for this run.
    let tools = map::frontend_tools(
        &input.tools,
        waiting.as_deref().unwrap_or_default(),
        state.limits().max_message_bytes,
    )
    .map_err(ApiError::BadRequest)?;
    let runner = served.runner();
    // The runId maps to the run it first started (see `idempotency`): sent again after that run
    // was recorded, nothing runs.
    let run_id = match input.run_id.is_empty() {
        true => None,
        false => {
            let keyed = crate::idempotency::keyed(
                &state,
                "runId",
                principal.id(),
                &key,
                crate::idempotency::check(&input.run_id, "runId")?,
                &serde_json::json!({"route": "agui", "messages": input.messages, "resume": input.resume.len()}),
            )
            .await?;
            if keyed.again
                && !crate::idempotency::recorded(&state, &key, &keyed.run_id)
                    .await?
                    .is_empty()
            {
                return Err(ApiError::Conflict(format!(
                    "run '{}' was sent before and is recorded in thread '{}': read the thread; \
                     nothing ran again",
                    input.run_id.chars().take(64).collect::<String>(),
                    key.id
                )));
            }
            Some(keyed.run_id)
        }
    };
    let with_id = |request: TurnRequest| match &run_id {
        Some(id) => request.run_id(id.clone()),
        None => request,
    };
    // The ids the front end answers its calls under (see `call_ids`).
    let mut call_ids = CallIds::default();
    let turn = match waiting {
        Some(pending) => {
            for call in pending.iter().filter_map(map::frontend_call) {
                let sent = input.messages.iter().rev().find_map(|m| {
                    let id = m["toolCallId"].as_str()?;
                    (m["role"] == "tool" && super::call_ids::model_id(id) == call).then_some(id)
                });
                if let Some(sent) = sent {
                    call_ids.answered(call, sent);
                }
            }
            let targets = if input.resume.is_empty() {
                map::tool_results(&input.messages, &pending)
            } else {
                map::resume_targets(&input.resume, &pending)
            }
            .map_err(ApiError::Conflict)?;
            let permit = state.admit_run(&key.tenant, &key.store_id())?;
            (
                runner
                    .turn(with_id(
                        TurnRequest::resume(&store_id, targets)
                            .by(&principal)
                            .frontend_tools(tools),
                    ))
                    .await?,
                permit,
            )
        }
        None => {
            if !input.resume.is_empty() {
                return Err(ApiError::Conflict(
                    "the thread waits on no interrupt: send a user message instead of `resume`"
                        .into(),
                ));
            }
            let text = map::last_user_text(&input.messages)
                .filter(|t| !t.trim().is_empty())
                .ok_or_else(|| {
                    ApiError::BadRequest("the input has no user message with text".into())
                })?;
            let limit = state.limits().max_message_bytes;
            if text.len() > limit {
                return Err(ApiError::BadRequest(format!(
                    "the message has {} bytes; this server takes at most {limit} (Limits::max_message_bytes)",
                    text.len()
                )));
            }
            let permit = state.admit_run(&key.tenant, &key.store_id())?;
            (
                runner
                    .turn(with_id(
                        TurnRequest::new(&store_id, Message::user(text))
                            .by(&principal)
                            .frontend_tools(tools),
                    ))
                    .await?,
                permit,
            )
        }
    };
    // Before the turn's first event is read, so its first agent sees them.
    turn.0.session().add_values(values);
    let limits = state.limits();
    let frames = frames(
        turn.0,
        input.thread_id,
        input.run_id,
        limits.max_event_bytes,
        turn.1,
        call_ids,
    );
    Ok(SseBody::new(
        frames,
        limits.sse_keep_alive,
        limits.max_turn_duration,
        overtime,
    )
    .into_response())
}

/// One SSE frame holding `event`; an event over `limit` bytes is replaced by a `RUN_ERROR`.
fn frame(event: &Value, limit: usize) -> Vec<u8> {
    let json = serde_json::to_vec(event).unwrap_or_default();
    if json.len() > limit {
        let e = map::run_error(
            &format!(
                "an event of {} bytes exceeds the server's event size limit of {limit} bytes \
                 (Limits::max_event_bytes)",
                json.len()
            ),
            "event_too_large",
        );
        return frame(&e, usize::MAX);
    }
    let mut out = Vec::with_capacity(json.len() + 8);
    out.extend_from_slice(b"data: ");
    out.extend_from_slice(&json);
    out.extend_from_slice(b"\n\n");
    out
}

fn overtime(limit: Duration) -> Vec<u8> {
    let internal = format!(
        "the run ran longer than {} s (Limits::max_turn_duration) and was cancelled; nothing \
         of it was recorded",
        limit.as_secs_f64()
    );
    let error = PublicError::new(PublicCode::Timeout, &internal, None);
    frame(&map::run_failed(&error), usize::MAX)
}

/// The AG-UI events of a run: a thin mapping of the turn's items ([`TurnStream`]), with what
/// AG-UI adds (the state snapshot and deltas, an agent's change as a step, a streamed message's
/// start and end).
fn frames(
    turn: Turn,
    thread_id: String,
    run_id: String,
    limit: usize,
    permit: crate::run_slots::Admitted,
    mut call_ids: CallIds,
) -> impl Stream<Item = Vec<u8>> + Send + 'static {
    async_stream::stream! {
        let _permit = permit;
        let mut turn = TurnStream::new(turn);
        yield frame(&serde_json::json!({"type": "RUN_STARTED", "threadId": thread_id, "runId": run_id}), limit);
        let start = turn.started_at().clone();
        let mut agent: Arc<str> = Arc::from(start.last().unwrap_or_default());
        let session = Arc::clone(turn.session());
        let mut values = OutwardValues::of(&session.values());
        yield frame(&map::state_snapshot(&agent, &start, turn.number(), &values), limit);
        // The streamed message being sent: its id and whether its start went out.
        let mut text: Option<(String, bool)> = None;
        while let Some(item) = turn.next().await {
            let (name, path) = match &item {
                TurnItem::Chunk { agent_name, run_path, .. }
                | TurnItem::StreamFailed { agent_name, run_path, .. } => (&**agent_name, run_path),
                TurnItem::Event(e) => (e.event.agent_name(), e.event.run_path()),
                _ => ("", &start),
            };
            if !name.is_empty() && name != &*agent {
                agent = Arc::from(name);
                yield frame(&map::state_delta(&agent, path), limit);
            }
            if !matches!(item, TurnItem::Chunk { .. }) || text.is_none() {
                // The values the agents wrote before this event (or this message's first chunk).
                let now = OutwardValues::of(&session.values());
                if let Some(delta) = map::values_delta(&values, &now) {
                    values = now;
                    yield frame(&delta, limit);
                }
            }
            match item {
                TurnItem::Chunk { agent_name, run_path, chunk } => {
                    let (id, started) = text.get_or_insert_with(|| (map::new_id(), false));
                    if !chunk.content.is_empty() {
                        if !*started {
                            *started = true;
                            let meta = map::metadata(&agent_name, &run_path);
                            yield frame(&serde_json::json!({"type": "TEXT_MESSAGE_START", "messageId": id, "role": "assistant", "metadata": meta}), limit);
                        }
                        yield frame(&serde_json::json!({"type": "TEXT_MESSAGE_CONTENT", "messageId": id, "delta": chunk.content}), limit);
                    }
                }
                TurnItem::StreamFailed { .. } => {
                    // The message broke: it ends where it is (the agent retries or gives up; a
                    // run that fails ends with RUN_ERROR).
                    if let Some((id, true)) = text.take() {
                        yield frame(&serde_json::json!({"type": "TEXT_MESSAGE_END", "messageId": id}), limit);
                    }
                }
                TurnItem::Event(e) => {
                    let streamed = match text.take() {
                        Some((id, true)) => {
                            yield frame(&serde_json::json!({"type": "TEXT_MESSAGE_END", "messageId": id}), limit);
                            Some(id)
                        }
                        _ => None,
                    };
                    let event = &e.event;
                    if let Some(m) = &e.message {
                        for mut out in map::message_events(m, event.agent_name(), event.run_path(), streamed.as_deref()) {
                            call_ids.rewrite(&mut out, event.run_path());
                            yield frame(&out, limit);
                        }
                    }
                    if let Some(out) = event.action.as_ref().and_then(|a| map::action_event(a, event.agent_name(), event.run_path())) {
                        yield frame(&out, limit);
                    }
                }
                TurnItem::End(outcome) => {
                    let last = match outcome {
                        TurnOutcome::Completed { answer, .. } => {
                            map::finished(&thread_id, &run_id, answer.as_ref().map(|m| m.content.as_str()), &[])
                        }
                        TurnOutcome::Interrupted { interrupts, .. } => {
                            // Waiting only on the front end's tools: a successful run with pending calls.
                            let calls: Option<Vec<String>> = interrupts
                                .iter()
                                .map(|i| map::frontend_call(i).map(|c| call_ids.pending(c)))
                                .collect();
                            match calls {
                                Some(calls) => {
                                    let calls: Vec<&str> = calls.iter().map(String::as_str).collect();
                                    map::finished(&thread_id, &run_id, None, &calls)
                                }
                                None => map::interrupted(&thread_id, &run_id, &interrupts),
                            }
                        }
                        TurnOutcome::Failed(e) => map::run_failed(&PublicError::of_turn_failure(&e)),
                    };
                    yield frame(&last, limit);
                }
                _ => {}
            }
        }
    }
}
