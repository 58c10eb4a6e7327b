//! The agent model: what runs, what it receives, and the tree it runs in.
//!
//! - `contract`: [`Agent`] (what runs on an input and streams events), [`AgentInfo`],
//!   [`OnSubAgents`];
//! - `input`: [`AgentInput`], what an agent runs on;
//! - `event_stream`: [`EventStream`], what running an agent produces;
//! - `run_context`: [`RunContext`], what an agent knows of its run (session, run path, limits,
//!   options, middleware, its node);
//! - `run_budgets`: a run's budgets while it runs: its totals and each agent's spending,
//!   charged without the session's lock and folded into the session's ledger when it is read;
//! - `cancel`: cancelling a run at a safe point ([`CancelMode`], [`CancelSignal`]);
//! - `steer`: messages sent to a running turn, taken in at its next safe point ([`SteerQueue`]);
//! - `options`: per-run, per-agent options ([`RunOptions`], [`AgentRunOptions`]);
//! - `middleware`: hooks around agent runs, model calls and tool calls ([`Middleware`],
//!   [`Middlewares`], [`HookContext`]);
//! - `emitter`: event streams written as ordinary async code ([`generate`], [`Context`]);
//! - `delegation`: [`Delegation`], whether a node gives control back to its parent;
//! - `payload`: [`Payload`], the data a node receives with a transfer;
//! - `tree`: the tree as data ([`FlowAgent`], [`NodeOptions`], [`set_sub_agents`]).
//!
//! A knot of types lives here that cannot be cut without changing public signatures: a
//! [`RunContext`] holds the run's middleware and its node; a hook's [`HookContext`] holds the
//! [`RunContext`]; a node holds its own middleware and its [`Agent`], and [`Agent::as_flow`]
//! names the node. They stay in this one folder. Running a tree is [`crate::flow`]'s.

pub mod cancel;
mod contract;
mod delegation;
mod emitter;
mod event_stream;
mod input;
pub mod middleware;
pub mod options;
mod payload;
mod run_budgets;
mod run_context;
mod steer;
pub(crate) mod tree;

pub use cancel::{CancelMode, CancelSignal, SafePoint};
pub use contract::{Agent, AgentInfo, OnSubAgents};
pub(crate) use delegation::result_key;
pub use delegation::{Delegation, TaskResult};
pub use emitter::{generate, Context};
pub use event_stream::EventStream;
pub use input::AgentInput;
pub use middleware::{HookContext, Middleware, Middlewares};
pub use options::{AgentRunOptions, HistoryModifier, RunOptions};
pub use payload::Payload;
pub(crate) use payload::{payload_key, payload_of_call};
pub(crate) use run_budgets::RunBudgets;
pub use run_context::RunContext;
pub(crate) use run_context::{LaneIndex, MapLane};
pub use steer::{ReplayedSteers, SteerClosed, SteerQueue};
pub use tree::{set_sub_agents, FlowAgent, NodeOptions};
