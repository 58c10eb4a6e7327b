//! Events agents emit, the actions that steer a run, and the errors they report.

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::message::{Message, MessageRef};
use crate::run_path::RunPath;
use crate::stream::{MessageStream, StreamError};

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

/// Why a run stopped for outside input; carried by [`Action::Interrupted`].
///
/// The interrupting agent sets [`info`](InterruptInfo::info) and, if it wants it back on
/// resume, [`state`](InterruptInfo::state). The framework fills in the rest as the event travels
/// up: the [`address`](InterruptInfo::address) (one frame per level of the tree the interrupt
/// crossed, outermost first) and the [`id`](InterruptInfo::id) that resume data is addressed to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct InterruptInfo {
    /// What the interrupting agent wants the caller to know (shown to a human, for instance).
    pub info: serde_json::Value,
    /// State the agent wants back when it is resumed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<serde_json::Value>,
    /// The interrupt's id: the run path of the interrupting agent (e.g. `desk/refund`), so it is
    /// unique within a run and readable. Set by the framework.
    #[serde(default)]
    pub id: String,
    /// Where the interrupt happened, structurally: the nodes it crossed, outermost first. Set
    /// by the framework.
    #[serde(default)]
    pub address: Vec<InterruptFrame>,
    /// What a wrapper agent attached while forwarding, moved into its frame by its flow
    /// (boxed: rare, and every event carrying an action moves this struct).
    #[serde(skip)]
    pub(crate) wrapper: Option<Box<WrapperAttachments>>,
}

/// What a wrapper agent attaches to an interrupt it forwards.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct WrapperAttachments {
    /// State the wrapper gets back on resume.
    pub(crate) state: Option<serde_json::Value>,
    /// The tool call it forwarded the interrupt from.
    pub(crate) tool: Option<ToolFrame>,
}

impl InterruptInfo {
    /// An interrupt carrying `info`.
    pub fn new(info: serde_json::Value) -> Self {
        InterruptInfo {
            info,
            ..InterruptInfo::default()
        }
    }

    /// The same interrupt with state to get back on resume.
    pub fn with_state(mut self, state: serde_json::Value) -> Self {
        self.state = Some(state);
        self
    }

    /// The address in text form: `agent:A;agent:B`, with `tool:NAME:CALL_ID` for a frame that
    /// crossed a tool boundary.
    pub fn address_string(&self) -> String {
        let mut out = String::new();
        for (i, frame) in self.address.iter().enumerate() {
            if i > 0 {
                out.push(';');
            }
            out.push_str("agent:");
            out.push_str(&frame.agent);
            if let Some(tool) = &frame.tool {
                out.push_str(";tool:");
                out.push_str(&tool.name);
                out.push(':');
                out.push_str(&tool.call_id);
            }
        }
        out
    }
}

/// One level of an interrupt's address: the tree node that was running at that level.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InterruptFrame {
    /// The node's agent.
    pub agent: Arc<str>,
    /// The run path it was running at.
    pub run_path: RunPath,
    /// State its agent attached while forwarding the interrupt (wrapper agents: which child
    /// was running, the loop iteration, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<serde_json::Value>,
    /// Set when the interrupt crossed from inside a tool of this agent (an agent used as a tool).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<ToolFrame>,
}

/// The tool call an interrupt crossed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolFrame {
    /// The tool's name.
    pub name: String,
    /// The call's id.
    pub call_id: String,
}

/// What the emitting agent asks the framework to do next.
///
/// Only the last action among an agent's own recorded events steers the run, once the agent's
/// event stream has ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// End the run here.
    Exit,
    /// Hand control to the named agent (a sub-agent, or the parent unless barred).
    TransferToAgent(Arc<str>),
    /// Stop the run for outside input; it can be resumed from a checkpoint. Boxed: an
    /// interrupt is rare, and every event moves its action.
    Interrupted(Box<InterruptInfo>),
    /// Stop the enclosing loop workflow; names the agent that broke it.
    BreakLoop(Arc<str>),
    /// Application-defined action, passed through untouched.
    Custom(Arc<serde_json::Value>),
}

