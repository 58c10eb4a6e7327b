//! Chat messages: what agents say, what tools return, what users ask.

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::usage::Usage;

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
/// use agentweave_runtime::{Message, Role};
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
    /// Content beyond the text: images, more text. What a model is sent is
    /// [`content`](Message::content) (when not empty) followed by these parts, in order. Empty
    /// for text-only messages (and then absent from the serialised form).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parts: Vec<ContentPart>,
    /// For a model's reply: the tokens the call used, when the model reported them. In a
    /// streamed reply it comes with the last chunk. Boxed, so that messages that have none
    /// (every chunk of a stream but the last) stay one pointer larger, not five.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Box<Usage>>,
    /// For a model's reply: the model that answered, when the agent's model chose among several
    /// (a [`FailoverModel`](crate::model::FailoverModel)); kept with the reply in the event and
    /// the journal, and the model the run's usage counts the reply under.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<std::sync::Arc<str>>,
}

/// A part of a message's content besides its [`content`](Message::content) text (see
/// [`Message::parts`]).
///
/// ```
/// use agentweave_runtime::{ContentPart, Message};
/// let m = Message::user("What is on this receipt?")
///     .with_image_url("https://example.com/receipt.png")
///     .with_image_base64("image/png", "iVBORw0KGgo=");
/// assert_eq!(m.parts.len(), 2);
/// assert_eq!(m.parts[1].describe(), "an image (image/png, 8 bytes)");
/// assert_eq!(m.parts[0], ContentPart::image_url("https://example.com/receipt.png"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ContentPart {
    /// More text.
    Text {
        /// The text.
        text: String,
    },
    /// An image.
    Image {
        /// Where its bytes are.
        source: ImageSource,
    },
}

/// Where an image's bytes are.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ImageSource {
    /// At a URL the model's provider fetches (`https:`, or a `data:` URL).
    Url {
        /// The URL.
        url: String,
    },
    /// Inline, base64-encoded.
    Base64 {
        /// The media type: `image/png`, `image/jpeg`, `image/gif`, `image/webp`.
        media_type: String,
        /// The bytes, base64-encoded (standard alphabet, padded).
        data: String,
    },
}

impl ContentPart {
    /// A text part.
    pub fn text(text: impl Into<String>) -> Self {
        ContentPart::Text { text: text.into() }
    }

    /// An image at a URL.
    pub fn image_url(url: impl Into<String>) -> Self {
        ContentPart::Image {
            source: ImageSource::Url { url: url.into() },
        }
    }

    /// An inline image: its media type and its bytes in base64.
    pub fn image_base64(media_type: impl Into<String>, data: impl Into<String>) -> Self {
        ContentPart::Image {
            source: ImageSource::Base64 {
                media_type: media_type.into(),
                data: data.into(),
            },
        }
    }

    /// The part in words, for a reader that cannot see it: the text itself, or
    /// `an image at URL` / `an image (MEDIA_TYPE, N bytes)`.
    pub fn describe(&self) -> String {
        match self {
            ContentPart::Text { text } => text.clone(),
            ContentPart::Image { source } => match source {
                ImageSource::Url { url } if url.starts_with("data:") => {
                    let media = url[5..].split([';', ',']).next().unwrap_or("");
                    let data = url.split_once(',').map_or("", |(_, d)| d);
                    format!("an image ({media}, {} bytes)", base64_decoded_len(data))
                }
                ImageSource::Url { url } => format!("an image at {url}"),
                ImageSource::Base64 { media_type, data } => {
                    format!(
                        "an image ({media_type}, {} bytes)",
                        base64_decoded_len(data)
                    )
                }
            },
        }
    }
}

/// How many bytes base64 `data` decodes to (padding and trailing whitespace ignored).
fn base64_decoded_len(data: &str) -> usize {
    let data = data.trim_end().trim_end_matches('=');
    data.len() * 3 / 4
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

    /// The same message with one more content part (see [`Message::parts`]).
    pub fn with_part(mut self, part: ContentPart) -> Self {
        self.parts.push(part);
        self
    }

    /// The same message with an image at `url` appended to its content.
    pub fn with_image_url(self, url: impl Into<String>) -> Self {
        self.with_part(ContentPart::image_url(url))
    }

    /// The same message with an inline image appended: its media type (`image/png`) and its
    /// bytes in base64.
    pub fn with_image_base64(self, media_type: impl Into<String>, data: impl Into<String>) -> Self {
        self.with_part(ContentPart::image_base64(media_type, data))
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
    /// Contents are appended in order, and so are content parts; the role, tool call id and
    /// tool name come from the first chunk that has them; the usage from the last chunk that
    /// has it; tool-call chunks that carry the same `index` are merged (id and name
    /// from the first that has them, arguments appended), calls without an index are kept as
    /// they are.
    ///
    /// ```
    /// use agentweave_runtime::Message;
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
        if !self.role_set
            && (chunk.role != Role::User || !chunk.content.is_empty() || !chunk.parts.is_empty())
        {
            out.role = chunk.role;
            self.role_set = true;
        }
        out.content.push_str(&chunk.content);
        if !chunk.parts.is_empty() {
            out.parts.extend(chunk.parts.iter().cloned());
        }
        if out.tool_call_id.is_none() && chunk.tool_call_id.is_some() {
            out.tool_call_id.clone_from(&chunk.tool_call_id);
        }
        if out.tool_name.is_none() && chunk.tool_name.is_some() {
            out.tool_name.clone_from(&chunk.tool_name);
        }
        if out.model.is_none() && chunk.model.is_some() {
            out.model.clone_from(&chunk.model);
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
    fn concat_keeps_parts_in_order() {
        let a = Message::assistant("Here ").with_image_url("https://x/a.png");
        let b = Message::assistant("they are.").with_part(ContentPart::text("(two)"));
        let c = Message::assistant("").with_image_base64("image/gif", "R0lGOD==");
        let m = Message::concat([&a, &b, &c]);
        assert_eq!(m.content, "Here they are.");
        assert_eq!(
            m.parts,
            [
                ContentPart::image_url("https://x/a.png"),
                ContentPart::text("(two)"),
                ContentPart::image_base64("image/gif", "R0lGOD=="),
            ]
        );
    }

    #[test]
    fn parts_serialise_only_when_present() {
        let plain = serde_json::to_string(&Message::user("hi")).unwrap();
        assert_eq!(plain, r#"{"role":"user","content":"hi"}"#);
        let m = Message::user("look")
            .with_image_url("https://x/a.png")
            .with_image_base64("image/png", "AAAA");
        let text = serde_json::to_string(&m).unwrap();
        assert_eq!(
            text,
            r#"{"role":"user","content":"look","parts":[{"type":"image","source":{"kind":"url","url":"https://x/a.png"}},{"type":"image","source":{"kind":"base64","media_type":"image/png","data":"AAAA"}}]}"#
        );
        assert_eq!(serde_json::from_str::<Message>(&text).unwrap(), m);
        // A message written before parts existed still reads.
        let old: Message = serde_json::from_str(r#"{"role":"user","content":"hi"}"#).unwrap();
        assert!(old.parts.is_empty());
    }

    #[test]
    fn parts_describe_themselves() {
        assert_eq!(
            ContentPart::image_url("https://x/a.png").describe(),
            "an image at https://x/a.png"
        );
        assert_eq!(
            ContentPart::image_url("data:image/jpeg;base64,AAAAAA==").describe(),
            "an image (image/jpeg, 4 bytes)"
        );
        assert_eq!(ContentPart::text("more").describe(), "more");
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
