//! Tools a [`ChatModelAgent`](crate::ChatModelAgent) can call: the [`Tool`] trait, typed
//! function tools ([`tool_fn`], [`FnTool`]), [`ToolError`] and [`ToolInterrupt`]; which calls
//! need an approval ([`ToolApprovals`]); limits on a turn's tool calls ([`ToolCallLimits`]).
//! Tools from MCP servers are in the `mcp` module (cargo feature `mcp`).

pub use agentweave_runtime::tool::*;
pub use agentweave_runtime::{
    ApprovalPredicate, ApprovalQuestion, ApprovalRedaction, NeedsApproval, ToolApprovals,
    ToolCallLimits, FRONTEND_TOOL_KEY,
};