impl Action {
    /// A transfer to the named agent.
    pub fn transfer_to(agent_name: impl Into<Arc<str>>) -> Self {
        Action::TransferToAgent(agent_name.into())
    }

    /// An interrupt: the run stops for outside input (see [`InterruptInfo`]).
    ///
    /// ```
    /// use flow_runtime::{Action, InterruptInfo};
    /// let action = Action::interrupted(InterruptInfo::new(serde_json::json!("approve?")));
    /// assert!(matches!(action, Action::Interrupted(info) if info.info == "approve?"));
    /// ```
    pub fn interrupted(info: InterruptInfo) -> Self {
        Action::Interrupted(Box::new(info))
    }

    /// The transfer target, if this is a transfer.
    pub fn transfer_target(&self) -> Option<&str> {
        match self {
            Action::TransferToAgent(name) => Some(name),
            _ => None,
        }
    }
}

/// An error reported in an event: by an agent, a tool, a model or the framework itself.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum AgentError {
    /// A transfer named an agent that is neither a sub-agent nor the parent.
    #[error("transfer failed: agent '{target}' not found when transferring from '{from}'")]
    TransferTargetNotFound {
        /// The agent asked for.
        target: Arc<str>,
        /// The agent that asked.
        from: Arc<str>,
    },
    /// A transfer to the parent from an agent barred from it.
    #[error(
        "transfer refused: agent '{from}' may not transfer to its parent '{target}' \
         (it was built with disallow_transfer_to_parent)"
    )]
    TransferToParentRefused {
        /// The parent.
        target: Arc<str>,
        /// The barred agent.
        from: Arc<str>,
    },
    /// An agent panicked; the run ended cleanly after this event.
    #[error("panic in agent '{agent}': {message}")]
    Panic {
        /// The agent whose code panicked.
        agent: Arc<str>,
        /// The panic payload, when it was a string.
        message: Arc<str>,
    },
    /// A message stream failed part-way.
    #[error(transparent)]
    Stream(#[from] StreamError),
    /// Anything else an agent reports.
    #[error("agent '{agent}' failed: {message}")]
    Failed {
        /// The agent reporting.
        agent: Arc<str>,
        /// What went wrong.
        message: Arc<str>,
    },
    /// Resume reached an agent that was interrupted but cannot be resumed.
    #[error(
        "agent '{agent}' was interrupted but is not resumable; implement Agent::resume for it \
         (or use FnAgent::on_resume)"
    )]
    NotResumable {
        /// The agent.
        agent: Arc<str>,
    },
    /// A checkpoint could not be saved or used; the run stopped and the stored checkpoint was
    /// left as it was.
    #[error("checkpoint: {message}")]
    Checkpoint {
        /// What went wrong.
        message: Arc<str>,
    },
    /// The run met one of its [`RunLimits`](crate::RunLimits) and stopped there.
    #[error(transparent)]
    LimitReached(#[from] crate::limits::LimitReached),
    /// A [middleware](crate::middleware) hook refused (a guardrail) or failed or panicked; the
    /// agent's run ended with this event. Boxed: it is rare, and every event moves its error
    /// field.
    #[error(transparent)]
    Middleware(Box<crate::llm::middleware::MiddlewareError>),
    /// A thread's earlier turns could not be read, or the turn could not be recorded; the
    /// thread was left as it was.
    #[error("thread: {message}")]
    Thread {
        /// What went wrong.
        message: Arc<str>,
    },
    /// An error of the caller's own type.
    #[error(transparent)]
    Custom(Arc<dyn std::error::Error + Send + Sync>),
}

impl From<crate::llm::middleware::MiddlewareError> for AgentError {
    fn from(error: crate::llm::middleware::MiddlewareError) -> Self {
        AgentError::Middleware(Box::new(error))
    }
}

impl AgentError {
    /// A failure of the named agent, described in words.
    pub fn failed(agent: impl Into<Arc<str>>, message: impl fmt::Display) -> Self {
        AgentError::Failed {
            agent: agent.into(),
            message: message.to_string().into(),
        }
    }

