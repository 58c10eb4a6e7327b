//! The JSON the server streams: one object per Server-Sent Event.
//!
//! | SSE `event:` | `data:` |
//! | --- | --- |
//! | `turn` | `{"flow", "thread", "turn", "started_at", "resumed"}`: first, once; `turn` counts from 0, `started_at` is the run path the turn started at |
//! | `chunk` | `{"agent", "run_path", "content", "tool_calls"?}`: a piece of a streamed message, as it comes |
//! | `event` | `{"agent", "run_path", "message"?, "streamed"?, "custom"?, "action"?, "error"?}`: one [`AgentEvent`]; a streamed message arrives here whole after its chunks, with `"streamed": true` |
//! | `error` | `{"message"}`: the server could not send something (an event over the size limit), or the turn failed and was not recorded |
//! | `done` | `{"output", "answered_by"?, "interrupted", "interrupts", "failed"?}`: last, once; `output` is the turn's answer, `interrupts` (`{"id", "info", "address"}`) what it waits on |
//!
//! `run_path` is the list of agent names from the root to the event's source. `action` is
//! `"exit"`, `{"transfer_to_agent": NAME}`, `{"interrupted": {"id", "info", "address"}}`,
//! `{"break_loop": NAME}` or `{"custom": VALUE}`. A client that disconnects cancels the run.

use flow_runtime::{Action, AgentEvent, InterruptInfo, Message, RunPath};
use serde::Serialize;

/// The `data` of a `chunk` event.
#[derive(Debug, Serialize)]
pub struct ChunkData<'a> {
    /// The agent streaming.
    pub agent: &'a str,
    /// Its run path.
    pub run_path: &'a RunPath,
    /// The chunk's text.
    pub content: &'a str,
    /// Pieces of tool calls in this chunk.
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub tool_calls: &'a [flow_runtime::ToolCall],
}

/// The `data` of an `event` event: one [`AgentEvent`], its stream (if any) already whole.
#[derive(Debug, Serialize)]
pub struct EventData<'a> {
    /// The agent that emitted it.
    pub agent: &'a str,
    /// Where in the run.
    pub run_path: &'a RunPath,
    /// Its message.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<&'a Message>,
    /// Whether the message arrived as a stream (its chunks went out as `chunk` events).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub streamed: bool,
    /// Application data.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub custom: Option<&'a serde_json::Value>,
    /// What the agent asked to happen next.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub action: Option<WireAction<'a>>,
    /// The error it reports, in words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// An [`Action`] on the wire: an interrupt without the state its agent keeps for itself.
#[derive(Debug, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WireAction<'a> {
    /// End the run.
    Exit,
    /// Hand control to this agent.
    TransferToAgent(&'a str),
    /// Stopped for outside input.
    Interrupted(PublicInterrupt<'a>),
    /// Stop the enclosing loop.
    BreakLoop(&'a str),
    /// Application-defined.
    Custom(&'a serde_json::Value),
}

impl<'a> WireAction<'a> {
    /// The wire form of `action`.
    pub fn of(action: &'a Action) -> Self {
        match action {
            Action::Exit => WireAction::Exit,
            Action::TransferToAgent(to) => WireAction::TransferToAgent(to),
            Action::Interrupted(info) => WireAction::Interrupted(PublicInterrupt::of(info)),
            Action::BreakLoop(by) => WireAction::BreakLoop(by),
            Action::Custom(v) => WireAction::Custom(v),
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

impl<'a> EventData<'a> {
    /// The wire form of `event`, whose output was taken out of it: `message` (whole) or
    /// `custom` data.
    pub fn of(
        event: &'a AgentEvent,
        message: Option<&'a Message>,
        custom: Option<&'a serde_json::Value>,
        streamed: bool,
    ) -> Self {
        EventData {
            agent: event.agent_name(),
            run_path: event.run_path(),
            message,
            streamed,
            custom,
            action: event.action.as_ref().map(WireAction::of),
            error: event.error.as_ref().map(|e| e.to_string()),
        }
    }
}
