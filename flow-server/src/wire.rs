//! The JSON the server streams: one object per Server-Sent Event.
//!
//! | SSE `event:` | `data:` |
//! | --- | --- |
//! | `turn` | `{"flow", "thread", "turn", "started_at", "resumed"}`: first, once; `turn` counts from 0, `started_at` is the run path the turn started at |
//! | `chunk` | `{"agent_name", "run_path", "content", "tool_calls"?}`: a piece of a streamed message, as it comes |
//! | `event` | one [`AgentEvent`] in the runtime's JSON form ([`EventJson`]: `{"agent_name", "run_path", "message"?, "streamed"?, "custom"?, "action"?, "error"?}`); a streamed message arrives here whole after its chunks, with `"streamed": true` |
//! | `error` | `{"message"}`: the server could not send something (an event over the size limit), or the turn failed and was not recorded |
//! | `done` | `{"output", "answered_by"?, "interrupted", "interrupts", "failed"?}`: last, once; `output` is the turn's answer, `interrupts` (`{"id", "info", "address"}`) what it waits on |
//!
//! `run_path` is the list of agent names from the root to the event's source. `action` is
//! `"exit"`, `{"transfer_to_agent": NAME}`, `{"interrupted": {"id", "info", "address"}}` (the
//! agent's saved state is not sent), `{"break_loop": NAME}` or `{"custom": VALUE}`; `error` is
//! `{"kind", "message", "agent"?}`. A client that disconnects cancels the run.

use std::borrow::Cow;

use flow_runtime::{Action, AgentEvent, ErrorJson, EventJson, InterruptInfo, Message, RunPath};
use serde::Serialize;

/// The `data` of a `chunk` event.
#[derive(Debug, Serialize)]
pub struct ChunkData<'a> {
    /// The agent streaming.
    pub agent_name: &'a str,
    /// Its run path.
    pub run_path: &'a RunPath,
    /// The chunk's text.
    pub content: &'a str,
    /// Pieces of tool calls in this chunk.
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub tool_calls: &'a [flow_runtime::ToolCall],
}

/// The `data` of an `event` event: the runtime's JSON form of the event ([`EventJson`]), its
/// streamed message (if any) whole, the agent's saved interrupt state left out.
pub fn event_data(
    event: &AgentEvent,
    message: Option<&Message>,
    custom: Option<&serde_json::Value>,
    streamed: bool,
) -> EventJson {
    let action = event.action.clone().map(|a| match a {
        Action::Interrupted(mut info) => {
            info.state = None;
            Action::Interrupted(info)
        }
        other => other,
    });
    EventJson {
        agent_name: event.agent_name().into(),
        run_path: event.run_path().clone(),
        message: message.cloned(),
        streamed,
        custom: custom.cloned(),
        action,
        error: event.error.as_ref().map(ErrorJson::from),
    }
}

/// The `data` of an `event` event as [`event_data`] gives it, but borrowed from the event:
/// the same JSON, without copying the message or the run path. An interrupt's saved state is
/// left out.
#[derive(Debug, Serialize)]
pub struct EventData<'a> {
    agent_name: &'a str,
    run_path: &'a RunPath,
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<&'a Message>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    streamed: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    custom: Option<&'a serde_json::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    action: Option<Cow<'a, Action>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<ErrorJson>,
}

impl<'a> EventData<'a> {
    /// The `data` of `event`, whose output was taken apart into `message` (a streamed one
    /// whole, with `streamed`) or `custom`.
    pub fn of(
        event: &'a AgentEvent,
        message: Option<&'a Message>,
        custom: Option<&'a serde_json::Value>,
        streamed: bool,
    ) -> Self {
        let action = event.action.as_ref().map(|a| match a {
            Action::Interrupted(info) if info.state.is_some() => {
                let mut info = info.clone();
                info.state = None;
                Cow::Owned(Action::Interrupted(info))
            }
            other => Cow::Borrowed(other),
        });
        EventData {
            agent_name: event.agent_name(),
            run_path: event.run_path(),
            message,
            streamed,
            custom,
            action,
            error: event.error.as_ref().map(ErrorJson::from),
        }
    }
}

/// What a client sees of an interrupt: its id (the key for resume data), what the agent wants
/// known, and its address. The agent's saved state stays in the checkpoint.
#[derive(Debug, Clone, Serialize)]
pub struct PublicInterrupt<'a> {
    /// The id to address resume data to.
    pub id: &'a str,
    /// What the agent wants the human to know.
    pub info: &'a serde_json::Value,
    /// Where it happened, as text (`agent:A;tool:NAME:CALL_ID;agent:B`).
    pub address: String,
}

impl<'a> PublicInterrupt<'a> {
    /// The public part of `info`.
    pub fn of(info: &'a InterruptInfo) -> Self {
        PublicInterrupt {
            id: &info.id,
            info: &info.info,
            address: info.address_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use flow_runtime::AgentError;
    use serde_json::json;

    /// The borrowed form is the same JSON as the runtime's [`EventJson`] through [`event_data`].
    #[test]
    fn event_data_is_the_json_of_event_json() {
        let message = Message::assistant("hello");
        let interrupt = flow_runtime::InterruptInfo::new(json!({"question": "ok?"}))
            .with_state(json!({"secret": 1}));
        let custom = json!({"k": [1, 2]});
        let events = [
            AgentEvent::message(message.clone()),
            AgentEvent::action(Action::interrupted(interrupt)),
            AgentEvent::action(Action::transfer_to("triage")),
            AgentEvent::error(AgentError::Thread {
                message: "broken".into(),
            }),
        ];
        for event in &events {
            for (message, custom, streamed) in [
                (None, None, false),
                (Some(&message), None, true),
                (None, Some(&custom), false),
            ] {
                let owned =
                    serde_json::to_value(event_data(event, message, custom, streamed)).unwrap();
                let borrowed =
                    serde_json::to_value(EventData::of(event, message, custom, streamed)).unwrap();
                assert_eq!(owned, borrowed);
                assert!(!borrowed.to_string().contains("secret"), "{borrowed}");
            }
        }
    }
}
