//! The LLM layer, the top band of the runtime: [`ChatModelAgent`] (the ReAct agent) and its
//! tools. Nothing below imports it; it builds on the agent model, the tree's run and the model
//! contract ([`crate::model`]).
//!
//! One concept a file: the agent and its builder (`agent`), the ReAct loop (`react`), where it
//! stops for a cancel and goes on from there (`cancel_point`), the run's budgets at its safe
//! points (`budget_check`), the budgets shared beyond the run around each model call
//! (`spending_check`: per thread and tenant, and the call's cost on its span), running
//! the tool calls of a reply (`tool_calls`), a tool call wrapped in its middleware and span
//! (`hooked_tool`), keeping requests within a context budget (`context_fit`: compaction, tool
//! results set aside and the built-in `read_tool_result` tool), the built-in `transfer_to_agent` and `exit` tools (`builtin`), the system
//! prompt ([`instruction`]: templates over session values, transfer instructions), the
//! [`tool`] trait and function tools, a whole agent tree as a tool ([`AgentTool`], `agent_tool`),
//! [`structured`] output, the chat and tool [`telemetry`] spans, declarative approvals for
//! tools ([`NeedsApproval`], [`ToolApprovals`], `approval`). Tools that need a process, a
//! network or a store (MCP servers, the long-term memory tools) live in the in-process
//! runtime, `agentweave-runtime`.
//!
//! `agent` and `tool_calls` are one knot (the agent's builder holds the tool-call limits and
//! tool set; running the calls needs the agent): they stay side by side here.

mod agent;
mod agent_tool;
mod approval;
mod budget_check;
mod builtin;
mod cancel_point;
mod context_fit;
mod frontend_call;
mod hooked_tool;
pub mod instruction;
mod react;
mod spending_check;
pub mod structured;
pub mod telemetry;
pub mod tool;
mod tool_calls;

pub use agent::{
    ChatAgentError, ChatModelAgent, ChatModelAgentBuilder, IllegalTransfer, DEFAULT_MAX_ITERATIONS,
    FINISH_TASK_TOOL_NAME,
};
pub use agent_tool::AgentTool;
pub use approval::{
    ApprovalPredicate, ApprovalQuestion, ApprovalRedaction, NeedsApproval, ToolApprovals,
};
pub use builtin::{exit_tool_definition, transfer_tool_definition, EXIT_TOOL_NAME};
pub use context_fit::READ_TOOL_RESULT_TOOL_NAME;
pub use frontend_call::FRONTEND_TOOL_KEY;
pub use instruction::{
    default_transfer_instructions, InstructionError, InstructionFn, TransferInstructionsFn,
};
pub use tool_calls::ToolCallLimits;