    /// Wraps any error type.
    pub fn custom(error: impl std::error::Error + Send + Sync + 'static) -> Self {
        AgentError::Custom(Arc::new(error))
    }

    /// The error's kind, as its JSON form names it ([`ErrorJson`](crate::ErrorJson)):
    /// `transfer_target_not_found`, `transfer_to_parent_refused`, `panic`, `stream`, `failed`,
    /// `not_resumable`, `checkpoint`, `thread`, `limit_reached`, `middleware` or `custom`.
    pub fn kind(&self) -> &'static str {
        match self {
            AgentError::TransferTargetNotFound { .. } => "transfer_target_not_found",
            AgentError::TransferToParentRefused { .. } => "transfer_to_parent_refused",
            AgentError::Panic { .. } => "panic",
            AgentError::Stream(_) => "stream",
            AgentError::Failed { .. } => "failed",
            AgentError::NotResumable { .. } => "not_resumable",
            AgentError::Checkpoint { .. } => "checkpoint",
            AgentError::Thread { .. } => "thread",
            AgentError::LimitReached(_) => "limit_reached",
            AgentError::Middleware(_) => "middleware",
            AgentError::Custom(_) => "custom",
        }
    }

    /// The agent the error is about, if it names one (for a transfer, the agent that asked).
    pub fn agent(&self) -> Option<&Arc<str>> {
        match self {
            AgentError::TransferTargetNotFound { from, .. }
            | AgentError::TransferToParentRefused { from, .. } => Some(from),
            AgentError::Panic { agent, .. }
            | AgentError::Failed { agent, .. }
            | AgentError::NotResumable { agent } => Some(agent),
            AgentError::LimitReached(limit) => Some(&limit.agent),
            AgentError::Middleware(error) => match &**error {
                crate::llm::middleware::MiddlewareError::Refused { agent, .. }
                | crate::llm::middleware::MiddlewareError::Failed { agent, .. }
                | crate::llm::middleware::MiddlewareError::Panicked { agent, .. } => Some(agent),
            },
            _ => None,
        }
    }

    pub(crate) fn from_panic(agent: &Arc<str>, payload: Box<dyn std::any::Any + Send>) -> Self {
        let message: Arc<str> = if let Some(s) = payload.downcast_ref::<&str>() {
            (*s).into()
        } else if let Some(s) = payload.downcast_ref::<String>() {
            s.as_str().into()
        } else {
            "non-string panic payload".into()
        };
        AgentError::Panic {
            agent: Arc::clone(agent),
            message,
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
    pub(crate) recorded: bool,
    /// Set on a [`Action::BreakLoop`] event once a loop workflow has stopped for it, so an
    /// enclosing loop does not stop too.
    pub(crate) break_handled: bool,
    /// The message's context form, made ahead by the tree for a transfer's messages (see
    /// [`ContextForm`](crate::history::ContextForm)); used by the session if it still fits.
    pub(crate) context: Option<Arc<crate::history::ContextForm>>,
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

    pub(crate) fn agent_name_arc(&self) -> &Arc<str> {
        &self.agent_name
    }

    /// Where in the run the event came from (empty until the framework has seen it).
    pub fn run_path(&self) -> &RunPath {
        &self.run_path
    }

    /// The whole message, if the output is one.
    pub fn message_output(&self) -> Option<&Message> {
        self.output
            .as_ref()
            .and_then(EventOutput::message)
            .map(|m| &**m)
    }

    /// The token usage of the model call whose reply this event's whole message is, if the
    /// model reported it. A streamed reply carries its usage in its last chunk, so it is on
    /// the message the stream concatenates to.
    pub fn usage(&self) -> Option<&crate::llm::usage::Usage> {
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
    pub(crate) fn stamped(mut self, agent_name: &Arc<str>, run_path: &RunPath) -> Self {
        self.stamp(agent_name, run_path);
        self
    }
}
