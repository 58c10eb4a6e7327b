//! The ReAct agent around a chat model, [`ChatModelAgent`](crate::ChatModelAgent): its
//! builder, its instruction (templates, functions of the run, the transfer instructions), the
//! built-in transfer, exit and task tools, and its errors.

pub use agentweave_runtime::instruction::*;
pub use agentweave_runtime::{
    exit_tool_definition, transfer_messages, transfer_tool_definition, ChatAgentError,
    ChatModelAgentBuilder, IllegalTransfer, DEFAULT_MAX_ITERATIONS, EXIT_TOOL_NAME,
    FINISH_TASK_TOOL_NAME, READ_TOOL_RESULT_TOOL_NAME, TRANSFER_TOOL_NAME,
};
