//! The Temporal half (feature `sdk`): the thread workflow, the activities, and what a worker
//! and a client need.
//!
//! - `workflow`: [`ThreadWorkflow`], one per thread: each turn (the update
//!   [`ThreadWorkflow::turn`]) runs the engine with every effect a Temporal command; a
//!   question (an approval) waits for the update [`ThreadWorkflow::answer`], whose validator
//!   checks the answerer's authority with the engine's [`AnswerRule`](agentweave_runtime::AnswerRule).
//! - `activities`: [`AgentflowActivities`], the model and tool activities.
//! - `worker`: [`worker_options`] and [`run_worker`] (the workflow and the activities on a
//!   task queue), [`worker_flows`] (the process's flows), [`replayer`], [`connect`].
//! - `client`: [`Thread`], a client's handle on a thread workflow.

mod activities;
mod client;
mod held;
mod worker;
mod workflow;

pub use activities::AgentflowActivities;
pub use client::{TemporalError, Thread};
pub use worker::{
    connect, replay_history, replayer, run_worker, worker_flows, worker_options, DEFAULT_ADDRESS,
};
pub use workflow::{
    AnswerRequest, CancelTurn, Carried, LocalSteps, ThreadStart, ThreadWorkflow, TurnEnd,
    TurnRequest, TurnResult, APPROVE_GRANT,
};
