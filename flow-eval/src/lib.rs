//! Testing and evaluating agentflow flows (the `agentflow::eval` module, cargo feature `eval`).
//!
//! - [`cassette`]: record the model and tool calls of a run into a readable file, replay them
//!   offline (`AGENTFLOW_RECORD=1 cargo test` records again).
//! - [`set`]: eval sets (agentflow's JSON format with its JSON Schema, and Google ADK's
//!   evalset JSON): cases of user turns with expectations.
//! - [`trajectory`]: what a turn did (agents, tool calls, transfers, with run paths) and cost.
//! - [`criteria`]: trajectory, final response, LLM judge, budget: each a score and a reason.
#![warn(missing_docs)]

pub mod cassette;
pub mod criteria;
pub mod set;
pub mod trajectory;

/// Where a JSON document failed to read: line, column and the path of the field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct JsonFieldError {
    pub(crate) line: usize,
    pub(crate) column: usize,
    pub(crate) field: String,
    pub(crate) message: String,
}
