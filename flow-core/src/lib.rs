//! The agentflow engine: messages, event streams, agent trees, workflows, the ReAct agent and
//! the orchestration that runs them, with no async runtime, network, database or process in its
//! dependencies.
//!
//! `agentweave-core` is the part of agentflow that decides what happens in a run: the flow's
//! transfers and history rewriting, the ReAct loop, workflows, delegation, approvals and
//! limits. What it needs from the world (a timer, the clock, fresh ids, the thread's earlier
//! turns, the model and the tools) reaches it through contracts it is given ([`host::Host`],
//! [`history::EarlierTurns`], [`ChatModel`], [`Tool`]), so the same orchestration runs in
//! one process (`agentweave-runtime`, on tokio, with the stores and the model clients), under a
//! deterministic test host that steps a run by hand, or on another host. Its dependencies are
//! checked: `cargo tree -p agentweave-core -e normal` names no tokio, HTTP or database crate.
//!
//! Most programs use it through `agentweave-runtime` or the `agentweave` facade, which re-export
//! everything here.
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
//! - An [`AgentEvent`] serialises to its documented JSON form, [`EventJson`] (see [`event_json`]).
//! - Each agent run is a `tracing` span named `invoke_agent` (`gen_ai.agent.name`,
//!   `agentflow.run_path`, and a thread's id as `gen_ai.conversation.id`).
//!
//! ```
//! use agentweave_core::{set_sub_agents, Agent, AgentInput, FlowAgent, FnAgent, Message, RunContext, Session};
//! use futures::StreamExt;
//! use std::sync::Arc;
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
//! // With no runner: a session, a run context, and the tree's root run on the user's message.
//! let message = Arc::new(Message::user("My order arrived broken"));
//! let cx = RunContext::new_run(Session::new(), [Arc::clone(&message)], false, "triage");
//! let mut events = Arc::new(desk).run(cx, AgentInput::new([message]));
//! let mut said = Vec::new();
//! while let Some(event) = events.next().await {
//!     if let Some(m) = event.message_output() {
//!         said.push(format!("{}: {}", event.run_path(), m.content));
//!     }
//! }
//! assert_eq!(said[0], "triage: Looks like a refund");
//! assert_eq!(said.last().unwrap(), "triage/refund: For context: [triage] said: Looks like a refund.");
//! # });
//! ```
#![warn(missing_docs)]

// The bands (the guide's "Architecture" chapter): each module imports only the bands above it
// in this list.
//
// band 0, words: message, input, usage, stream, run_path, transfer, context_form, limits,
//   error, ids, trace, event/, resume, host, budget, spending
pub mod budget;
#[doc(hidden)]
pub mod context_form;
#[doc(hidden)]
pub mod error;
#[doc(hidden)]
pub mod event;
pub mod host;
#[doc(hidden)]
pub mod ids;
#[doc(hidden)]
pub mod input;
#[doc(hidden)]
pub mod limits;
#[doc(hidden)]
pub mod message;
#[doc(hidden)]
pub mod resume;
#[doc(hidden)]
pub mod run_path;
pub mod spending;
#[doc(hidden)]
pub mod stream;
#[doc(hidden)]
pub mod trace;
#[doc(hidden)]
pub mod transfer;
pub mod usage;
// band 1, contracts: the chat-model contract
pub mod model;
// band 2, core: history policies, the session, the agent model, running a tree, workflows
#[doc(hidden)]
pub mod agent;
#[doc(hidden)]
pub mod diagram;
#[doc(hidden)]
pub mod flow;
#[doc(hidden)]
pub mod fn_agent;
pub mod history;
#[doc(hidden)]
pub mod session;
pub mod spec;
pub mod workflow;
// band 4, the LLM layer: the ReAct agent, tools
#[doc(hidden)]
pub mod llm;

pub use agent::{cancel, middleware, options};
pub use event::json as event_json;
pub use llm::{instruction, structured, telemetry, tool};

pub use agent::{
    generate, set_sub_agents, Agent, AgentInfo, AgentInput, AgentRunOptions, CancelMode,
    CancelSignal, Context, Delegation, EventStream, FlowAgent, HistoryModifier, HookContext,
    Middleware, NodeOptions, OnSubAgents, Payload, ReplayedSteers, RunContext, RunOptions,
    SafePoint, SteerClosed, SteerQueue, TaskResult,
};

pub use async_trait::async_trait;
pub use llm::{
    default_transfer_instructions, exit_tool_definition, transfer_tool_definition, AgentTool,
    ChatAgentError, ChatModelAgent, ChatModelAgentBuilder, IllegalTransfer, InstructionError,
    InstructionFn, ToolCallLimits, TransferInstructionsFn, DEFAULT_MAX_ITERATIONS, EXIT_TOOL_NAME,
    FINISH_TASK_TOOL_NAME, READ_TOOL_RESULT_TOOL_NAME,
};
pub use llm::{
    ApprovalPredicate, ApprovalQuestion, ApprovalRedaction, NeedsApproval, ToolApprovals,
    FRONTEND_TOOL_KEY,
};

pub use budget::{BudgetExceeded, Budgets};
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
pub use workflow::{DeterministicTransfer, Loop, Map, Parallel, Sequential, WorkflowError};
