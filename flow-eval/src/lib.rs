//! Testing and evaluating agentflow flows (the `agentflow::eval` module, cargo feature `eval`).
//!
//! - [`cassette`]: record the model and tool calls of a run into a readable file, replay them
//!   offline (`AGENTFLOW_RECORD=1 cargo test` records again).
//! - [`set`]: eval sets (agentflow's JSON format with its JSON Schema, and Google ADK's
//!   evalset JSON): cases of user turns with expectations.
//! - [`trajectory`]: what a turn did (agents, tool calls, transfers, with run paths) and cost.
//! - [`criteria`]: trajectory, final response, LLM judge, budget: each a score and a reason.
//! - [`simulate`]: simulated users (a scripted persona, or a model with a goal).
//! - [`runner`]: [`EvalRunner`] runs a set against a flow, with repeats and pass rates.
//! - [`report`]: the results as a terminal table, JUnit XML, JSON and an HTML page.
//! - [`testing`]: one test per eval case inside `cargo test` ([`eval_tests!`]).
#![warn(missing_docs)]

pub use runner::{CaseEnv, EvalRunner};

pub mod cassette;
pub mod criteria;
pub mod report;
pub mod runner;
pub mod set;
pub mod simulate;
pub mod testing;
pub mod trajectory;

/// Re-exports for the code [`eval_tests!`] generates. Not a public API.
#[doc(hidden)]
pub mod __private {
    pub use tokio;
}

/// Where a JSON document failed to read: line, column and the path of the field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct JsonFieldError {
    pub(crate) line: usize,
    pub(crate) column: usize,
    pub(crate) field: String,
    pub(crate) message: String,
}
