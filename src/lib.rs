//! agentflow: declare and run hierarchies of cooperating AI agents.
//!
//! [`macro@agent`] turns an async fn or a struct into an agent type, and [`flow!`] declares a
//! tree of agents that the compiler checks; a [`Runner`] runs it. Depend on `agentweave` alone;
//! `use agentweave::prelude::*` brings the names most programs need.
//!
//! The root holds what a first program uses: the macros, the agent model ([`Agent`],
//! [`FlowAgent`], [`FnAgent`], [`ChatModelAgent`]), the events a run streams ([`AgentEvent`],
//! [`Action`], [`RunPath`]), messages, and the runner with its requests ([`RunRequest`],
//! [`TurnRequest`], [`ResumeRequest`]). Everything else lives in one module per concept, each
//! item at one path:
//!
//! | module | what it holds |
//! | --- | --- |
//! | [`run`] | runs, turns and threads: the runner's builder, thread handles, run handles, cancel modes, time travel, limits, options, thread and tenant budgets |
//! | [`event`] | what an event carries: outputs, interrupt addresses, run steps, its JSON form |
//! | [`message`] | the parts of a message and of a streamed one |
//! | [`model`] | the chat-model contract, the scripted model, the HTTP clients, usage, failover |
//! | [`budget`] | what a run may spend (tokens, money, calls, wall time) and what it spent; the periods and gate of thread and tenant budgets (`run::SpendingBudgets`) |
//! | [`tool`] | tools, function tools, approvals, tool-call limits |
//! | [`mod@llm`] | the ReAct agent's builder, instruction, built-in tools and errors |
//! | [`history`] | context policies, rewriting, summaries, the context budget, earlier turns |
//! | [`host`] | what a run gets from the world (waits, the clock, ids): the tokio, std and manual hosts |
//! | [`workflow`] | sequential, parallel and loop agents, deterministic transfer, agents as tools |
//! | [`middleware`] | hooks around agent runs, model calls and tool calls |
//! | [`store`] | checkpoint, thread, journal and queue stores and their backends |
//! | [`memory`] | long-term memory: its store contract, stores and tools |
//! | [`kit`] | the agent kit: skills from folders, the plan tool, the file tools, the deep agent preset |
//! | [`spec`] | what the macros generate: agent facts, transfer targets, payloads, delegation, expected trajectories |
//! | [`telemetry`] | the spans of agent runs, model calls and tool calls |
//! | [`testing`] | helpers for tests that need outside components |
//! | `mcp`, `otel`, `server`, `eval`, `a2a`, `temporal` | behind the cargo features of the same names |
//!
//! See the README for a quick start and the guide for the model.

pub use agentweave_runtime::async_trait;
pub use agentweave_runtime::{
    generate, set_sub_agents, Action, Agent, AgentContext, AgentError, AgentEvent, AgentInput,
    AgentResult, AgentSpec, ChatModelAgent, Context, Durability, EventStream, Exit, FlowAgent,
    FlowError, FnAgent, Message, MessageStream, ResumeRequest, Role, RunContext, RunPath,
    RunRequest, Runner, Session, Turn, TurnRequest,
};

// Lets the macros' `::agentweave::...` paths resolve inside this crate (for `dsl::example`).
extern crate self as agentweave;

pub mod event;
pub mod history;
pub mod host;
pub mod llm;
pub mod message;
pub mod middleware;
pub mod model;
pub mod run;
pub mod spec;
pub mod store;
pub mod tool;
pub mod workflow;

/// Budgets: what a run may spend (tokens, money, model calls, tool calls, wall time), per run
/// and per agent, checked before the call that would cross them; the price table; what a run
/// spent.
pub use agentweave_runtime::budget;
/// Tools from Model Context Protocol servers (cargo feature `mcp`).
#[cfg(feature = "mcp")]
pub use agentweave_runtime::mcp;
/// The `tracing` spans of agent runs, model calls and tool calls, named and attributed after
/// the OpenTelemetry semantic conventions for generative AI (exported by the `otel` module,
/// cargo feature `otel`).
pub use agentweave_runtime::telemetry;
/// Helpers for tests that need an outside component (PostgreSQL, a browser, an MCP server):
/// skipping or failing when it is missing, fresh databases.
pub use agentweave_runtime::testing;

mod dsl;
/// The guide (`docs/src`) and the README, compiled and run as doctests.
#[cfg(doctest)]
pub mod guide;
#[cfg(feature = "otel")]
pub mod otel;
mod trajectory;

/// The HTTP server and web console: the `agentweave-server` crate (feature `server`).
#[cfg(feature = "server")]
pub use agentweave_server as server;

/// Testing and evaluating flows: record and replay, eval sets, criteria, reports (the
/// `agentweave-eval` crate, feature `eval`).
#[cfg(feature = "eval")]
pub use agentweave_eval as eval;

/// The Agent2Agent protocol: remote A2A agents as nodes of a tree or as tools (`A2aAgent`),
/// and the protocol's types (the `agentweave-a2a` crate, feature `a2a`). Serving a flow as an A2A
/// agent is the server's (`agentweave-server`, `/a2a/{flow}`).
#[cfg(feature = "a2a")]
pub use agentweave_a2a as a2a;

/// The agent kit: skills loaded from folders and disclosed as tools (`load_skill`,
/// `read_skill_resource`, `run_skill_script` under a [`ScriptPolicy`](kit::ScriptPolicy)), the
/// plan tool, the file tools over the thread's values or a jailed directory, and the
/// [`DeepAgent`](kit::DeepAgent) preset (see the guide's "Skills and the agent kit" chapter).
pub use agentweave_runtime::kit;

/// Flows on Temporal: a thread is a workflow, each model and tool call an activity, an
/// approval's answer an update checked by its validator (the `agentweave-temporal` crate, feature
/// `temporal`; see the guide's "Scaling out on Temporal" chapter).
#[cfg(feature = "temporal")]
pub use agentweave_temporal as temporal;

/// Long-term memory: the memory store contract, its stores (in memory, SQLite, PostgreSQL),
/// [`Memory`](memory::Memory), the `remember`, `recall` and `forget` tools, recall before a
/// model call ([`MemoryRecall`](memory::MemoryRecall)) and extraction after a turn
/// ([`MemoryExtraction`](memory::MemoryExtraction)) (see the guide's "Memory" chapter).
pub use agentweave_runtime::memory;

pub use dsl::agent;
#[cfg(doc)]
pub use dsl::example;

pub mod prelude;

/// Re-exports for code generated by the macros. Not a public API.
#[doc(hidden)]
#[path = "private.rs"]
pub mod __private;
