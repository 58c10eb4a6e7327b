//! [`AnthropicChatModel`]: a chat model over Anthropic's Messages API (`POST /v1/messages`).
//!
//! See [`AnthropicChatModel`] for how a conversation is written in that protocol.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{json, Value};

use super::http::HttpLimits;
use super::http_model::{self, env_var, ChunkDecoder, Chunks, HttpModel, WireFormat};
use super::{truncate, ChatModel, ChatRequest, ModelError, ModelStream};
use crate::message::{ContentPart, ImageSource, Message, Role, ToolCall};

/// Where and how to reach the Anthropic Messages API (or a server that speaks it, such as
/// LiteLLM's proxy).
///
/// ```
/// use agentweave_runtime::model::AnthropicConfig;
/// let config = AnthropicConfig::new("https://api.anthropic.com", "claude-sonnet-4-5")
///     .max_tokens(1024);
/// assert_eq!(config.endpoint(), "https://api.anthropic.com/v1/messages");
/// ```
#[derive(Clone)]
pub struct AnthropicConfig {
    /// The API's base URL, before `/v1/messages`.
    pub base_url: String,
    /// Sent as `x-api-key` when set.
    pub api_key: Option<String>,
    /// The model id.
    pub model: String,
    /// The most tokens a reply may have (the protocol requires it; default
    /// [`DEFAULT_MAX_TOKENS`](Self::DEFAULT_MAX_TOKENS)).
    pub max_tokens: u32,
    /// Sent as `anthropic-version` (default [`API_VERSION`](Self::API_VERSION)).
    pub version: String,
    /// Timeouts and size limits of every call, streamed or not (finite by default).
    pub limits: HttpLimits,
    /// Extra fields merged into every request body (`temperature`, `top_p`, …).
    pub extra_body: serde_json::Map<String, Value>,
}

impl AnthropicConfig {
    /// The base URL used when `ANTHROPIC_BASE_URL` is not set.
    pub const DEFAULT_BASE_URL: &'static str = "https://api.anthropic.com";
    /// The model used when `ANTHROPIC_MODEL` is not set.
    pub const DEFAULT_MODEL: &'static str = "claude-sonnet-4-5";
    /// The default reply size limit, in tokens.
    pub const DEFAULT_MAX_TOKENS: u32 = 4096;
    /// The protocol version sent by default.
    pub const API_VERSION: &'static str = "2023-06-01";

    /// A configuration for `model` at `base_url`, without an API key.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        AnthropicConfig {
            base_url: base_url.into(),
            api_key: None,
            model: model.into(),
            max_tokens: Self::DEFAULT_MAX_TOKENS,
            version: Self::API_VERSION.to_owned(),
            limits: HttpLimits::default(),
            extra_body: serde_json::Map::new(),
        }
    }

    /// A configuration from `ANTHROPIC_BASE_URL`, `ANTHROPIC_API_KEY` and `ANTHROPIC_MODEL`
    /// (empty values count as unset).
    pub fn from_env() -> Self {
        AnthropicConfig {
            api_key: env_var("ANTHROPIC_API_KEY"),
            ..Self::new(
                env_var("ANTHROPIC_BASE_URL").unwrap_or_else(|| Self::DEFAULT_BASE_URL.to_owned()),
                env_var("ANTHROPIC_MODEL").unwrap_or_else(|| Self::DEFAULT_MODEL.to_owned()),
            )
        }
    }

    /// Sets the API key.
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(key.into());
        self
    }

    /// Sets the most tokens a reply may have.
    pub fn max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = max_tokens;
        self
    }

    /// Sets the deadline of a whole call, streamed or not ([`HttpLimits::total_timeout`]).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.limits.total_timeout = timeout;
        self
    }

    /// Sets all timeouts and size limits.
    pub fn limits(mut self, limits: HttpLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Adds a field to every request body.
    pub fn extra(mut self, key: impl Into<String>, value: Value) -> Self {
        self.extra_body.insert(key.into(), value);
        self
    }

    /// The URL requests go to: the base URL with `/v1/messages` appended.
    pub fn endpoint(&self) -> String {
        format!("{}/v1/messages", self.base_url.trim_end_matches('/'))
    }
}

