//! Eval sets: cases of one or more user turns on a thread, each with expectations.
//!
//! - `format.rs`: agentflow's own format ([`EvalSet`], JSON; its JSON Schema is committed as
//!   `flow-eval/evalset.schema.json`, made by [`json_schema`]) and [`EvalSetError`] (a
//!   malformed file names its line, column and field).
//! - `adk.rs`: [`read_adk_evalset`], a reader for Google ADK's evalset JSON.
//! - `typed.rs`: eval sets written in Rust: a [`TrajectoryExpectation`] from a flow's typed
//!   `Flow::trajectory()`, and constructors of sets, cases and turns.

mod adk;
mod format;
mod typed;

pub use adk::{adk_evalset_from_json, read_adk_evalset, AdkOptions};
pub(crate) use format::StepKind;
pub use format::{
    json_schema, ArgsMatch, Budget, EvalCase, EvalSet, EvalSetError, Expectations, ExpectedStep,
    JudgeExpectation, MatchMode, MemoryExpectation, MemorySeed, ResponseExpectation, ResumeAnswer,
    Simulation, StoredItem, TrajectoryExpectation, TurnCase,
};
