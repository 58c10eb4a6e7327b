//! Testing and evaluating agentflow flows (the `agentweave::eval` module, cargo feature `eval`).
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
//!
//! # Typed expectations from `flow!`
//!
//! An expected trajectory can be written in Rust against a flow's generated types, so that one
//! naming an agent the flow does not have, or a transfer it does not allow, does not compile.
//! `flow!` gives each flow `Flow::trajectory()`, a
//! [`TrajectorySpec`](agentweave_runtime::spec::expected::TrajectorySpec): agent steps take the
//! flow's agent enum, transfer steps a node's target enum (its variants are the agents that
//! node may transfer to), tool steps a name and arguments. The facade's `trajectory!` writes
//! the same with names, each checked at compile time. The spec is plain data (no feature
//! needed to build it); here it becomes a [`TrajectoryExpectation`](set::TrajectoryExpectation)
//! with `From`, scored by the trajectory criterion in every mode, and
//! [`EvalSet::new`](set::EvalSet::new), [`EvalCase::new`](set::EvalCase::new) and
//! [`TurnCase::new`](set::TurnCase::new) build a set in Rust:
//!
//! ```ignore
//! // (Needs `flow!`, from the `agentweave` facade; run in its tests/it/eval_typed.rs.)
//! use agentweave::eval::set::{EvalCase, EvalSet, TurnCase};
//!
//! flow! { Desk: dyn triage => [dyn refund, dyn complaint] }
//!
//! let refund = Desk::trajectory()
//!     .agent(DeskAgent::Triage)
//!     .transfer(DeskTriageTarget::Refund) // DeskRefundTarget::Complaint does not exist
//!     .tool_by(DeskAgent::Refund, "lookup_order", json!({"order_id": 42}))
//!     .in_order()
//!     .args_subset();
//! let set = EvalSet::new("desk").case(
//!     EvalCase::new("refund").turn(TurnCase::new("Refund order 42, please.").trajectory(refund)),
//! );
//! let report = EvalRunner::new(desk).run(&set).await;
//! ```
#![warn(missing_docs)]

pub use runner::{CaseEnv, EvalRunner};

pub mod cassette;
pub mod criteria;
mod memory;
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
