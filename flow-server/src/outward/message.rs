//! A message as a client sees it.

use agentweave_runtime::{ContentPart, Message, Role, RunPath, ToolCall, Usage};
use serde::Serialize;

/// A message, field by field: role, content, tool calls, the tool call it answers and the
/// tool's name, its parts and its token usage.
#[derive(Debug, Clone, Serialize)]
pub struct OutwardMessage<'a> {
    /// Who wrote it.
    pub role: Role,
    /// Its text.
    pub content: &'a str,
    /// The tool calls it makes.
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub tool_calls: &'a [ToolCall],
    /// The tool call a tool message answers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<&'a str>,
    /// The tool a tool message comes from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_name: Option<&'a str>,
    /// Parts beside the text (images, ...).
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub parts: &'a [ContentPart],
    /// The tokens the model call that wrote it used.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<&'a Usage>,
}

impl<'a> OutwardMessage<'a> {
    /// The outward form of `message`.
    pub fn of(message: &'a Message) -> Self {
        OutwardMessage {
            role: message.role,
            content: &message.content,
            tool_calls: &message.tool_calls,
            tool_call_id: message.tool_call_id.as_deref(),
            tool_name: message.tool_name.as_deref(),
            parts: &message.parts,
            usage: message.usage.as_deref(),
        }
    }
}

/// A piece of a streamed message: the `data` of an SSE `chunk` event.
#[derive(Debug, Serialize)]
pub struct OutwardChunk<'a> {
    /// The agent streaming.
    pub agent_name: &'a str,
    /// Its run path.
    pub run_path: &'a RunPath,
    /// The chunk's text.
    pub content: &'a str,
    /// Pieces of tool calls in this chunk.
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub tool_calls: &'a [ToolCall],
}
