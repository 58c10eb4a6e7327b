//! A turn (or a resume) of a thread as a stream of Server-Sent Events: the run's events go out
//! as they come (see [`wire`](crate::wire)), and the thread's record is written when the run
//! ends or interrupts. Dropping the stream (the client went away) drops the run's event stream,
//! which cancels the run; the thread then stays as it was.

use std::convert::Infallible;
use std::sync::Arc;

use axum::response::sse::Event;
use flow_runtime::{Action, EventOutput, EventStream, InterruptInfo, Message, Role};
use futures::{Stream, StreamExt};
use serde::Serialize;
use serde_json::json;

use crate::state::AppState;
use crate::thread::{self, Pending, ThreadKey, ThreadRecord};
use crate::wire::{ChunkData, EventData, PublicInterrupt};

/// What started the run.
#[derive(Debug, Clone)]
pub enum Start {
    /// A new turn with this user message.
    Turn(Message),
    /// A resume of the thread's pending checkpoint.
    Resume,
}

/// What the stream needs besides the run's events.
#[derive(Debug)]
pub struct TurnContext {
    /// The server's state (limits, store).
    pub state: AppState,
    /// The thread.
    pub key: ThreadKey,
    /// Its record as the turn found it.
    pub record: ThreadRecord,
    /// The turn's number.
    pub turn: u64,
    /// How the run started.
    pub start: Start,
}

/// The Server-Sent Events of a run.
pub fn sse(
    cx: TurnContext,
    mut events: EventStream,
) -> impl Stream<Item = Result<Event, Infallible>> {
    async_stream::stream! {
        let TurnContext { state, key, mut record, turn, start } = cx;
        let limit = state.limits().max_event_bytes;
        let checkpoint = key.checkpoint_id(turn);
        yield Ok(frame("turn", &json!({
            "flow": key.flow,
            "thread": key.id,
            "turn": turn,
            "checkpoint": checkpoint,
            "resumed": matches!(start, Start::Resume),
        }), limit));

        let mut output: Option<String> = None;
        let mut interrupts: Vec<InterruptInfo> = Vec::new();
        while let Some(mut event) = events.next().await {
            let mut streamed = false;
            let mut custom = None;
            let message: Option<Arc<Message>> = match event.output.take() {
                Some(EventOutput::Message(m)) => Some(m),
                Some(EventOutput::Custom(v)) => {
                    custom = Some(v);
                    None
                }
                Some(EventOutput::Stream(mut stream)) => {
                    streamed = true;
                    let mut chunks = Vec::new();
                    let mut failed = None;
                    while let Some(chunk) = stream.next().await {
                        match chunk {
                            Ok(c) => {
                                yield Ok(frame("chunk", &ChunkData {
                                    agent: event.agent_name(),
                                    run_path: event.run_path(),
                                    content: &c.content,
                                    tool_calls: &c.tool_calls,
                                }, limit));
                                chunks.push(c);
                            }
                            Err(e) => failed = Some(e),
                        }
                    }
                    if let Some(e) = failed {
                        yield Ok(frame("error", &json!({
                            "message": format!("the stream of [{}] failed: {e}", event.run_path()),
                        }), limit));
                    }
                    Some(Arc::new(Message::concat(chunks.iter().map(|c| &**c))))
                }
                None => None,
            };
            let data = EventData::of(&event, message.as_deref(), custom.as_deref(), streamed);
            yield Ok(frame("event", &data, limit));
            if let Some(m) = &message {
                let answer = m.role == Role::Assistant && m.tool_calls.is_empty()
                    && !m.content.is_empty();
                let exit_result = m.role == Role::Tool
                    && matches!(event.action, Some(Action::Exit));
                if answer || exit_result {
                    output = Some(m.content.clone());
                }
            }
            if let Some(info) = event.interrupt() {
                interrupts.push(info.clone());
            }
        }

        // The run ended or interrupted: record it in the thread.
        if let Start::Turn(user) = &start {
            record.messages.push(user.clone());
        }
        record.turns = turn;
        if interrupts.is_empty() {
            record.pending = None;
            if let Some(text) = &output {
                record.messages.push(Message::assistant(text.clone()));
            }
        } else {
            record.pending = Some(Pending {
                checkpoint: checkpoint.clone(),
                interrupts: interrupts.clone(),
            });
        }
        if let Err(e) = thread::save(&**state.store(), &key, &record).await {
            yield Ok(frame("error", &json!({ "message": format!("the thread was not saved: {e}") }), limit));
        }
        let public: Vec<PublicInterrupt<'_>> = interrupts.iter().map(PublicInterrupt::of).collect();
        yield Ok(frame("done", &json!({
            "output": output,
            "interrupted": !interrupts.is_empty(),
            "interrupts": public,
            "checkpoint": (!interrupts.is_empty()).then_some(&checkpoint),
        }), limit));
    }
}

/// One SSE frame; a payload over `limit` bytes is replaced by an `error` frame saying so.
fn frame(name: &str, data: &impl Serialize, limit: usize) -> Event {
    let text = match serde_json::to_string(data) {
        Ok(t) => t,
        Err(e) => {
            tracing::error!(error = %e, "an event does not serialise");
            return Event::default()
                .event("error")
                .data(r#"{"message":"an event could not be serialised"}"#);
        }
    };
    if text.len() > limit {
        let message = json!({
            "message": format!(
                "a `{name}` event of {} bytes exceeds the server's event size limit of {limit} \
                 bytes and was not sent (Limits::max_event_bytes)",
                text.len()
            ),
        });
        return Event::default().event("error").data(message.to_string());
    }
    Event::default().event(name).data(text)
}
