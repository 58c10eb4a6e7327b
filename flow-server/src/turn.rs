//! A turn (or a resume) of a thread as a stream of Server-Sent Events: the run's events go out
//! as they come (see [`wire`](crate::wire)); the runtime records the turn in the thread when
//! its stream ends. Dropping the stream (the client went away, or the turn ran out of time)
//! drops the [`Turn`], which cancels the run and records nothing.

use std::sync::Arc;
use std::time::Duration;

use agentweave_runtime::{RunPath, Turn, TurnItem, TurnOutcome, TurnStream};
use futures::{Stream, StreamExt};
use serde::Serialize;

use crate::limits::Limits;
use crate::outward::{OutwardChunk, OutwardEvent, OutwardInterrupt, PublicCode, PublicError};
use crate::sse::{frame, SseBody};

/// The `data` of the first event, `turn`.
#[derive(Serialize)]
struct TurnData<'a> {
    flow: &'a str,
    thread: &'a str,
    turn: u64,
    started_at: &'a RunPath,
    resumed: bool,
}

/// The `data` of the last event, `done`.
#[derive(Serialize)]
struct DoneData<'a> {
    output: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    answered_by: Option<Arc<str>>,
    interrupted: bool,
    interrupts: Vec<OutwardInterrupt<'a>>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    failed: bool,
}

impl DoneData<'_> {
    fn failed() -> Self {
        DoneData {
            output: None,
            answered_by: None,
            interrupted: false,
            interrupts: Vec::new(),
            failed: true,
        }
    }
}

/// The frames a turn over [`Limits::max_turn_duration`] ends with.
fn overtime(limit: Duration) -> Vec<u8> {
    let internal = format!(
        "the turn ran longer than {} s (Limits::max_turn_duration) and was cancelled; nothing \
         of it was recorded",
        limit.as_secs_f64()
    );
    let mut out = frame(
        "error",
        &PublicError::new(PublicCode::Timeout, &internal, None),
        usize::MAX,
    );
    out.extend(frame("done", &DoneData::failed(), usize::MAX));
    out
}

/// The Server-Sent Events of a turn of the thread the caller calls `thread`, as a response
/// body; `resumed` when the turn continues an interrupted one.
///
/// The body holds `permit` (the turn's place among the server's concurrent turns) until it
/// ends or is dropped, and ends the turn after [`Limits::max_turn_duration`] with an `error`
/// event (dropping the turn cancels it: nothing is recorded).
pub(crate) fn sse(
    turn: Turn,
    flow: String,
    thread: String,
    resumed: bool,
    limits: &Limits,
    permit: crate::run_slots::Admitted,
    span: tracing::Span,
) -> SseBody<impl Stream<Item = Vec<u8>> + Send + 'static> {
    let frames = frames(turn, flow, thread, resumed, limits.max_event_bytes, permit);
    SseBody::new(
        frames,
        limits.sse_keep_alive,
        limits.max_turn_duration,
        overtime,
    )
    .in_span(span)
}

/// The root span of a turn or resume served over HTTP: the flow, the thread (as the caller
/// names it), the turn's number, whether it resumes, the run's id ([`Turn::run_id`]: a resume
/// keeps its turn's; the run handle's for a run of the runs API), the request's id and the
/// principal's. The run's agent, model and tool spans are its children. A field given as
/// `None` can be recorded later (`span.record("run_id", ..)`).
pub(crate) fn turn_span(
    flow: &str,
    thread: &str,
    turn: Option<u64>,
    resumed: bool,
    run_id: Option<&str>,
    request: &str,
    principal: &str,
) -> tracing::Span {
    tracing::info_span!(
        "turn",
        flow = %flow,
        thread = %thread,
        turn = turn,
        resumed = resumed,
        run_id = run_id,
        request_id = %request,
        principal = %principal,
    )
}

fn frames(
    turn: Turn,
    flow: String,
    thread: String,
    resumed: bool,
    limit: usize,
    permit: crate::run_slots::Admitted,
) -> impl Stream<Item = Vec<u8>> + Send + 'static {
    let turn = TurnStream::new(turn);
    let first = frame(
        "turn",
        &TurnData {
            flow: &flow,
            thread: &thread,
            turn: turn.number(),
            started_at: turn.started_at(),
            resumed,
        },
        limit,
    );
    // The last error the turn showed (its agent, its reference): the agent's error event after
    // its broken stream, and the turn's failure on it, say the same reference, so one failure
    // shows one.
    let mut shown_error: Option<(String, PublicCode, String)> = None;
    let rest = turn.map(move |item| {
        let _permit = &permit;
        item_frames(item, limit, &mut shown_error)
    });
    futures::stream::once(async move { first }).chain(rest)
}

/// The frames of one item of a turn; `shown_error` is the last error shown (the agent it was
/// of, its code, its correlation id), kept here and reused for the same failure.
fn item_frames(
    item: TurnItem,
    limit: usize,
    shown_error: &mut Option<(String, PublicCode, String)>,
) -> Vec<u8> {
    match item {
        TurnItem::Chunk {
            agent_name,
            run_path,
            chunk,
        } => frame(
            "chunk",
            &OutwardChunk {
                agent_name: &agent_name,
                run_path: &run_path,
                content: &chunk.content,
                tool_calls: &chunk.tool_calls,
            },
            limit,
        ),
        TurnItem::StreamFailed {
            agent_name, error, ..
        } => {
            let error = PublicError::of_stream_error(&error, &agent_name);
            *shown_error = Some((
                agent_name.to_string(),
                error.code,
                error.correlation_id.clone(),
            ));
            frame("error", &error, limit)
        }
        TurnItem::Event(e) => {
            // The error of an agent whose stream broke is that break: the same reference.
            let same = shown_error
                .as_ref()
                .filter(|(agent, _, _)| e.event.error.is_some() && agent == e.event.agent_name())
                .map(|(_, _, id)| id.clone());
            let event = OutwardEvent::with_message_as(
                &e.event,
                e.message.as_deref(),
                e.custom.as_deref(),
                e.streamed,
                same,
            );
            if let Some(error) = &event.error {
                *shown_error = Some((
                    e.event.agent_name().to_owned(),
                    error.code,
                    error.correlation_id.clone(),
                ));
            }
            frame("event", &event, limit)
        }
        TurnItem::End(outcome) => {
            let mut out = Vec::new();
            let done = match &outcome {
                TurnOutcome::Completed {
                    answer,
                    answered_by,
                    ..
                } => DoneData {
                    output: answer.as_ref().map(|m| m.content.clone()),
                    answered_by: Some(Arc::clone(answered_by)),
                    interrupted: false,
                    interrupts: Vec::new(),
                    failed: false,
                },
                TurnOutcome::Interrupted { interrupts, .. } => DoneData {
                    output: None,
                    answered_by: None,
                    interrupted: true,
                    interrupts: interrupts.iter().map(OutwardInterrupt::of).collect(),
                    failed: false,
                },
                TurnOutcome::Failed(e) => {
                    // A turn that failed on the error it showed last (an agent's, or the store's
                    // an agent met: the same code) says that error's reference.
                    let code = crate::outward::code_of_thread_error(e);
                    let error = match shown_error.take() {
                        Some((_, shown, id)) if shown == code => {
                            PublicError::of_turn_failure_as(e, id)
                        }
                        _ => PublicError::of_turn_failure(e),
                    };
                    out = frame("error", &error, limit);
                    DoneData::failed()
                }
            };
            out.extend(frame("done", &done, limit));
            out
        }
        _ => Vec::new(),
    }
}
