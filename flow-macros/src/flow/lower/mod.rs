//! Tokens out for `flow!`: the flow type, its builder, its agent and target enums, the
//! compile-time checks, and the lowering to the runtime's `FlowAgent` tree.
//!
//! - `flow_type`: [`lower`], the entry: the flow type in a module of its own (its facts trait,
//!   consts and methods), with every piece below assembled around it; [`stub`] for an invalid
//!   flow.
//! - `cx`: the context each piece reads, with the per-node helpers they share (agent name,
//!   barred, transfer targets, enum names).
//! - `agent_enum`: `{Flow}Agent`, one variant per agent.
//! - `target_enums`: `{Flow}{Node}Target`, the agents each node may transfer to.
//! - `expected`: `{Flow}::trajectory()`, an expected trajectory typed by those two enums.
//! - `builder`: `{Flow}Builder`, its slots for run-time agents, its setters and `build()`.
//! - `node`: the `FlowAgent` expression of a node and its subtree, which `build()` returns.
//! - `checks`: the compile-time checks: the flow's facts, whether each node fails (one const
//!   per flow), and one const per node asserting its checks.

mod agent_enum;
mod builder;
mod checks;
mod cx;
mod expected;
mod flow_type;
mod node;
mod target_enums;

pub(crate) use flow_type::{lower, stub};
