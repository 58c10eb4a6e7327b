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
    let call = Message::assistant_tool_calls(
        "",
        vec![ToolCall::new(
            call_id.clone(),
            TRANSFER_TOOL_NAME,
            transfer_arguments(target),
        )],
    );
    let result = Message::tool(transfer_result_text(target), call_id, TRANSFER_TOOL_NAME);
    (call, result)
}

/// `{"agent_name": target}` as JSON text: the arguments of a transfer to `target` as the tree
/// writes them, and as models most often do (a `ChatModelAgent` takes a call with exactly these
/// without parsing them). Written directly: no `Value` map.
pub(crate) fn transfer_arguments(target: &str) -> String {
    let name = serde_json::to_string(target).expect("a string serializes");
    let mut arguments = String::with_capacity(name.len() + 15);
    arguments.push_str("{\"agent_name\":");
    arguments.push_str(&name);
    arguments.push('}');
    arguments
}

/// The result text of a transfer to `target`: `successfully transferred to agent [target]`,
/// written without `fmt` (every model-made transfer writes one).
pub(crate) fn transfer_result_text(target: &str) -> String {
    const SAID: &str = "successfully transferred to agent [";
    let mut text = String::with_capacity(SAID.len() + target.len() + 1);
    text.push_str(SAID);
    text.push_str(target);
    text.push(']');
    text
}
