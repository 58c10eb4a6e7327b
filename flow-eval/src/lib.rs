//! Testing and evaluating agentflow flows (the `agentflow::eval` module, cargo feature `eval`).
//!
//! - [`cassette`]: record the model and tool calls of a run into a readable file, replay them
//!   offline (`AGENTFLOW_RECORD=1 cargo test` records again).
#![warn(missing_docs)]

pub mod cassette;

/// Where a JSON document failed to read: line, column and the path of the field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct JsonFieldError {
    pub(crate) line: usize,
    pub(crate) column: usize,
    pub(crate) field: String,
    pub(crate) message: String,
}
