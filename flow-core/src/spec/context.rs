//! [`AgentContext`]: what an `#[agent]` body emits through.

use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

use super::AgentSpec;
use crate::agent::{Context, RunContext};
use crate::event::{Action, AgentError, AgentEvent};
use crate::message::Message;
use crate::resume::ResumeInfo;
use crate::stream::MessageStream;

/// The context an `#[agent]` body emits through; it derefs to the [`RunContext`] (session, run
/// path, root input).
///
/// Unlike [`Context`] it offers no transfer by name: an `#[agent]` transfers by returning a
/// variant of its transfer enum, so every transfer it makes is one it declared. An event emitted
/// here that carries a [`Action::TransferToAgent`] of this agent's own is replaced by an error
/// event saying so.
///
/// An `#[agent]` stops for outside input with [`interrupt`](AgentContext::interrupt). When the
/// run is resumed, the agent's body runs again with
/// [`is_resuming`](AgentContext::is_resuming) true, the caller's answer in
/// [`resume_data`](AgentContext::resume_data) and its state in
/// [`saved_state`](AgentContext::saved_state); its input holds what it said before the
/// interrupt, so a body that branches on `is_resuming` first does not say it twice.
#[derive(Clone)]
pub struct AgentContext {
    pub(super) cx: Context,
    resume: Option<Arc<ResumeInfo>>,
    /// The targets the running agent declared: the only names [`transfer`] sends it to.
    pub(super) declared: &'static [&'static str],
}

impl AgentContext {
    /// Wraps the emitting context of a run. The agent it stands for declares no transfers.
    pub fn new(cx: Context) -> Self {
        AgentContext {
            cx,
            resume: None,
            declared: &[],
        }
    }

    /// Wraps the emitting context of a run of agent `A` that resumes with `info` (an empty
    /// `info`: a plain run); `A`'s declared transfers are the only targets [`transfer`] accepts.
    /// Used by the code `#[agent]` generates.
    #[doc(hidden)]
    pub fn __start<A: AgentSpec + ?Sized>(cx: Context, info: ResumeInfo) -> Self {
        AgentContext {
            cx,
            resume: (!info.is_empty()).then(|| Arc::new(info)),
            declared: A::TRANSFERS,
        }
    }

    /// Whether this run of the agent resumes one that stopped with an interrupt.
    pub fn is_resuming(&self) -> bool {
        self.resume.is_some()
    }

    /// When resuming: the interrupt being resumed (see [`ResumeInfo`]).
    pub fn resume_info(&self) -> Option<&ResumeInfo> {
        self.resume.as_deref()
    }

    /// When resuming: the data the caller addressed to this agent's interrupt, if any
    /// (resumed without targets, an agent gets none and may interrupt again).
    pub fn resume_data(&self) -> Option<&serde_json::Value> {
        self.resume_info().and_then(ResumeInfo::data)
    }

    /// When resuming: the state this agent saved with
    /// [`interrupt_with_state`](AgentContext::interrupt_with_state).
    pub fn saved_state(&self) -> Option<&serde_json::Value> {
        self.resume_info().and_then(ResumeInfo::state)
    }

    /// Stops the run for outside input once this agent's body returns: the runner saves a
    /// checkpoint, and the caller sees `info` (a question for a human, say). The interrupt's
    /// id is this agent's run path. The run stops once the body returns, whatever it returns
    /// (a transfer it returns is not followed).
    /// See the `#[agent]` macro's documentation for an example.
    pub fn interrupt(&self, info: serde_json::Value) {
        self.cx.interrupt(info);
    }

    /// Like [`interrupt`](AgentContext::interrupt), keeping `state` for the resumed run
    /// ([`saved_state`](AgentContext::saved_state)); it is stored in the checkpoint.
    pub fn interrupt_with_state(&self, info: serde_json::Value, state: serde_json::Value) {
        self.cx.interrupt_with_state(info, state);
    }

    /// Stops the innermost [`Loop`](crate::Loop) workflow around this agent once its run
    /// ends (see [`Context::break_loop`]).
    pub fn break_loop(&self) {
        self.cx.break_loop();
    }

    /// Emits an event. An own event (no run path yet, or this agent's) carrying a transfer
    /// action is turned into an error event: return a transfer variant instead.
    pub fn emit(&self, event: AgentEvent) {
        let own = event.run_path().is_empty() || event.run_path() == self.cx.run_path();
        if let (true, Some(Action::TransferToAgent(target))) = (own, &event.action) {
            let message = format!(
                "emitted a transfer to '{target}' as an event; an #[agent] transfers by \
                 returning a variant of its transfer enum"
            );
            self.cx.emit(AgentEvent::error(AgentError::failed(
                self.cx.agent_name(),
                message,
            )));
            return;
        }
        self.cx.emit(event);
    }

    /// Emits an assistant message with the given text.
    pub fn say(&self, text: impl Into<String>) {
        self.cx.say(text);
    }

    /// Emits a message.
    pub fn send(&self, message: Message) {
        self.cx.send(message);
    }

    /// Emits a streamed message.
    pub fn send_stream(&self, stream: MessageStream) {
        self.cx.send_stream(stream);
    }

    /// Emits application data (never part of any agent's history).
    pub fn custom(&self, data: serde_json::Value) {
        self.cx.emit(AgentEvent::custom(data));
    }

    /// The run context.
    pub fn run_context(&self) -> &RunContext {
        self.cx.run_context()
    }
}

impl Deref for AgentContext {
    type Target = RunContext;
    fn deref(&self) -> &RunContext {
        self.cx.run_context()
    }
}

impl fmt::Debug for AgentContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgentContext")
            .field("run", self.cx.run_context())
            .field("resume", &self.resume)
            .finish()
    }
}
