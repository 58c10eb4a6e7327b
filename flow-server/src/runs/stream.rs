//! A run's events as Server-Sent Events: each frame carries its event id (`id: N`), so a
//! client that reconnects with `Last-Event-ID: N` gets exactly what came after.
//!
//! | `event:` | `data:` |
//! | --- | --- |
//! | `turn` | `{"run_id", "thread", "turn", "started_at", "resumed"}` |
//! | `chunk` | `{"agent_name", "run_path", "content", "tool_calls"?}` |
//! | `event` | the event's [outward form](crate::outward::OutwardEvent) (no saved state; an error as its public face) |
//! | `done` | the run's outcome: `{"run_id", "status", "output"?, "answered_by"?, "interrupts"?, "cancel_mode"?, "at_safe_point"?, "before_start"?, "error"?}`; `error` is a [`PublicError`](crate::outward::PublicError) |

use std::time::Duration;

use agentweave_runtime::{RunEvent, RunFailure, RunHandle, RunItem, RunOutcome};
use futures::{Stream, StreamExt};
use serde::Serialize;
use serde_json::{json, Value};

use crate::error::ApiError;
use crate::limits::Limits;
use crate::outward::{OutwardEvent, PublicError};
use crate::sse::{frame, SseBody};
use crate::wire::PublicInterrupt;

/// What happens to a run when the client streaming it goes away.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OnDisconnect {
    /// It goes on (attach again to read it).
    Continue,
    /// It is cancelled immediately.
    Cancel,
}

/// Cancels its run when dropped (the response body went away) unless it has ended.
pub(crate) struct CancelOnDrop(pub(crate) Option<RunHandle>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(run) = self.0.take() {
            if !run.status().is_final() {
                let _ = run.cancel(agentweave_runtime::CancelMode::IMMEDIATE, None);
            }
        }
    }
}

/// One run event as an SSE frame with its id.
fn event_frame(run_id: &str, thread: &str, event: &RunEvent, limit: usize) -> Vec<u8> {
    let mut out = format!("id: {}\n", event.id).into_bytes();
    let (name, data) = event_data(run_id, thread, event);
    out.extend(frame(name, &data, limit));
    out
}

/// A run event's data, borrowed from the event where it can be (serialised straight into a
/// frame).
#[derive(Serialize)]
#[serde(untagged)]
enum EventData<'a> {
    Value(Value),
    Chunk(crate::wire::ChunkData<'a>),
    Event(OutwardEvent<'a>),
}

fn event_data<'a>(
    run_id: &str,
    thread: &str,
    event: &'a RunEvent,
) -> (&'static str, EventData<'a>) {
    match &event.item {
        RunItem::Started {
            turn,
            started_at,
            resumed,
            ..
        } => (
            "turn",
            EventData::Value(json!({
                "run_id": run_id,
                "thread": thread,
                "turn": turn,
                "started_at": started_at,
                "resumed": resumed,
            })),
        ),
        RunItem::Chunk {
            agent_name,
            run_path,
            content,
            tool_calls,
        } => (
            "chunk",
            EventData::Chunk(crate::wire::ChunkData {
                agent_name,
                run_path,
                content,
                tool_calls,
            }),
        ),
        RunItem::Event(e) => {
            // Keyed by the run (event 0), as its outcome's error: the error event and the
            // failed run's `done` show one reference for one failure.
            let error = e.error.as_ref().map(|error| {
                PublicError::of_run_failure(event.failure(), &error.message, (run_id, 0))
            });
            ("event", EventData::Event(OutwardEvent::of_json(e, error)))
        }
        RunItem::Ended(outcome) => (
            "done",
            EventData::Value(outcome_json(run_id, outcome, event.failure())),
        ),
    }
}

/// One run event as its SSE event name and data as JSON (what a queued run's worker stores).
pub(crate) fn event_parts(run_id: &str, thread: &str, event: &RunEvent) -> (&'static str, Value) {
    let (name, data) = event_data(run_id, thread, event);
    match serde_json::to_value(data) {
        Ok(value) => (name, value),
        Err(e) => {
            tracing::error!(error = %e, "an event does not serialise");
            (
                "error",
                json!({"code": "internal", "message": "an event could not be serialised"}),
            )
        }
    }
}

pub(crate) fn overtime(limit: Duration) -> Vec<u8> {
    frame(
        "error",
        &json!({
            "message": format!(
                "this stream was open longer than {} s (Limits::max_turn_duration); the run \
                 goes on: attach again with Last-Event-ID",
                limit.as_secs_f64()
            )
        }),
        usize::MAX,
    )
}

/// The SSE body of `run`'s events after `after` (`None`: all), for the caller's `thread`.
pub(crate) fn run_sse(
    run: RunHandle,
    thread: String,
    after: Option<u64>,
    limits: &Limits,
    on_disconnect: OnDisconnect,
) -> Result<SseBody<impl Stream<Item = Vec<u8>> + Send + 'static>, ApiError> {
    let events = run.attach(after).map_err(|e| match e {
        agentweave_runtime::AttachError::UnknownEvent { .. } => {
            ApiError::UnknownEvent(e.to_string())
        }
        _ => ApiError::EventExpired(e.to_string()),
    })?;
    let guard = CancelOnDrop((on_disconnect == OnDisconnect::Cancel).then(|| run.clone()));
    let run_id = run.id().to_owned();
    let limit = limits.max_event_bytes;
    let frames = events.map(move |event| {
        let _held = &guard;
        event_frame(&run_id, &thread, &event, limit)
    });
    Ok(SseBody::new(
        frames,
        limits.sse_keep_alive,
        limits.max_turn_duration,
        overtime,
    ))
}

/// The JSON of a run's outcome (also the `done` event's data); `failure` is the typed error a
/// failed run ended on, if known: the error goes out in its public face (keyed by event 0, so
/// every reader of the run sees one correlation id).
pub(crate) fn outcome_json(
    run_id: &str,
    outcome: &RunOutcome,
    failure: Option<&RunFailure>,
) -> Value {
    match outcome {
        RunOutcome::Success {
            answered_by,
            answer,
        } => json!({
            "run_id": run_id,
            "status": "success",
            "output": answer.as_ref().map(|m| m.content.clone()),
            "answered_by": answered_by,
        }),
        RunOutcome::Interrupted { interrupts } => json!({
            "run_id": run_id,
            "status": "interrupted",
            "interrupts": interrupts.iter().map(PublicInterrupt::of).collect::<Vec<_>>(),
        }),
        RunOutcome::Cancelled {
            mode,
            at_safe_point,
            before_start,
        } => json!({
            "run_id": run_id,
            "status": "cancelled",
            "cancel_mode": mode,
            "at_safe_point": at_safe_point,
            "before_start": before_start,
        }),
        RunOutcome::Error { message } => json!({
            "run_id": run_id,
            "status": "error",
            "error": PublicError::of_run_failure(failure, message, (run_id, 0)),
        }),
    }
}
