//! Runs agentflow's engine on [Temporal](https://temporal.io): a thread is a workflow, each
//! turn a step of it, each model call and each tool call an activity, and a human's answer to
//! an approval a Temporal update.
//!
//! The orchestration (transfers, the ReAct loop, workflows, approvals, limits) runs inside the
//! workflow, deterministically: it reaches the world only through its host and middleware,
//! which here ask the workflow for every effect ([`effects`]). What a worker runs is named in
//! its [`Flows`]; what the activities do with them is in [`flows`]; how each is named and
//! retried in [`policy`].
//!
//! The Temporal half (the workflow, the activities, the worker and the client helpers: module
//! `sdk`, its items also at this crate's root) is behind this crate's feature `sdk`: the
//! Temporal SDK needs `protoc` and Rust 1.92 to build, and the workspace's
//! `cargo test --workspace` must build without them. The guide's chapter "Scaling out on
//! Temporal" says how to run it.

pub mod effects;
pub mod flows;
pub mod policy;
pub mod turn;

#[cfg(feature = "sdk")]
pub mod sdk;
#[cfg(feature = "sdk")]
pub use sdk::{
    connect, replayer, run_worker, worker_flows, worker_options, AgentflowActivities,
    AnswerRequest, TemporalError, Thread, ThreadStart, ThreadWorkflow, TurnRequest, TurnResult,
    APPROVE_GRANT, DEFAULT_ADDRESS,
};

pub use effects::{
    Effect, Effects, EffectsMiddleware, ModelCall, Outcome, TemporalHost, ToolCallInput,
    ToolOutcome, ToolResume,
};
pub use flows::{call_model, call_tool, Flows, LookupError};
