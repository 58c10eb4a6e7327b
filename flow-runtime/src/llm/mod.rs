//! The LLM layer: [`ChatModelAgent`] (the ReAct agent), its tools, and the chat models.
//!
//! One concept a file: the agent and its builder (`agent`), the ReAct loop (`react`), running
//! the tool calls of a reply (`tool_calls`), the built-in `transfer_to_agent` and `exit` tools
//! (`builtin`), the system prompt ([`instruction`]: templates over session values, transfer
//! instructions), per-agent [`options`] of a run, the [`tool`] trait and function tools, the
//! [`models`], [`middleware`] around agent runs, model calls and tool calls, token [`usage`],
//! [`structured`] output, and the [`telemetry`] spans.

mod agent;
mod builtin;
mod hooked_tool;
pub mod instruction;
#[cfg(feature = "mcp")]
pub mod mcp;
pub mod middleware;
pub mod models;
pub mod options;
mod react;
pub mod structured;
pub mod telemetry;
pub mod tool;
mod tool_calls;
pub mod usage;

pub use agent::{
    ChatAgentError, ChatModelAgent, ChatModelAgentBuilder, IllegalTransfer, DEFAULT_MAX_ITERATIONS,
    EXIT_TOOL_NAME,
};
pub use builtin::{exit_tool_definition, transfer_tool_definition};
pub use instruction::{
    default_transfer_instructions, InstructionError, InstructionFn, TransferInstructionsFn,
};
pub use middleware::{HookContext, HookError, Middleware, MiddlewareError};
pub use options::{AgentRunOptions, HistoryModifier, RunOptions};
pub use tool_calls::ToolCallLimits;
