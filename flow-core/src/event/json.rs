//! The JSON form of an [`AgentEvent`]: [`EventJson`], what `AgentEvent` serialises to.
//!
//! One event is one JSON object. Absent parts are left out:
//!
//! | field | type | when |
//! | --- | --- | --- |
//! | `agent_name` | string | always: the agent that emitted it |
//! | `run_path` | array of strings | always: agents from the run's start to the source, e.g. `["triage","refund"]` |
//! | `message` | [`Message`] object | the event carries a message (a streamed one whole) |
//! | `streamed` | `true` | the message arrived as a stream (left out otherwise) |
//! | `custom` | any JSON | the event carries application data |
//! | `action` | [`Action`] | `"exit"`, `{"transfer_to_agent":"refund"}`, `{"interrupted":{...}}`, `{"break_loop":"critic"}`, `{"custom":...}` |
//! | `error` | `{"kind","message"[,"agent"]}` | the event reports an error; `kind` is [`AgentError::kind`] |
//!
//! ```json
//! {"agent_name":"refund","run_path":["triage","refund"],
//!  "message":{"role":"assistant","content":"Done: 39 EUR are on their way."},"streamed":true}
//! {"agent_name":"triage","run_path":["triage"],
//!  "message":{"role":"tool","content":"successfully transferred to agent [refund]",
//!             "tool_call_id":"transfer-refund","tool_name":"transfer_to_agent"},
//!  "action":{"transfer_to_agent":"refund"}}
//! {"agent_name":"triage","run_path":["triage"],
//!  "error":{"kind":"transfer_target_not_found","agent":"triage",
//!           "message":"transfer failed: agent 'billing' not found when transferring from 'triage'"}}
//! ```
//!
//! A streamed message must be whole to be written: [`AgentEvent::to_json`] (and so
//! `serde_json::to_string(&event)`) fails for a stream that has not ended; use
//! [`AgentEvent::materialized`], which waits for its end, or serialise before reading the
//! stream yourself (the event's reader is read from where it stands).

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::event::{Action, AgentError, AgentEvent, EventOutput};
use crate::message::Message;
use crate::run_path::RunPath;
use crate::stream::StreamError;

/// An [`AgentEvent`] in its JSON form (see the [module docs](self)); what the event serialises
/// to, and what a client deserialises.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventJson {
    /// The agent that emitted the event.
    pub agent_name: Arc<str>,
    /// Where in the run it was emitted.
    pub run_path: RunPath,
    /// Its message, whole.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<Message>,
    /// Whether the message arrived as a stream.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub streamed: bool,
    /// Application data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub custom: Option<serde_json::Value>,
    /// What the agent asked to happen next.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<Action>,
    /// The error it reports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorJson>,
}

/// An [`AgentError`] in JSON: its kind, its message, and the agent it names if any.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorJson {
    /// [`AgentError::kind`]: `transfer_target_not_found`, `transfer_to_parent_refused`,
    /// `panic`, `stream`, `failed`, `not_resumable`, `checkpoint`, `thread`, `limit_reached`,
    /// `budget_exceeded`, `middleware`, `chat_agent` or `custom`.
    pub kind: String,
    /// The error's message, as displayed.
    pub message: String,
    /// The agent the error names, if it names one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<Arc<str>>,
    /// For `budget_exceeded`: the refusal itself (which budget, whose, the limit), so a host
    /// that reads events in this form (a Temporal workflow's) gives the same typed error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<crate::budget::BudgetExceeded>,
}

impl From<&AgentError> for ErrorJson {
    fn from(error: &AgentError) -> Self {
        ErrorJson {
            kind: error.kind().to_owned(),
            message: error.to_string(),
            agent: error.agent().cloned(),
            budget: match error {
                AgentError::BudgetExceeded(exceeded) => Some(exceeded.clone()),
                _ => None,
            },
        }
    }
}

/// Why an event could not be put in JSON form.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum EventJsonError {
    /// The event's streamed message has not ended yet.
    #[error(
        "the streamed message of an event of agent '{agent}' has not ended, so it cannot be \
         written whole; use AgentEvent::materialized to wait for it"
    )]
    StreamNotEnded {
        /// The agent that emitted the event.
        agent: Arc<str>,
    },
    /// The event's streamed message failed.
    #[error("the streamed message of an event of agent '{agent}' failed: {source}")]
    Stream {
        /// The agent that emitted the event.
        agent: Arc<str>,
        /// The stream's error.
        #[source]
        source: StreamError,
    },
}

impl AgentEvent {
    fn json_with(&self, message: Option<Message>, streamed: bool) -> EventJson {
        EventJson {
            agent_name: Arc::from(self.agent_name()),
            run_path: self.run_path().clone(),
            message,
            streamed,
            custom: match &self.output {
                Some(EventOutput::Custom(v)) => Some(serde_json::Value::clone(v)),
                _ => None,
            },
            action: self.action.clone(),
            error: self.error.as_ref().map(ErrorJson::from),
        }
    }

    /// The event in its JSON form, without waiting: a streamed message must have ended (and
    /// is taken from where the event's reader stands).
    pub fn to_json(&self) -> Result<EventJson, EventJsonError> {
        match &self.output {
            Some(EventOutput::Stream(s)) => {
                let agent = || Arc::from(self.agent_name());
                let (chunks, ended) = s.buffered();
                if !ended {
                    return Err(EventJsonError::StreamNotEnded { agent: agent() });
                }
                let whole = s
                    .record()
                    .message_now()
                    .unwrap_or_else(|| Ok(Arc::new(Message::concat(chunks.iter().map(|c| &**c)))));
                let whole = whole.map_err(|source| EventJsonError::Stream {
                    agent: agent(),
                    source,
                })?;
                Ok(self.json_with(Some(Message::clone(&whole)), true))
            }
            Some(EventOutput::Message(m)) => Ok(self.json_with(Some(Message::clone(m)), false)),
            _ => Ok(self.json_with(None, false)),
        }
    }

    /// The event in its JSON form, waiting for a streamed message to end (reading it from
    /// where the event's reader stands, without moving that reader).
    ///
    /// ```
    /// # futures::executor::block_on(async {
    /// use agentweave_runtime::{AgentEvent, Message, MessageStream};
    /// let stream = MessageStream::from_messages([Message::assistant("Hel"), Message::assistant("lo")]);
    /// let json = AgentEvent::stream(stream).materialized().await.unwrap();
    /// assert_eq!(
    ///     serde_json::to_string(&json).unwrap(),
    ///     r#"{"agent_name":"","run_path":[],"message":{"role":"assistant","content":"Hello"},"streamed":true}"#
    /// );
    /// # });
    /// ```
    pub async fn materialized(&self) -> Result<EventJson, EventJsonError> {
        match &self.output {
            Some(EventOutput::Stream(s)) => {
                let whole =
                    s.record()
                        .message()
                        .await
                        .map_err(|source| EventJsonError::Stream {
                            agent: Arc::from(self.agent_name()),
                            source,
                        })?;
                Ok(self.json_with(Some(Message::clone(&whole)), true))
            }
            _ => self.to_json(),
        }
    }
}

/// Serialises as its [`EventJson`]; fails for a streamed message that has not ended (see
/// [`AgentEvent::to_json`]).
impl Serialize for AgentEvent {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.to_json()
            .map_err(serde::ser::Error::custom)?
            .serialize(serializer)
    }
}
