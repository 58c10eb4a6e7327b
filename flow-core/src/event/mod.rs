//! Events agents emit, the actions that steer a run, and the errors they report.
//!
//! - this file: [`AgentEvent`] and what it carries ([`EventOutput`]);
//! - `action`: [`Action`], and the interrupt it may carry ([`InterruptInfo`], its address of
//!   [`InterruptFrame`]s and [`ToolFrame`]s);
//! - `error`: [`AgentError`];
//! - `middleware_error`: what a middleware hook answers with and the error it ends a run with
//!   ([`HookError`], [`Hook`], [`MiddlewareError`]);
//! - [`json`]: the documented JSON form of an event ([`EventJson`](json::EventJson));
//! - `print`: [`EventPrinter`], events as readable lines;
//! - `recorded`: an event as stores keep it ([`RecordedEvent`]), streams read to their end.

use std::sync::Arc;

mod action;
mod error;
pub mod json;
mod middleware_error;
mod print;
mod recorded;

pub use action::{Action, InterruptFrame, InterruptInfo, ToolFrame};
pub(crate) use error::panic_message;
pub use error::AgentError;
pub use middleware_error::{Hook, HookError, HookErrorKind, MiddlewareError};
pub use print::EventPrinter;
pub use recorded::RecordedEvent;

use crate::context_form::ContextForm;
use crate::message::{Message, MessageRef};
use crate::run_path::RunPath;
use crate::stream::MessageStream;

/// What an event carries.
#[derive(Debug)]
pub enum EventOutput {
    /// A whole message.
    Message(MessageRef),
    /// A message arriving in chunks. The event you receive holds your own reader: the session
    /// keeps its own [record](MessageStream::record) of the message (read to the end by
    /// itself if need be), so you may consume, ignore or drop yours.
    Stream(MessageStream),
    /// Application data that is not a message (never part of any agent's history).
    Custom(Arc<serde_json::Value>),
}

impl EventOutput {
    /// The message, if this output is a whole message.
    pub fn message(&self) -> Option<&MessageRef> {
        match self {
            EventOutput::Message(m) => Some(m),
            _ => None,
        }
    }
}

impl Clone for EventOutput {
    /// Cloning a stream output forks it: the clone is an independent reader.
    fn clone(&self) -> Self {
        match self {
            EventOutput::Message(m) => EventOutput::Message(Arc::clone(m)),
            EventOutput::Stream(s) => EventOutput::Stream(s.fork()),
            EventOutput::Custom(v) => EventOutput::Custom(Arc::clone(v)),
        }
    }
}

/// One event of a run, as the caller and the session see it.
///
/// Agents build events with the constructors below; the framework fills in the agent name and
/// [`RunPath`] exactly once, where it first sees the event (an event that already has a path,
/// because a nested agent set it, keeps it).
#[derive(Debug, Clone)]
pub struct AgentEvent {
    agent_name: Arc<str>,
    run_path: RunPath,
    /// The message, stream or custom data, if any.
    pub output: Option<EventOutput>,
    /// What the agent asks to happen next, if anything.
    pub action: Option<Action>,
    /// The error this event reports, if any.
    pub error: Option<AgentError>,
    /// Set once a flow has recorded the event, so an enclosing flow does not record it again.
    #[doc(hidden)]
    pub recorded: bool,
    /// Set on a [`Action::BreakLoop`] event once a loop workflow has stopped for it, so an
    /// enclosing loop does not stop too.
    pub(crate) break_handled: bool,
    /// The message's context form, made ahead by the tree for a transfer's messages (see
    /// [`ContextForm`](ContextForm)); used by the session if it still fits.
    pub(crate) context: Option<Arc<ContextForm>>,
}

/// The empty name, shared: an event gets its real name when the framework stamps it, so
/// building one costs no allocation for the placeholder.
pub(crate) fn empty_name() -> Arc<str> {
    static EMPTY: std::sync::OnceLock<Arc<str>> = std::sync::OnceLock::new();
    Arc::clone(EMPTY.get_or_init(|| Arc::from("")))
}

impl AgentEvent {
    fn empty() -> Self {
        AgentEvent {
            agent_name: empty_name(),
            run_path: RunPath::default(),
            output: None,
            action: None,
            error: None,
            recorded: false,
            break_handled: false,
            context: None,
        }
    }

    /// An event carrying a whole message.
    pub fn message(message: impl Into<MessageRef>) -> Self {
        AgentEvent {
            output: Some(EventOutput::Message(message.into())),
            ..Self::empty()
        }
    }

    /// An event carrying a streamed message.
    pub fn stream(stream: MessageStream) -> Self {
        AgentEvent {
            output: Some(EventOutput::Stream(stream)),
            ..Self::empty()
        }
    }

