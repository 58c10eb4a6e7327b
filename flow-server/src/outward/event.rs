//! One event of a run as a client sees it.

use agentweave_runtime::{AgentEvent, EventJson, EventOutput, Message, RunPath};
use serde::Serialize;

use super::{OutwardAction, OutwardMessage, PublicError};

/// An [`AgentEvent`] as a client sees it (the `data` of an SSE `event` event): `{"agent_name",
/// "run_path", "message"?, "streamed"?, "custom"?, "action"?, "error"?}`. The message and
/// action are their outward forms; an error is its [`PublicError`] (the internal one is logged
/// when the outward event is made).
#[derive(Debug, Serialize)]
pub struct OutwardEvent<'a> {
    /// The agent that emitted the event.
    pub agent_name: &'a str,
    /// Its run path: the agents from the run's start to it.
    pub run_path: &'a RunPath,
    /// Its message, whole.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<OutwardMessage<'a>>,
    /// Whether the message arrived as a stream (its chunks went out before).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub streamed: bool,
    /// Application data.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub custom: Option<&'a serde_json::Value>,
    /// What the agent asked to happen next.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub action: Option<OutwardAction<'a>>,
    /// The error it reports, public face.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<PublicError>,
}

impl<'a> OutwardEvent<'a> {
    /// The outward form of `event` with its output as it is: a message or custom value goes
    /// out; a stream is left out (send its chunks, then use [`with_message`](Self::with_message)).
    pub fn of(event: &'a AgentEvent) -> Self {
        let (message, custom) = match &event.output {
            Some(EventOutput::Message(m)) => (Some(&**m), None),
            Some(EventOutput::Custom(v)) => (None, Some(&**v)),
            _ => (None, None),
        };
        Self::with_message(event, message, custom, false)
    }

    /// The outward form of an event kept in its JSON form (a run's kept events), with the
    /// public face of its error (made by the caller, who knows the typed error behind it:
    /// [`PublicError::of_run_failure`]). The event's own error text is never copied.
    pub fn of_json(event: &'a EventJson, error: Option<PublicError>) -> Self {
        OutwardEvent {
            agent_name: &event.agent_name,
            run_path: &event.run_path,
            message: event.message.as_ref().map(OutwardMessage::of),
            streamed: event.streamed,
            custom: event.custom.as_ref(),
            action: event.action.as_ref().map(OutwardAction::of),
            error,
        }
    }

    /// The outward form of `event` whose output was taken apart into `message` (a streamed
    /// one whole, with `streamed`) or `custom`.
    pub fn with_message(
        event: &'a AgentEvent,
        message: Option<&'a Message>,
        custom: Option<&'a serde_json::Value>,
        streamed: bool,
    ) -> Self {
        Self::with_message_as(event, message, custom, streamed, None)
    }

    /// [`with_message`](Self::with_message), its error (if any) under `correlation_id` when
    /// given: the reference a frame before it showed for the same failure.
    pub(crate) fn with_message_as(
        event: &'a AgentEvent,
        message: Option<&'a Message>,
        custom: Option<&'a serde_json::Value>,
        streamed: bool,
        correlation_id: Option<String>,
    ) -> Self {
        OutwardEvent {
            agent_name: event.agent_name(),
            run_path: event.run_path(),
            message: message.map(OutwardMessage::of),
            streamed,
            custom,
            action: event.action.as_ref().map(OutwardAction::of),
            error: event.error.as_ref().map(|e| match correlation_id {
                Some(id) => PublicError::of_agent_error_as(e, id),
                None => PublicError::of_agent_error(e),
            }),
        }
    }
}
