//! Chat messages: what agents say, what tools return, what users ask.

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::llm::usage::Usage;

/// Who a [`Message`] is from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Instructions to a model.
    System,
    /// The human (or a rewritten message from another agent, see [`crate::history`]).
    #[default]
    User,
    /// A model or a code-defined agent.
    Assistant,
    /// The result of a tool call.
    Tool,
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        })
    }
}

/// One tool call requested by an assistant message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct ToolCall {
    /// Position of this call in a streamed reply; chunks with the same index are merged by
    /// [`Message::concat`]. `None` for calls that are already whole.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index: Option<usize>,
    /// Identifier the matching tool result refers to.
    pub id: String,
    /// Name of the tool to call.
    pub name: String,
    /// Arguments as JSON text, exactly as the model produced them (it may not be valid JSON).
    pub arguments: String,
}

impl ToolCall {
    /// A whole (non-streamed) tool call.
    pub fn new(
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: impl Into<String>,
    ) -> Self {
        ToolCall {
            index: None,
            id: id.into(),
            name: name.into(),
            arguments: arguments.into(),
        }
    }
}

/// A chat message.
///
/// Messages are shared, not copied: the runtime passes them around as `Arc<Message>`
/// (see [`MessageRef`]), so a transfer between agents never deep-copies history.
///
/// ```
/// use flow_runtime::{Message, Role};
/// let m = Message::assistant("Refund approved");
/// assert_eq!(m.role, Role::Assistant);
/// assert_eq!(m.content, "Refund approved");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Message {
    /// Who the message is from.
    pub role: Role,
    /// Text content.
    #[serde(default)]
    pub content: String,
    /// Tool calls of an assistant message.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// For a tool message: the id of the call it answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// For a tool message: the name of the tool that produced it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_name: Option<String>,
    /// For a model's reply: the tokens the call used, when the model reported them. In a
    /// streamed reply it comes with the last chunk. Boxed, so that messages that have none
    /// (every chunk of a stream but the last) stay one pointer larger, not five.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Box<Usage>>,
}

/// A shared message, as the runtime stores and passes it.
pub type MessageRef = Arc<Message>;

impl Message {
    /// A system message.
    pub fn system(content: impl Into<String>) -> Self {
        Self::with_role(Role::System, content)
    }

    /// A user message.
    pub fn user(content: impl Into<String>) -> Self {
        Self::with_role(Role::User, content)
    }

    /// An assistant message with text content.
    pub fn assistant(content: impl Into<String>) -> Self {
        Self::with_role(Role::Assistant, content)
    }

    /// An assistant message that calls tools.
    pub fn assistant_tool_calls(content: impl Into<String>, tool_calls: Vec<ToolCall>) -> Self {
        Message {
            tool_calls,
            ..Self::with_role(Role::Assistant, content)
        }
    }

    /// A tool result answering the call `tool_call_id` of tool `tool_name`.
    pub fn tool(
        content: impl Into<String>,
        tool_call_id: impl Into<String>,
        tool_name: impl Into<String>,
    ) -> Self {
        Message {
            tool_call_id: Some(tool_call_id.into()),
            tool_name: Some(tool_name.into()),
            ..Self::with_role(Role::Tool, content)
        }
    }

    fn with_role(role: Role, content: impl Into<String>) -> Self {
        Message {
            role,
            content: content.into(),
            ..Message::default()
        }
    }

    /// Concatenates streamed chunks into one message.
    ///
    /// Contents are appended in order; the role, tool call id and tool name come from the first
    /// chunk that has them; the usage from the last chunk that has it; tool-call chunks that carry the same `index` are merged (id and name
    /// from the first that has them, arguments appended), calls without an index are kept as
    /// they are.
    ///
    /// ```
    /// use flow_runtime::Message;
    /// let whole = Message::concat([Message::assistant("Hel"), Message::assistant("lo")].iter());
    /// assert_eq!(whole.content, "Hello");
    /// ```
    pub fn concat<'a>(chunks: impl IntoIterator<Item = &'a Message>) -> Message {
        let mut whole = Concat::default();
        for chunk in chunks {
            whole.push(chunk);
        }
        whole.finish()
    }
}

/// [`Message::concat`] one chunk at a time: what a [`MessageStream`](crate::MessageStream)
/// records as its chunks pass.
#[derive(Debug, Default)]
pub(crate) struct Concat {
    out: Message,
    role_set: bool,
}

impl Concat {
    /// Appends the next chunk.
    #[inline]
    pub(crate) fn push(&mut self, chunk: &Message) {
        let out = &mut self.out;
        if !self.role_set && (chunk.role != Role::User || !chunk.content.is_empty()) {
            out.role = chunk.role;
            self.role_set = true;
        }
        out.content.push_str(&chunk.content);
        if out.tool_call_id.is_none() && chunk.tool_call_id.is_some() {
            out.tool_call_id.clone_from(&chunk.tool_call_id);
        }
        if out.tool_name.is_none() && chunk.tool_name.is_some() {
            out.tool_name.clone_from(&chunk.tool_name);
        }
        if chunk.usage.is_some() {
            // Servers report usage once, with the last chunk, or (vLLM's continuous usage
            // stats) as running totals in every chunk: the last report is the call's.
            out.usage.clone_from(&chunk.usage);
        }
        for call in &chunk.tool_calls {
            let merged = call.index.and_then(|i| {
                out.tool_calls
                    .iter_mut()
                    .find(|existing| existing.index == Some(i))
            });
            match merged {
                Some(existing) => {
                    if existing.id.is_empty() {
                        existing.id.clone_from(&call.id);
                    }
                    if existing.name.is_empty() {
                        existing.name.clone_from(&call.name);
                    }
                    existing.arguments.push_str(&call.arguments);
                }
                None => out.tool_calls.push(call.clone()),
            }
        }
    }

    /// The whole message so far.
    pub(crate) fn finish(self) -> Message {
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn concat_merges_indexed_tool_call_chunks() {
        let a = Message {
            role: Role::Assistant,
            tool_calls: vec![ToolCall {
                index: Some(0),
                id: "c1".into(),
                name: "lookup".into(),
                arguments: "{\"id\":".into(),
            }],
            ..Message::default()
        };
        let b = Message {
            role: Role::Assistant,
            tool_calls: vec![ToolCall {
                index: Some(0),
                id: String::new(),
                name: String::new(),
                arguments: "7}".into(),
            }],
            ..Message::default()
        };
        let m = Message::concat([&a, &b]);
        assert_eq!(m.tool_calls.len(), 1);
        assert_eq!(m.tool_calls[0].id, "c1");
        assert_eq!(m.tool_calls[0].name, "lookup");
        assert_eq!(m.tool_calls[0].arguments, "{\"id\":7}");
        assert_eq!(m.role, Role::Assistant);
    }

    #[test]
    fn message_round_trips_through_json() {
        let m = Message::tool("42", "call-1", "lookup");
        let text = serde_json::to_string(&m).unwrap();
        assert_eq!(
            text,
            r#"{"role":"tool","content":"42","tool_call_id":"call-1","tool_name":"lookup"}"#
        );
        let back: Message = serde_json::from_str(&text).unwrap();
        assert_eq!(back, m);
    }
}
