//! A turn (or a resume) of a thread as a stream of Server-Sent Events: the run's events go out
//! as they come (see [`wire`](crate::wire)); the runtime records the turn in the thread when
//! its stream ends. Dropping the stream (the client went away) drops the [`Turn`], which
//! cancels the run and records nothing.

use std::convert::Infallible;
use std::sync::Arc;

use axum::response::sse::Event;
use flow_runtime::{EventOutput, Message, Turn, TurnOutcome};
use futures::{Stream, StreamExt};
use serde::Serialize;
use serde_json::json;

use crate::wire::{ChunkData, EventData, PublicInterrupt};

/// The Server-Sent Events of a turn of the thread the caller calls `thread`; `resumed` when
/// the turn continues an interrupted one.
pub(crate) fn sse(
    mut turn: Turn,
    flow: String,
    thread: String,
    resumed: bool,
    limit: usize,
) -> impl Stream<Item = Result<Event, Infallible>> {
    async_stream::stream! {
        yield Ok(frame("turn", &json!({
            "flow": flow,
            "thread": thread,
            "turn": turn.number(),
            "started_at": turn.started_at(),
            "resumed": resumed,
        }), limit));

        while let Some(mut event) = turn.next().await {
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
        }

        let done = match turn.outcome() {
            Some(TurnOutcome::Completed { answer, answered_by, .. }) => json!({
                "output": answer.map(|m| m.content),
                "answered_by": answered_by,
                "interrupted": false,
                "interrupts": [],
            }),
            Some(TurnOutcome::Interrupted { interrupts, .. }) => json!({
                "output": null,
                "interrupted": true,
                "interrupts": interrupts.iter().map(PublicInterrupt::of).collect::<Vec<_>>(),
            }),
            Some(TurnOutcome::Failed(e)) => {
                yield Ok(frame("error", &json!({ "message": e.to_string() }), limit));
                json!({ "output": null, "interrupted": false, "interrupts": [], "failed": true })
            }
            None => json!({ "output": null, "interrupted": false, "interrupts": [], "failed": true }),
        };
        yield Ok(frame("done", &done, limit));
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
