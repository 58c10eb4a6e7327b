//! [`AgentInput`]: what an agent runs on.

use crate::input::Messages;
use crate::message::MessageRef;

/// The input an agent runs on.
#[derive(Debug, Clone, Default)]
pub struct AgentInput {
    /// The conversation as this agent should see it (after its context policy ran); shared,
    /// not copied (it derefs to `[MessageRef]`).
    pub messages: Messages,
    /// Whether the caller asked for streamed output.
    pub streaming: bool,
}

impl AgentInput {
    /// Input made of the given messages, not streaming.
    pub fn new(messages: impl IntoIterator<Item = MessageRef>) -> Self {
        AgentInput {
            messages: messages.into_iter().collect(),
            streaming: false,
        }
    }
}
