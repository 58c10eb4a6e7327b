//! The transfer vocabulary: the tool name a transfer is expressed with in the conversation
//! ([`TRANSFER_TOOL_NAME`]) and the pair of messages that records one ([`transfer_messages`]).

use crate::message::{Message, ToolCall};

/// Name of the tool a transfer is expressed with in the conversation.
pub const TRANSFER_TOOL_NAME: &str = "transfer_to_agent";

/// The pair of messages that records a transfer in the conversation: an assistant message
/// calling `transfer_to_agent` with `{"agent_name": target}`, and its tool result
/// `successfully transferred to agent [target]`. The second carries the transfer action when
/// emitted with [`Context::transfer`](crate::Context::transfer).
pub fn transfer_messages(target: &str) -> (Message, Message) {
    let call_id = format!("transfer-{target}");
    // `{"agent_name": target}` as JSON text, written directly (no `Value` map per transfer).
    let name = serde_json::to_string(target).expect("a string serializes");
    let mut arguments = String::with_capacity(name.len() + 15);
    arguments.push_str("{\"agent_name\":");
    arguments.push_str(&name);
    arguments.push('}');
    let call = Message::assistant_tool_calls(
        "",
        vec![ToolCall::new(
            call_id.clone(),
            TRANSFER_TOOL_NAME,
            arguments,
        )],
    );
    let result = Message::tool(
        format!("successfully transferred to agent [{target}]"),
        call_id,
        TRANSFER_TOOL_NAME,
    );
    (call, result)
}
