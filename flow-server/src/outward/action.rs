//! An event's action as a client sees it; an interrupt without its saved state.

use agentweave_runtime::{Action, InterruptInfo};
use serde::Serialize;

/// What an agent asked to happen next: `"exit"`, `{"transfer_to_agent": NAME}`,
/// `{"interrupted": {"id", "info", "address"}}`, `{"break_loop": NAME}`, `{"finish": RESULT}`
/// or `{"custom": VALUE}`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OutwardAction<'a> {
    /// The run ends here.
    Exit,
    /// Control passes to the named agent.
    TransferToAgent(&'a str),
    /// The run stops for outside input.
    Interrupted(OutwardInterrupt<'a>),
    /// The enclosing loop stops; names the agent that broke it.
    BreakLoop(&'a str),
    /// A task or single-turn agent finished with its result, which returns to its parent.
    Finish(&'a serde_json::Value),
    /// The application's own action, as the application wrote it.
    Custom(&'a serde_json::Value),
}

impl<'a> OutwardAction<'a> {
    /// The outward form of `action`.
    pub fn of(action: &'a Action) -> Self {
        match action {
            Action::Exit => OutwardAction::Exit,
            Action::TransferToAgent(to) => OutwardAction::TransferToAgent(to),
            Action::Interrupted(info) => OutwardAction::Interrupted(OutwardInterrupt::of(info)),
            Action::BreakLoop(by) => OutwardAction::BreakLoop(by),
            Action::Finish(result) => OutwardAction::Finish(result),
            Action::Custom(value) => OutwardAction::Custom(value),
        }
    }
}

/// What a client sees of an interrupt: its id (the key for resume data), what the agent wants
/// known, and its address as text. The agent's saved state, and the state its wrappers saved
/// in each frame of the address, stay in the checkpoint.
#[derive(Debug, Clone, Serialize)]
pub struct OutwardInterrupt<'a> {
    /// The id to address resume data to.
    pub id: &'a str,
    /// What the agent wants the human to know.
    pub info: &'a serde_json::Value,
    /// Where it happened, as text (`agent:A;tool:NAME:CALL_ID;agent:B`).
    pub address: String,
}

impl<'a> OutwardInterrupt<'a> {
    /// The public part of `info`.
    pub fn of(info: &'a InterruptInfo) -> Self {
        OutwardInterrupt {
            id: &info.id,
            info: &info.info,
            address: info.address_string(),
        }
    }
}