    /// An event carrying application data.
    pub fn custom(data: serde_json::Value) -> Self {
        AgentEvent {
            output: Some(EventOutput::Custom(Arc::new(data))),
            ..Self::empty()
        }
    }

    /// An event carrying only an action.
    pub fn action(action: Action) -> Self {
        AgentEvent {
            action: Some(action),
            ..Self::empty()
        }
    }

    /// An event reporting an error.
    pub fn error(error: AgentError) -> Self {
        AgentEvent {
            error: Some(error),
            ..Self::empty()
        }
    }

    /// This event with an action attached.
    pub fn with_action(mut self, action: Action) -> Self {
        self.action = Some(action);
        self
    }

    /// The agent that emitted the event (empty until the framework has seen it).
    pub fn agent_name(&self) -> &str {
        &self.agent_name
    }

    #[doc(hidden)]
    pub fn agent_name_arc(&self) -> &Arc<str> {
        &self.agent_name
    }

    /// Where in the run the event came from (empty until the framework has seen it).
    pub fn run_path(&self) -> &RunPath {
        &self.run_path
    }

    /// The event's message, whole or streamed: a whole message at once, a streamed one once
    /// its stream has ended (read through a fork of it, so your own reader, if you read it,
    /// sees every chunk too). `None` for an event without a message. The same name reads a
    /// recorded event's message ([`SessionEvent::read_message`](crate::SessionEvent::read_message)),
    /// so a printer that uses it never loses a streamed answer.
    pub async fn read_message(&self) -> Result<Option<MessageRef>, crate::stream::StreamError> {
        match &self.output {
            Some(EventOutput::Message(m)) => Ok(Some(Arc::clone(m))),
            Some(EventOutput::Stream(s)) => {
                s.fork().collect_message().await.map(|m| Some(Arc::new(m)))
            }
            _ => Ok(None),
        }
    }

    /// The whole message, if the output is one (`None` for a streamed message: read both
    /// kinds with [`read_message`](AgentEvent::read_message), the name both event types share).
    /// A recorded event's synchronous read is
    /// [`SessionEvent::message_now`](crate::SessionEvent::message_now), which also gives a
    /// streamed message once its stream has ended, since the session records the stream.
    pub fn message_output(&self) -> Option<&Message> {
        self.output
            .as_ref()
            .and_then(EventOutput::message)
            .map(|m| &**m)
    }

    /// The token usage of the model call whose reply this event's whole message is, if the
    /// model reported it. A streamed reply carries its usage in its last chunk, so it is on
    /// the message the stream concatenates to.
    pub fn usage(&self) -> Option<&crate::usage::Usage> {
        self.message_output().and_then(|m| m.usage.as_deref())
    }

    /// The interrupt this event carries, if any.
    pub fn interrupt(&self) -> Option<&InterruptInfo> {
        match &self.action {
            Some(Action::Interrupted(info)) => Some(info),
            _ => None,
        }
    }

    /// For a wrapper agent forwarding a sub-agent's interrupt: attaches state that the wrapper
    /// gets back in its [`ResumeInfo`](crate::ResumeInfo) on resume (e.g. the loop iteration).
    /// Does nothing on other events.
    pub fn attach_interrupt_state(&mut self, state: serde_json::Value) {
        if let Some(Action::Interrupted(info)) = &mut self.action {
            info.wrapper.get_or_insert_with(Box::default).state = Some(state);
        }
    }

    /// For an agent forwarding an interrupt raised inside one of its tool calls: records the
    /// call in the agent's frame of the interrupt's address (`agent:A;tool:NAME:CALL_ID;...`).
    pub(crate) fn attach_interrupt_tool(&mut self, tool: ToolFrame) {
        if let Some(Action::Interrupted(info)) = &mut self.action {
            info.wrapper.get_or_insert_with(Box::default).tool = Some(tool);
        }
    }

    /// Whether this event carries an interrupt.
    pub fn is_interrupt(&self) -> bool {
        matches!(self.action, Some(Action::Interrupted(_)))
    }

    /// Sets name and path if the event has none yet; returns whether it did.
    pub(crate) fn stamp(&mut self, agent_name: &Arc<str>, run_path: &RunPath) -> bool {
        if self.run_path.is_empty() {
            self.agent_name = Arc::clone(agent_name);
            self.run_path = run_path.clone();
            true
        } else {
            false
        }
    }

    /// Framework-internal: builds an event that is already stamped.
    #[doc(hidden)]
    pub fn stamped(mut self, agent_name: &Arc<str>, run_path: &RunPath) -> Self {
        self.stamp(agent_name, run_path);
        self
    }
}