impl fmt::Debug for AnthropicConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AnthropicConfig")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("model", &self.model)
            .field("max_tokens", &self.max_tokens)
            .field("version", &self.version)
            .field("limits", &self.limits)
            .field("extra_body", &self.extra_body)
            .finish()
    }
}

/// Tokens counted by the server, summed over a model's calls.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AnthropicUsage {
    /// Calls whose usage was reported.
    pub calls: u64,
    /// Input (prompt) tokens.
    pub input_tokens: u64,
    /// Output (reply) tokens.
    pub output_tokens: u64,
}

#[derive(Default)]
struct UsageCounters {
    calls: AtomicU64,
    input_tokens: AtomicU64,
    output_tokens: AtomicU64,
}

impl UsageCounters {
    fn add(&self, input: u64, output: u64) {
        self.calls.fetch_add(1, Ordering::Relaxed);
        self.input_tokens.fetch_add(input, Ordering::Relaxed);
        self.output_tokens.fetch_add(output, Ordering::Relaxed);
    }
}

/// A [`ChatModel`] speaking Anthropic's Messages API over HTTP: text, tool use and tool
/// results, images, system prompts, streaming, usage.
///
/// How a conversation is written in the protocol:
///
/// - system messages become the request's `system` text (joined by blank lines);
/// - user messages become `user` turns of content blocks: the text, then each
///   [part](crate::Message::parts) (`text`, or `image` with a `base64` or `url` source);
/// - assistant messages become `assistant` turns: the text, then a `tool_use` block per tool
///   call (its arguments parsed as the `input` object; arguments that are not a JSON object
///   are sent as `{}`, the tool having already answered that they were invalid);
/// - tool results become `tool_result` blocks of a `user` turn (`is_error` when the result is
///   a tool error, i.e. starts with `error: `); results of one reply share one turn;
/// - consecutive messages of one role are merged into one turn, as the protocol wants.
///
/// Replies are read whole or streamed (the `message_start`, `content_block_start`,
/// `content_block_delta` with `text_delta` or `input_json_delta`, `content_block_stop`,
/// `message_delta`, `message_stop`, `ping` and `error` events). Token usage of every call is
/// added to [`AnthropicChatModel::usage`]. HTTP goes through the same bounded transport as the
/// OpenAI client ([`HttpCall`](super::HttpCall), [`HttpLimits`]): every timeout and size limit
/// holds. A 429 or a 529 (overloaded) answer is a retryable [`ModelError::Http`] carrying the
/// server's `retry-after`, which the agent's [`RetryPolicy`](super::RetryPolicy) honours.
///
/// Errors are typed as for the OpenAI client: [`ModelError::Http`] (with `retry-after`;
/// retryable for 408, 409, 429 and 5xx, so for 529 "overloaded"),
/// [`ModelError::Connection`], [`ModelError::StreamInterrupted`] (also for an `error` event in
/// the stream), [`ModelError::Malformed`], [`ModelError::Timeout`],
/// [`ModelError::LimitExceeded`].
///
/// ```no_run
/// use agentweave_runtime::model::{AnthropicChatModel, AnthropicConfig};
/// use agentweave_runtime::ChatModelAgent;
/// let model = AnthropicChatModel::new(AnthropicConfig::from_env()).unwrap();
/// let agent = ChatModelAgent::builder("assistant", model).build().unwrap();
/// # let _ = agent;
/// ```
#[derive(Clone)]
pub struct AnthropicChatModel {
    config: Arc<AnthropicConfig>,
    http: HttpModel,
    usage: Arc<UsageCounters>,
}

impl fmt::Debug for AnthropicChatModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AnthropicChatModel")
            .field("config", &self.config)
            .field("usage", &self.usage())
            .finish_non_exhaustive()
    }
}

impl AnthropicChatModel {
    /// A model with its own HTTP client (with the configured connect timeout).
    pub fn new(config: AnthropicConfig) -> Result<Self, ModelError> {
        let client = HttpModel::client(&config.limits, &config.model)?;
        Ok(Self::with_client(config, client))
    }

