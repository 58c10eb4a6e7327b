//! The agentflow runtime: the in-process host of the `agentweave-core` engine, with the [`Runner`],
//! the stores and the model clients.
//!
//! This crate has no macros and can be used alone, with trees built at run time by
//! [`set_sub_agents`]; the `agentweave` facade adds `#[agent]` and `flow!`, which build the
//! same trees from declarations checked at compile time.
//!
//! # The model
//!
//! - An [`Agent`] runs on an [`AgentInput`] and returns an [`EventStream`] of [`AgentEvent`]s.
//!   An event carries a message (whole, or a [`MessageStream`] of chunks), an [`Action`], or an
//!   error. Dropping the stream cancels the run.
//! - A [`FlowAgent`] places an agent in a tree. Running it records the agent's own events in the
//!   run's [`Session`], builds each agent's input from the run's input and that record (shaped
//!   by the agent's [`ContextPolicy`]), and follows transfers between neighbours in the tree.
//! - Every event carries a [`RunPath`]: the chain of agents from the root to its source, with one
//!   step per hop (`triage/refund/triage/complaint`). The framework sets it once.
//! - Workflow agents ([`Sequential`], [`Parallel`], [`Loop`]) run their node's sub-agents in
//!   a fixed pattern; [`DeterministicTransfer`] hands off to fixed agents; an [`AgentTool`]
//!   lets a model call a whole tree as a tool (see [`workflow`]).
//! - The [`Runner`] starts runs: a new session per run, streaming on or off. A conversation
//!   is a thread kept in a [`ThreadStore`]: [`Runner::turn`] runs one user turn of it, starting
//!   where [`TurnRouting`] says, with the earlier turns reaching each agent through its
//!   [`ContextPolicy`] (see [`Turn`]).
//! - An [`AgentEvent`] serialises to its documented JSON form, [`EventJson`] (see [`event_json`]).
//! - Each agent run is a `tracing` span named `invoke_agent` (`gen_ai.agent.name`,
//!   `agentflow.run_path`, and a thread's id as `gen_ai.conversation.id`).
//!
//! ```
//! use agentweave_runtime::{set_sub_agents, FlowAgent, FnAgent, Runner};
//! use futures::StreamExt;
//! # futures::executor::block_on(async {
//! let triage = FnAgent::new("triage", |cx, _| async move {
//!     cx.say("Looks like a refund");
//!     cx.transfer("refund");
//!     Ok(())
//! });
//! let refund = FnAgent::new("refund", |cx, input| async move {
//!     // What triage said reaches refund as context: refund repeats it.
//!     cx.say(input.messages[1].content.clone());
//!     Ok(())
//! });
//! let desk = set_sub_agents(FlowAgent::new(triage), [FlowAgent::new(refund)]).unwrap();
//! let mut events = Runner::new(desk).run("My order arrived broken");
//! let mut last = String::new();
//! while let Some(event) = events.next().await {
//!     if let Some(m) = event.message_output() {
//!         println!("{}: {}", event.run_path(), m.content);
//!         last = format!("{}: {}", event.run_path(), m.content);
//!     }
//! }
//! assert_eq!(last, "triage/refund: For context: [triage] said: Looks like a refund.");
//! # });
//! ```
#![warn(missing_docs)]

// Everything of the engine (`agentweave-core`: messages, events, agents, flows, workflows, the ReAct
// agent) is part of this crate's root, as if written here.
pub use agentweave_core::*;

// The bands (the guide's "Architecture" chapter): each module imports only the bands above it
// in this list (the engine's bands, in `agentweave-core`, come first).
//
// band 1, contracts: the model clients; the stores
pub mod model;
// The outbound policy for URLs callers chose (cargo feature `outbound`).
#[cfg(feature = "outbound")]
pub mod outbound;
pub mod store;
// band 3, services: runs, checkpoints and resume, threads of turns; the host
pub mod host;
mod runner;
// band 4, tools over this process's services: MCP, memory
mod tools;
// test helpers (components, fresh databases)
pub mod testing;

/// The former name of [`store`].
#[doc(hidden)]
pub use store as checkpoint;
/// Tools from Model Context Protocol servers (cargo feature `mcp`).
#[cfg(feature = "mcp")]
pub use tools::mcp;

/// The agent kit (issue 43): skills loaded from folders with their disclosure tools, the plan
/// tool and the file tools. See the guide's "Skills and the agent kit" chapter.
pub use tools::kit;

/// Long-term memory (issue 42): the memory store contract and its stores
/// ([`store::memory_items`]), with the `remember`, `recall` and `forget` tools an agent can be
/// given, recall before a model call ([`MemoryRecall`](memory::MemoryRecall)) and extraction
/// after a turn ([`MemoryExtraction`](memory::MemoryExtraction)). See the guide's "Memory"
/// chapter.
pub mod memory {
    pub use crate::store::memory_items::*;
    pub use crate::tools::memory_extract::{
        ExtractionError, MemoryExtraction, EXTRACTION_INSTRUCTION, MAX_CHANGES_PER_CALL,
        MEMORY_EXTRACTOR_NAME, UPDATE_MEMORY_TOOL_NAME,
    };
    pub use crate::tools::memory_recall::{
        MemoryRecall, Recalled, RecalledItem, MEMORY_RECALL_EVENT, RECALL_HEADER,
    };
    pub use crate::tools::memory_tools::{
        MemoryTools, FORGET_TOOL_NAME, MAX_RECALL_HITS, RECALL_TOOL_NAME, REMEMBER_TOOL_NAME,
    };
}

pub use store::{
    Checkpoint, CheckpointError, CheckpointMeta, CheckpointState, CheckpointStore, Claim,
    Completion, FileStore, InMemoryStore, PendingCheckpoint, PendingInterrupt, SaveMode,
    StoreError, ThreadError, ThreadStore,
};
pub use store::{JournalError, JournalStore, StoredStep};
/// The PostgreSQL store, beside the others at the root (also at `store::PostgresStore`).
#[cfg(feature = "postgres")]
pub use store::{PostgresOptions, PostgresStore};
/// The SQLite store, beside the others at the root (also at `store::SqliteStore`).
#[cfg(feature = "sqlite")]
pub use store::{SqliteOptions, SqliteStore};

pub use runner::{
    fork_point_step, Fork, ForkEnd, ThreadStep, ThreadStepKind, TimeTravelError, FORK_POINT,
};
pub use runner::{is_withdrawn, WITHDRAWN_KEY};
pub use runner::{turn_journal_id, Durability, Step, StepKind};
pub use runner::{turn_mark_id, RecoverError};
pub use runner::{AnswerRule, Caller, TurnEvent, TurnItem, TurnStream};
pub use runner::{
    AttachError, CancelError, DoubleText, RunError, RunEvent, RunFailure, RunHandle, RunInfo,
    RunItem, RunOutcome, RunRetention, RunStatus, Runner, SteerError, ThreadMessage, Turn,
    TurnOutcome, TurnRouting, UnknownStrategy,
};
pub use runner::{
    Checkpoints, HeldClaim, ResumeRequest, RunRequest, RunnerBuilder, ThreadHandle, TurnRequest,
};
pub use runner::{PurgeReport, Retention};
pub use runner::{SpendingBudgets, SpendingLimits, NO_TENANT};
pub use runner::{ThreadState, FRAMEWORK_KEY_PREFIX};
