//! [`Delegation`]: how a sub-agent's node gives control back (or not) to its parent.

use serde::{Deserialize, Serialize};

/// How a node receives control from its parent and gives it back: a node option
/// ([`FlowAgent::delegation`](crate::FlowAgent::delegation); in `flow!`, `refund(task)` or
/// `research(single_turn)`).
///
/// | mode | reached by | talks with the user | ends with | then |
/// | --- | --- | --- | --- | --- |
/// | `Chat` (default) | a transfer | yes, it answers the turn | its last action | the run follows its action (a transfer goes on, anything else ends the turn) |
/// | `Task` | a transfer from its parent | over as many turns as it needs | [`Action::Finish`](crate::Action::Finish) with a result | the parent runs again, in the same turn, with the result |
/// | `SingleTurn` | a transfer from its parent | no: it runs once | its last message, or a `Finish` | the parent runs again with the result |
///
/// A task that ends its run without finishing (it asked the user something) ends the turn;
/// with `TurnRouting::LastAgent` (the default) the thread's
/// next turn starts at the task again, at any depth, until it finishes. The parent's input is
/// scoped: it sees none of its delegated sub-agents' own messages (nor of the agents below
/// them), only each one's result (the message of its `Finish` event; for a single-turn
/// agent, its final answers).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Delegation {
    /// Control passes by transfer and stays where it went (Eino's behaviour).
    #[default]
    Chat,
    /// The sub-agent works with the user until it finishes, then returns its result.
    Task,
    /// The sub-agent runs once, without the user, and returns its result.
    SingleTurn,
}

impl Delegation {
    /// Whether control comes back to the parent (`Task` or `SingleTurn`).
    pub fn returns(self) -> bool {
        !matches!(self, Delegation::Chat)
    }
}

/// What a delegated sub-agent returned to its parent: read by the parent, in the run it
/// continues, with [`RunContext::task_result`](crate::RunContext::task_result).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskResult {
    /// The sub-agent that finished.
    pub from: std::sync::Arc<str>,
    /// Its result.
    pub result: serde_json::Value,
}

/// The session value under which the result last returned to `parent` is kept.
pub(crate) fn result_key(parent: &str) -> String {
    format!("agentflow.task_result.{parent}")
}