    /// A model using the given HTTP client. The client's own connect timeout applies; every
    /// other limit of the configuration holds.
    pub fn with_client(config: AnthropicConfig, client: reqwest::Client) -> Self {
        AnthropicChatModel {
            http: HttpModel::new(&config.model, config.endpoint(), &config.limits, client),
            config: Arc::new(config),
            usage: Arc::default(),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &AnthropicConfig {
        &self.config
    }

    /// The tokens the server reported, summed over every call of this model and its clones.
    pub fn usage(&self) -> AnthropicUsage {
        AnthropicUsage {
            calls: self.usage.calls.load(Ordering::Relaxed),
            input_tokens: self.usage.input_tokens.load(Ordering::Relaxed),
            output_tokens: self.usage.output_tokens.load(Ordering::Relaxed),
        }
    }

    /// The JSON body of a request.
    pub fn request_body(&self, request: &ChatRequest, stream: bool) -> Value {
        let mut system = Vec::new();
        let mut turns: Vec<(&'static str, Vec<Value>)> = Vec::new();
        for m in &request.messages {
            let (role, blocks) = match m.role {
                Role::System => {
                    system.push(m.content.as_str());
                    continue;
                }
                Role::User => ("user", user_blocks(m)),
                Role::Assistant => ("assistant", assistant_blocks(m)),
                Role::Tool => ("user", vec![tool_result_block(m)]),
            };
            if blocks.is_empty() {
                continue;
            }
            match turns.last_mut() {
                Some((last, existing)) if *last == role => existing.extend(blocks),
                _ => turns.push((role, blocks)),
            }
        }
        let messages: Vec<Value> = turns
            .into_iter()
            .map(|(role, content)| json!({"role": role, "content": content}))
            .collect();
        let mut body = serde_json::Map::new();
        body.insert("model".into(), json!(self.config.model));
        body.insert("max_tokens".into(), json!(self.config.max_tokens));
        if !system.is_empty() {
            body.insert("system".into(), json!(system.join("\n\n")));
        }
        body.insert("messages".into(), Value::Array(messages));
        if !request.tools.is_empty() {
            let tools: Vec<Value> = request
                .tools
                .iter()
                .map(|t| {
                    json!({
                        "name": t.name,
                        "description": t.description,
                        "input_schema": t.parameters,
                    })
                })
                .collect();
            body.insert("tools".into(), Value::Array(tools));
        }
        if stream {
            body.insert("stream".into(), json!(true));
        }
        for (k, v) in &self.config.extra_body {
            body.insert(k.clone(), v.clone());
        }
        Value::Object(body)
    }
}

/// The blocks of a user message: its text, then its parts.
fn user_blocks(m: &Message) -> Vec<Value> {
    let mut blocks = Vec::with_capacity(1 + m.parts.len());
    if !m.content.is_empty() {
        blocks.push(json!({"type": "text", "text": m.content}));
    }
    blocks.extend(m.parts.iter().map(|p| part_block(p, true)));
    blocks
}

/// A content part as a block; images only where the protocol takes them, else described.
fn part_block(part: &ContentPart, images: bool) -> Value {
    match part {
        ContentPart::Text { text } => json!({"type": "text", "text": text}),
        ContentPart::Image { source } if images => match source {
            ImageSource::Url { url } => {
                json!({"type": "image", "source": {"type": "url", "url": url}})
            }
            ImageSource::Base64 { media_type, data } => json!({
                "type": "image",
                "source": {"type": "base64", "media_type": media_type, "data": data},
            }),
            // A source this client does not know yet: described, like an image the protocol
            // does not take.
            _ => json!({"type": "text", "text": format!("[{}]", part.describe())}),
        },
        other => json!({"type": "text", "text": format!("[{}]", other.describe())}),
    }
}

/// The blocks of an assistant message: its text, its parts (described), its tool calls.
fn assistant_blocks(m: &Message) -> Vec<Value> {
    let mut blocks = Vec::with_capacity(1 + m.parts.len() + m.tool_calls.len());
    if !m.content.is_empty() {
        blocks.push(json!({"type": "text", "text": m.content}));
    }
    blocks.extend(m.parts.iter().map(|p| part_block(p, false)));
    for call in &m.tool_calls {
        let input = match serde_json::from_str::<Value>(&call.arguments) {
            Ok(object @ Value::Object(_)) => object,
            _ => json!({}),
        };
        blocks.push(json!({
            "type": "tool_use",
            "id": call.id,
            "name": call.name,
            "input": input,
        }));
    }
    blocks
}

/// A tool message as a `tool_result` block.
fn tool_result_block(m: &Message) -> Value {
    let mut content = Vec::with_capacity(1 + m.parts.len());
    if !m.content.is_empty() {
        content.push(json!({"type": "text", "text": m.content}));
    }
    content.extend(m.parts.iter().map(|p| part_block(p, true)));
    let mut block = json!({
        "type": "tool_result",
        "tool_use_id": m.tool_call_id.as_deref().unwrap_or(""),
        "content": content,
    });
    if m.content.starts_with("error: ") {
        block["is_error"] = json!(true);
    }
    block
}

#[derive(Deserialize)]
struct ErrorBody {
    error: ApiError,
}

#[derive(Deserialize)]
struct ApiError {
    #[serde(rename = "type", default)]
    kind: String,
    #[serde(default)]
    message: String,
}

#[derive(Deserialize)]
struct Reply {
    #[serde(default)]
    content: Vec<Block>,
    usage: Option<Usage>,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Block {
    Text {
        text: String,
    },
    ToolUse {
        id: String,
        name: String,
        #[serde(default)]
        input: Value,
    },
    #[serde(other)]
    Other,
}

#[derive(Deserialize, Default, Clone, Copy)]
struct Usage {
    /// Input tokens neither read from nor written to the prompt cache.
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
    #[serde(default)]
    cache_read_input_tokens: Option<u64>,
    #[serde(default)]
    cache_creation_input_tokens: Option<u64>,
}

impl Usage {
    /// The reply's usage as [`Message::usage`] reports it: every input token counted (the
    /// cached ones included, and given apart).
    fn report(self) -> super::Usage {
        let cached = self.cache_read_input_tokens;
        let input =
            self.input_tokens + cached.unwrap_or(0) + self.cache_creation_input_tokens.unwrap_or(0);
        let usage = super::Usage::new(input, self.output_tokens);
        match cached {
            Some(tokens) => usage.with_cached_input(tokens),
            None => usage,
        }
    }
}

/// One event of a streamed reply.
#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum StreamEvent {
    MessageStart {
        message: StartMessage,
    },
    ContentBlockStart {
        index: usize,
        content_block: Block,
    },
    ContentBlockDelta {
        index: usize,
        delta: Delta,
    },
    ContentBlockStop {},
    MessageDelta {
        #[serde(default)]
        usage: Option<Usage>,
    },
    MessageStop {},
    Ping {},
    Error {
        error: ApiError,
    },
    #[serde(other)]
    Unknown,
}

#[derive(Deserialize)]
struct StartMessage {
    #[serde(default)]
    usage: Option<Usage>,
}

#[derive(Deserialize)]
#[serde(tag = "type")]
enum Delta {
    #[serde(rename = "text_delta")]
    Text { text: String },
    #[serde(rename = "input_json_delta")]
    InputJson { partial_json: String },
    #[serde(other)]
    Other,
}

impl WireFormat for AnthropicChatModel {
    type Decoder = Events;

    fn http(&self) -> &HttpModel {
        &self.http
    }

    fn body(&self, request: &ChatRequest, stream: bool) -> Value {
        self.request_body(request, stream)
    }

    fn headers(&self, post: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        let post = post.header("anthropic-version", &self.config.version);
        match &self.config.api_key {
            Some(key) => post.header("x-api-key", key),
            None => post,
        }
    }

    fn error_message(body: &str) -> Option<String> {
        serde_json::from_str::<ErrorBody>(body)
            .ok()
            .map(|b| format!("{}: {}", b.error.kind, b.error.message))
    }

    fn retry_after(value: &str) -> Option<Duration> {
        value
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|s| s.is_finite() && *s >= 0.0)
            // A wait too long for a `Duration` (a hostile `1e30`) is the longest one: the
            // retry policy caps it at its `max_backoff`.
            .map(|s| Duration::try_from_secs_f64(s).unwrap_or(Duration::MAX))
    }

    fn parse_reply(&self, text: &str) -> Result<Message, ModelError> {
        let reply: Reply = self.http.parse_body(text)?;
        if let Some(usage) = &reply.usage {
            self.usage.add(usage.input_tokens, usage.output_tokens);
        }
        let usage = reply.usage.map(|u| Box::new(u.report()));
        let mut content = String::new();
        let mut calls = Vec::new();
        for block in reply.content {
            match block {
                Block::Text { text } => content.push_str(&text),
                Block::ToolUse { id, name, input } => {
                    calls.push(ToolCall::new(id, name, input.to_string()))
                }
                Block::Other => {}
            }
        }
        Ok(Message {
            usage,
            ..Message::assistant_tool_calls(content, calls)
        })
    }

    fn decoder(&self) -> Events {
        Events {
            counters: Arc::clone(&self.usage),
            usage: Usage::default(),
            usage_reported: false,
        }
    }
}

#[async_trait]
impl ChatModel for AnthropicChatModel {
    fn model_name(&self) -> &str {
        &self.config.model
    }

    fn provider_name(&self) -> &str {
        "anthropic"
    }

    async fn generate(&self, request: &ChatRequest) -> Result<Message, ModelError> {
        http_model::generate(self, request).await
    }

    async fn stream(&self, request: &ChatRequest) -> Result<ModelStream, ModelError> {
        http_model::stream(self, request).await
    }
}

/// The events of a streamed reply turned into chunks, with the reply's usage.
pub(crate) struct Events {
    /// The model's usage counters, which the reply's usage is added to.
    counters: Arc<UsageCounters>,
    usage: Usage,
    /// The server reported usage (in `message_start` or `message_delta`).
    usage_reported: bool,
}

impl ChunkDecoder for Events {
    const MISSING_END: &'static str = "no message_stop event";

    fn event(&mut self, data: &str, out: &mut Chunks) {
        if data.trim().is_empty() {
            return;
        }
        let event: StreamEvent = match out.http().parse_piece("event", data) {
            Ok(event) => event,
            Err(error) => return out.fail(error),
        };
        match event {
            StreamEvent::MessageStart { message } => {
                if let Some(usage) = message.usage {
                    self.usage = usage;
                    self.usage_reported = true;
                }
            }
            StreamEvent::ContentBlockStart {
                index,
                content_block,
            } => match content_block {
                Block::Text { text } if !text.is_empty() => {
                    out.push(Message::assistant(text));
                }
                Block::ToolUse { id, name, input } => {
                    // The input usually arrives in `input_json_delta`s; a start block that
                    // already holds a non-empty input carries it whole.
                    let arguments = match &input {
                        Value::Object(map) if !map.is_empty() => input.to_string(),
                        _ => String::new(),
                    };
                    let call = ToolCall {
                        index: Some(index),
                        id,
                        name,
                        arguments,
                    };
                    out.push(Message::assistant_tool_calls("", vec![call]));
                }
                _ => {}
            },
            StreamEvent::ContentBlockDelta { index, delta } => match delta {
                Delta::Text { text } if !text.is_empty() => {
                    out.push(Message::assistant(text));
                }
                Delta::InputJson { partial_json } if !partial_json.is_empty() => {
                    let call = ToolCall {
                        index: Some(index),
                        id: String::new(),
                        name: String::new(),
                        arguments: partial_json,
                    };
                    out.push(Message::assistant_tool_calls("", vec![call]));
                }
                _ => {}
            },
            StreamEvent::MessageDelta { usage } => {
                if let Some(usage) = usage {
                    // Counts in `message_delta` are cumulative for the reply.
                    self.usage.output_tokens = usage.output_tokens;
                    if usage.input_tokens > 0 {
                        self.usage.input_tokens = usage.input_tokens;
                    }
                    if usage.cache_read_input_tokens.is_some() {
                        self.usage.cache_read_input_tokens = usage.cache_read_input_tokens;
                    }
                    if usage.cache_creation_input_tokens.is_some() {
                        self.usage.cache_creation_input_tokens = usage.cache_creation_input_tokens;
                    }
                    self.usage_reported = true;
                }
            }
            StreamEvent::MessageStop {} => {
                out.finished();
                out.end();
                self.counters
                    .add(self.usage.input_tokens, self.usage.output_tokens);
                if self.usage_reported {
                    // The reply's usage, on a last chunk of its own (see `Message::usage`).
                    out.push(Message {
                        usage: Some(Box::new(self.usage.report())),
                        ..Message::assistant("")
                    });
                }
            }
            StreamEvent::Error { error } => {
                let error = out.http().reported_error(format_args!(
                    "{}: {}",
                    error.kind,
                    truncate(&error.message, 500)
                ));
                out.fail(error);
            }
            StreamEvent::ContentBlockStop {} | StreamEvent::Ping {} | StreamEvent::Unknown => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ToolDefinition;

    fn model() -> AnthropicChatModel {
        AnthropicChatModel::new(
            AnthropicConfig::new("http://127.0.0.1:1/", "claude-test")
                .max_tokens(256)
                .extra("temperature", json!(0)),
        )
        .unwrap()
    }

    #[test]
    fn request_body_follows_the_protocol() {
        let request = ChatRequest::new([
            Arc::new(Message::system("be brief")),
            Arc::new(
                Message::user("what is on the receipt?").with_image_base64("image/png", "AAAA"),
            ),
            Arc::new(Message::assistant_tool_calls(
                "Let me look.",
                vec![
                    ToolCall::new("t1", "lookup", r#"{"id":1}"#),
                    ToolCall::new("t2", "lookup", "not json"),
                ],
            )),
            Arc::new(Message::tool("found", "t1", "lookup")),
            Arc::new(Message::tool(
                "error: tool 'lookup' failed: no",
                "t2",
                "lookup",
            )),
            Arc::new(Message::user("thanks")),
        ])
        .with_tools([ToolDefinition {
            name: "lookup".into(),
            description: "Looks up.".into(),
            parameters: json!({"type": "object"}),
        }]);
        assert_eq!(
            model().request_body(&request, true),
            json!({
                "model": "claude-test",
                "max_tokens": 256,
                "system": "be brief",
                "messages": [
                    {"role": "user", "content": [
                        {"type": "text", "text": "what is on the receipt?"},
                        {"type": "image", "source":
                            {"type": "base64", "media_type": "image/png", "data": "AAAA"}}
                    ]},
                    {"role": "assistant", "content": [
                        {"type": "text", "text": "Let me look."},
                        {"type": "tool_use", "id": "t1", "name": "lookup", "input": {"id": 1}},
                        {"type": "tool_use", "id": "t2", "name": "lookup", "input": {}}
                    ]},
                    {"role": "user", "content": [
                        {"type": "tool_result", "tool_use_id": "t1",
                         "content": [{"type": "text", "text": "found"}]},
                        {"type": "tool_result", "tool_use_id": "t2", "is_error": true,
                         "content": [{"type": "text", "text": "error: tool 'lookup' failed: no"}]},
                        {"type": "text", "text": "thanks"}
                    ]}
                ],
                "tools": [{"name": "lookup", "description": "Looks up.",
                           "input_schema": {"type": "object"}}],
                "stream": true,
                "temperature": 0
            })
        );
    }

    #[test]
    fn images_outside_user_turns_are_described() {
        let m = Message::assistant("").with_image_url("https://x/a.png");
        assert_eq!(
            assistant_blocks(&m),
            [json!({"type": "text", "text": "[an image at https://x/a.png]"})]
        );
    }

    #[test]
    fn config_debug_hides_the_key() {
        let config = AnthropicConfig::new("http://x", "m").api_key("sk-ant-secret");
        assert!(!format!("{config:?}").contains("secret"));
    }
}
