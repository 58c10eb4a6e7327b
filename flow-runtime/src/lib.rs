//! The agentflow runtime: messages, event streams, agent trees and the [`Runner`].
//!
//! This crate has no macros and can be used alone, with trees built at run time by
//! [`set_sub_agents`]; the `agentflow` facade adds `#[agent]` and `flow!`, which build the
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
//! - Each agent run is a `tracing` span named `agent` with fields `agent` and `run_path`.
//!
//! ```
//! use flow_runtime::{set_sub_agents, FlowAgent, FnAgent, Runner};
//! use futures::StreamExt;
//! # futures::executor::block_on(async {
//! let triage = FnAgent::new("triage", |cx, _| async move {
//!     cx.say("Looks like a refund.");
//!     cx.transfer("refund");
//!     Ok(())
//! });
//! let refund = FnAgent::new("refund", |cx, input| async move {
//!     // What triage said reaches refund as context.
//!     assert_eq!(input.messages[1].content, "For context: [triage] said: Looks like a refund.");
//!     cx.say("Refund issued.");
//!     Ok(())
//! });
//! let desk = set_sub_agents(FlowAgent::new(triage), [FlowAgent::new(refund)]).unwrap();
//! let mut events = Runner::new(desk).run("My order arrived broken");
//! while let Some(event) = events.next().await {
//!     if let Some(m) = event.message_output() {
//!         println!("{}: {}", event.run_path(), m.content);
//!     }
//! }
//! # });
//! ```
#![warn(missing_docs)]

// The bands (README "Layout"): each module imports only the bands above it in this list.
//
// band 0, words: message, input, usage, stream, run_path, transfer, context_form, limits,
//   error, ids, trace, event/, resume
mod context_form;
mod error;
mod event;
mod ids;
mod input;
mod limits;
mod message;
mod resume;
mod run_path;
mod stream;
mod trace;
mod transfer;
pub mod usage;
// band 1, contracts: the chat-model contract and its clients; the stores
pub mod model;
pub mod store;
// band 2, core: history policies, the session, the agent model, running a tree, workflows
mod agent;
mod diagram;
mod flow;
mod fn_agent;
pub mod history;
mod session;
pub mod spec;
pub mod workflow;
// band 3, services: runs, checkpoints and resume, threads of turns
mod runner;
// band 4, the LLM layer: the ReAct agent, tools, MCP
mod llm;
// test helpers (components, fresh databases)
pub mod testing;

pub use agent::{cancel, middleware, options};
pub use event::json as event_json;
/// Tools from Model Context Protocol servers (cargo feature `mcp`).
#[cfg(feature = "mcp")]
pub use llm::mcp;
pub use llm::{instruction, structured, telemetry, tool};
/// The former name of [`store`].
#[doc(hidden)]
pub use store as checkpoint;

/// Long-term memory (issue 42): the memory store contract and its stores
/// ([`store::memory_items`]), with the `remember`, `recall` and `forget` tools an agent can be
/// given. See the guide's "Memory" chapter.
pub mod memory {
    pub use crate::llm::memory_tools::{
        MemoryTools, FORGET_TOOL_NAME, MAX_RECALL_HITS, RECALL_TOOL_NAME, REMEMBER_TOOL_NAME,
    };
    pub use crate::store::memory_items::*;
}

pub use agent::{
    generate, set_sub_agents, Agent, AgentInfo, AgentInput, AgentRunOptions, CancelMode,
    CancelSignal, Context, Delegation, EventStream, FlowAgent, HistoryModifier, HookContext,
    Middleware, NodeOptions, OnSubAgents, Payload, RunContext, RunOptions, SafePoint, TaskResult,
};

pub use async_trait::async_trait;
pub use llm::{
    default_transfer_instructions, exit_tool_definition, transfer_tool_definition, AgentTool,
    ChatAgentError, ChatModelAgent, ChatModelAgentBuilder, IllegalTransfer, InstructionError,
    InstructionFn, ToolCallLimits, TransferInstructionsFn, DEFAULT_MAX_ITERATIONS, EXIT_TOOL_NAME,
    FINISH_TASK_TOOL_NAME, READ_TOOL_RESULT_TOOL_NAME,
};
pub use llm::{ApprovalPredicate, NeedsApproval, ToolApprovals, FRONTEND_TOOL_KEY};
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

pub use error::FlowError;
pub use event::{
    Action, AgentError, AgentEvent, EventOutput, EventPrinter, HookError, InterruptFrame,
    InterruptInfo, MiddlewareError, ToolFrame,
};
pub use event_json::{ErrorJson, EventJson, EventJsonError};
pub use fn_agent::FnAgent;
pub use history::{rewrite_for_context, ContextPolicy, HistoryEntry, HistoryRewriter, Summarizer};
pub use ids::fingerprint_of;
pub use input::Messages;
pub use limits::{LimitReached, RunLimit, RunLimits};
pub use message::{ContentPart, ImageSource, Message, MessageRef, Role, ToolCall};
pub use model::{
    ChatModel, ChatRequest, ModelError, OutputSchema, RetryPolicy, ScriptStep, ScriptedModel,
    Usage, UsageReport,
};
pub use resume::ResumeInfo;
pub use run_path::{RunPath, RunStep};
pub use runner::{is_withdrawn, WITHDRAWN_KEY};
pub use runner::{turn_journal_id, Durability, Step, StepKind};
pub use runner::{turn_mark_id, RecoverError};
pub use runner::{AnswerRule, Caller, TurnEvent, TurnItem, TurnStream};
pub use runner::{
    AttachError, CancelError, DoubleText, RunError, RunEvent, RunFailure, RunHandle, RunInfo,
    RunItem, RunOutcome, RunRetention, RunStatus, Runner, ThreadMessage, Turn, TurnOutcome,
    TurnRouting, UnknownStrategy,
};
pub use runner::{
    Checkpoints, HeldClaim, ResumeRequest, RunRequest, RunnerBuilder, ThreadHandle, TurnRequest,
};
pub use runner::{Fork, ForkEnd, ThreadStep, ThreadStepKind, TimeTravelError, FORK_POINT};
pub use runner::{PurgeReport, Retention};
pub use runner::{ThreadState, FRAMEWORK_KEY_PREFIX};
pub use schemars;
pub use session::{Session, SessionEvent};
pub use spec::{
    Accepts, AgentContext, AgentResult, AgentSpec, Exit, Finish, FlowBuilt, FlowNode, IntoOutcome,
    NoPayload, NoTarget, Returns, TransferTarget, UnknownAgent,
};
pub use stream::{MessageStream, MessageStreamSender, StreamError, StreamRecord};
pub use tool::{
    tool_fn, tool_fn_with_context, FnTool, Tool, ToolContext, ToolError, ToolInterrupt,
};
pub use transfer::{transfer_messages, TRANSFER_TOOL_NAME};
pub use workflow::{DeterministicTransfer, Loop, Parallel, Sequential, WorkflowError};
