//! Procedural macros of agentflow: `#[agent]` and `flow!`.
//!
//! This crate is used through the `agentflow` facade; generated code names only
//! `::agentflow::__private`. The macros arrive with the DSL issue; for now the crate is empty.
