//! [`OpenAiChatModel`]: a chat model over any OpenAI-compatible `/v1/chat/completions` server.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{json, Value};

use super::http::HttpLimits;
use super::http_model::{self, env_var, ChunkDecoder, Chunks, HttpModel, WireFormat};
use super::{truncate, ChatModel, ChatRequest, ModelError, ModelStream, Usage};
use crate::message::{ContentPart, ImageSource, Message, Role, ToolCall};

/// Where and how to reach an OpenAI-compatible server.
///
/// `base_url` ends before `/chat/completions`: `https://api.openai.com/v1` for OpenAI,
/// `http://localhost:11434/v1` for Ollama, `http://localhost:8000/v1` for vLLM,
/// `http://localhost:8080/v1` for llama.cpp's server.
///
/// ```
/// use agentweave_runtime::model::OpenAiConfig;
/// let config = OpenAiConfig::new("http://localhost:11434/v1", "llama3.2");
/// assert_eq!(config.endpoint(), "http://localhost:11434/v1/chat/completions");
/// ```
#[derive(Clone)]
pub struct OpenAiConfig {
    /// The API's base URL, up to and including the version (`…/v1`).
    pub base_url: String,
    /// Sent as `Authorization: Bearer …` when set (local servers usually need none).
    pub api_key: Option<String>,
    /// The model id (`gpt-4o-mini`, `llama3.2`, …).
    pub model: String,
    /// Timeouts and size limits of every call, streamed or not (finite by default).
    pub limits: HttpLimits,
    /// Extra fields merged into every request body (`temperature`, `max_tokens`, …).
    pub extra_body: serde_json::Map<String, Value>,
}

impl OpenAiConfig {
    /// The base URL used when `OPENAI_BASE_URL` is not set.
    pub const DEFAULT_BASE_URL: &'static str = "https://api.openai.com/v1";
    /// The model used when `OPENAI_MODEL` is not set.
    pub const DEFAULT_MODEL: &'static str = "gpt-4o-mini";

    /// A configuration for `model` at `base_url`, without an API key.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        OpenAiConfig {
            base_url: base_url.into(),
            api_key: None,
            model: model.into(),
            limits: HttpLimits::default(),
            extra_body: serde_json::Map::new(),
        }
    }

    /// A configuration from the usual environment variables: `OPENAI_BASE_URL` (default
    /// [`DEFAULT_BASE_URL`](Self::DEFAULT_BASE_URL)), `OPENAI_API_KEY` (optional) and
    /// `OPENAI_MODEL` (default [`DEFAULT_MODEL`](Self::DEFAULT_MODEL)). Empty values count as
    /// unset.
    pub fn from_env() -> Self {
        OpenAiConfig {
            api_key: env_var("OPENAI_API_KEY"),
            ..Self::new(
                env_var("OPENAI_BASE_URL").unwrap_or_else(|| Self::DEFAULT_BASE_URL.to_owned()),
                env_var("OPENAI_MODEL").unwrap_or_else(|| Self::DEFAULT_MODEL.to_owned()),
            )
        }
    }

    /// Sets the API key.
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(key.into());
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

    /// The URL requests go to: the base URL with `/chat/completions` appended.
    pub fn endpoint(&self) -> String {
        format!("{}/chat/completions", self.base_url.trim_end_matches('/'))
    }
}

impl fmt::Debug for OpenAiConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiConfig")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("model", &self.model)
            .field("limits", &self.limits)
            .field("extra_body", &self.extra_body)
            .finish()
    }
}

/// A [`ChatModel`] speaking the OpenAI chat-completions protocol over HTTP (reqwest with
/// rustls): tool calling, and streaming over server-sent events. Works with OpenAI, Ollama,
/// vLLM, llama.cpp and other compatible servers.
///
/// Errors are typed: an HTTP error status is [`ModelError::Http`] (with `Retry-After`), a
/// connection failure [`ModelError::Connection`], a stream that breaks off
/// [`ModelError::StreamInterrupted`], a body that is not a chat completion
/// [`ModelError::Malformed`], a wait past its limit [`ModelError::Timeout`], a reply past a
/// size limit [`ModelError::LimitExceeded`] (see [`OpenAiConfig::limits`]).
///
/// ```no_run
/// use agentweave_runtime::model::{OpenAiChatModel, OpenAiConfig};
/// use agentweave_runtime::ChatModelAgent;
/// let model = OpenAiChatModel::new(OpenAiConfig::from_env()).unwrap();
/// let agent = ChatModelAgent::builder("assistant", model).build().unwrap();
/// # let _ = agent;
/// ```
#[derive(Clone)]
pub struct OpenAiChatModel {
    config: Arc<OpenAiConfig>,
    http: HttpModel,
}

impl fmt::Debug for OpenAiChatModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiChatModel")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl OpenAiChatModel {
    /// A model with its own HTTP client (with the configured connect timeout). Fails only if
    /// the client cannot be set up.
    pub fn new(config: OpenAiConfig) -> Result<Self, ModelError> {
        let client = HttpModel::client(&config.limits, &config.model)?;
        Ok(Self::with_client(config, client))
    }

    /// A model using the given HTTP client (to share connection pools or set proxies). The
    /// client's own connect timeout applies; every other limit of the configuration holds.
    pub fn with_client(config: OpenAiConfig, client: reqwest::Client) -> Self {
        OpenAiChatModel {
            http: HttpModel::new(&config.model, config.endpoint(), &config.limits, client),
            config: Arc::new(config),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &OpenAiConfig {
        &self.config
    }

    /// The JSON body of a request.
    pub fn request_body(&self, request: &ChatRequest, stream: bool) -> Value {
        let messages: Vec<Value> = request.messages.iter().map(|m| wire_message(m)).collect();
        let mut body = serde_json::Map::new();
        body.insert("model".into(), json!(self.config.model));
        body.insert("messages".into(), Value::Array(messages));
        if !request.tools.is_empty() {
            let tools: Vec<Value> = request
                .tools
                .iter()
                .map(|t| {
                    json!({
                        "type": "function",
                        "function": {
                            "name": t.name,
                            "description": t.description,
                            "parameters": t.parameters,
                        }
                    })
                })
                .collect();
            body.insert("tools".into(), Value::Array(tools));
        }
        if let Some(schema) = &request.output_schema {
            body.insert("response_format".into(), schema.openai_response_format());
        }
        body.insert("stream".into(), json!(stream));
        if stream {
            // Ask for the usage chunk at the end of the stream (servers that do not know the
            // option ignore it; set `stream_options` in `extra_body` to override).
            body.insert("stream_options".into(), json!({ "include_usage": true }));
        }
        for (k, v) in &self.config.extra_body {
            body.insert(k.clone(), v.clone());
        }
        // The request's own parameters win over the configured ones.
        if let Value::Object(params) = json!(request.params) {
            body.extend(params);
        }
        Value::Object(body)
    }

    fn parse_completion(&self, text: &str) -> Result<Message, ModelError> {
        let body: Completion = self.http.parse_body(text)?;
        let choice = body
            .choices
            .into_iter()
            .next()
            .ok_or_else(|| self.http.malformed("the reply has no choices"))?;
        let m = choice.message;
        let tool_calls = m
            .tool_calls
            .unwrap_or_default()
            .into_iter()
            .map(|c| {
                let f = c.function.unwrap_or_default();
                ToolCall::new(
                    c.id.unwrap_or_default(),
                    f.name.unwrap_or_default(),
                    f.arguments.unwrap_or_default(),
                )
            })
            .collect();
        let mut reply = Message::assistant_tool_calls(m.content.unwrap_or_default(), tool_calls);
        reply.usage = body.usage.map(|u| Box::new(u.usage()));
        Ok(reply)
    }
}

/// A message as the protocol writes it.
fn wire_message(m: &Message) -> Value {
    let role = match m.role {
        Role::System => "system",
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Tool => "tool",
    };
    let mut out = serde_json::Map::new();
    out.insert("role".into(), json!(role));
    if !m.parts.is_empty() {
        out.insert("content".into(), wire_parts(m));
    } else if m.role == Role::Assistant && m.content.is_empty() && !m.tool_calls.is_empty() {
        out.insert("content".into(), Value::Null);
    } else {
        out.insert("content".into(), json!(m.content));
    }
    if !m.tool_calls.is_empty() {
        let calls: Vec<Value> = m
            .tool_calls
            .iter()
            .map(|c| {
                json!({
                    "id": c.id,
                    "type": "function",
                    "function": { "name": c.name, "arguments": c.arguments },
                })
            })
            .collect();
        out.insert("tool_calls".into(), Value::Array(calls));
    }
    if let Some(id) = &m.tool_call_id {
        out.insert("tool_call_id".into(), json!(id));
    }
    Value::Object(out)
}

/// A message with [parts](Message::parts) as the protocol's array of content parts: its text
/// first, then each part. Only user messages may carry images; in other roles an image is
/// sent as its description.
fn wire_parts(m: &Message) -> Value {
    let mut parts = Vec::with_capacity(m.parts.len() + 1);
    if !m.content.is_empty() {
        parts.push(json!({"type": "text", "text": m.content}));
    }
    for part in &m.parts {
        parts.push(match part {
            ContentPart::Text { text } => json!({"type": "text", "text": text}),
            ContentPart::Image { source } if m.role == Role::User => {
                let url = match source {
                    ImageSource::Url { url } => url.clone(),
                    ImageSource::Base64 { media_type, data } => {
                        format!("data:{media_type};base64,{data}")
                    }
                    // A source this client does not know yet: described.
                    _ => {
                        parts.push(
                            json!({"type": "text", "text": format!("[{}]", part.describe())}),
                        );
                        continue;
                    }
                };
                json!({"type": "image_url", "image_url": {"url": url}})
            }
            other => json!({"type": "text", "text": format!("[{}]", other.describe())}),
        });
    }
    Value::Array(parts)
}

#[derive(Deserialize)]
struct ErrorBody {
    error: Option<ApiError>,
}

#[derive(Deserialize)]
struct ApiError {
    message: String,
}

#[derive(Deserialize)]
struct Completion {
    choices: Vec<Choice>,
    #[serde(default)]
    usage: Option<WireUsage>,
}

/// The `usage` object of a completion or of the last stream chunk.
#[derive(Deserialize)]
struct WireUsage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
    #[serde(default)]
    prompt_tokens_details: Option<PromptDetails>,
    #[serde(default)]
    completion_tokens_details: Option<CompletionDetails>,
}

#[derive(Deserialize)]
struct PromptDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct CompletionDetails {
    #[serde(default)]
    reasoning_tokens: Option<u64>,
}

impl WireUsage {
    fn usage(self) -> Usage {
        Usage {
            input_tokens: self.prompt_tokens.unwrap_or(0),
            output_tokens: self.completion_tokens.unwrap_or(0),
            cached_input_tokens: self.prompt_tokens_details.and_then(|d| d.cached_tokens),
            reasoning_tokens: self
                .completion_tokens_details
                .and_then(|d| d.reasoning_tokens),
        }
    }
}

#[derive(Deserialize)]
struct Choice {
    message: WireMessage,
}

#[derive(Deserialize, Default)]
struct WireMessage {
    content: Option<String>,
    tool_calls: Option<Vec<WireToolCall>>,
}

#[derive(Deserialize)]
struct WireToolCall {
    index: Option<usize>,
    id: Option<String>,
    function: Option<WireFunction>,
}

#[derive(Deserialize, Default)]
struct WireFunction {
    name: Option<String>,
    arguments: Option<String>,
}

#[derive(Deserialize)]
struct StreamChunk {
    #[serde(default)]
    choices: Vec<StreamChoice>,
    error: Option<ApiError>,
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
struct StreamChoice {
    #[serde(default)]
    delta: WireMessage,
    finish_reason: Option<String>,
}

impl WireFormat for OpenAiChatModel {
    type Decoder = Deltas;

    fn http(&self) -> &HttpModel {
        &self.http
    }

    fn body(&self, request: &ChatRequest, stream: bool) -> Value {
        self.request_body(request, stream)
    }

    fn headers(&self, post: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match &self.config.api_key {
            Some(key) => post.bearer_auth(key),
            None => post,
        }
    }

    fn error_message(body: &str) -> Option<String> {
        serde_json::from_str::<ErrorBody>(body)
            .ok()
            .and_then(|b| b.error)
            .map(|e| e.message)
    }

    fn retry_after(value: &str) -> Option<Duration> {
        value.trim().parse::<u64>().ok().map(Duration::from_secs)
    }

    fn parse_reply(&self, text: &str) -> Result<Message, ModelError> {
        self.parse_completion(text)
    }

    fn decoder(&self) -> Deltas {
        Deltas
    }
}

#[async_trait]
impl ChatModel for OpenAiChatModel {
    fn model_name(&self) -> &str {
        &self.config.model
    }

    fn provider_name(&self) -> &str {
        // The protocol's: an OpenAI-compatible server (a proxy, another vendor) is named by
        // the base URL, which the conventions leave to `server.address`.
        "openai"
    }

    async fn generate(&self, request: &ChatRequest) -> Result<Message, ModelError> {
        http_model::generate(self, request).await
    }

    async fn stream(&self, request: &ChatRequest) -> Result<ModelStream, ModelError> {
        http_model::stream(self, request).await
    }
}

/// Turns the chunks of a streamed completion (their `delta`s) into message chunks.
pub(crate) struct Deltas;

impl ChunkDecoder for Deltas {
    const MISSING_END: &'static str = "no finish_reason and no [DONE]";

    fn event(&mut self, data: &str, out: &mut Chunks) {
        if data.trim() == "[DONE]" {
            out.finished();
            return out.end();
        }
        let chunk: StreamChunk = match out.http().parse_piece("chunk", data) {
            Ok(chunk) => chunk,
            Err(error) => return out.fail(error),
        };
        if let Some(error) = chunk.error {
            // Cut like an HTTP error body: LiteLLM's carries a whole Python traceback.
            let error = out.http().reported_error(truncate(&error.message, 500));
            return out.fail(error);
        }
        let usage = chunk.usage.map(|u| Box::new(u.usage()));
        for choice in chunk.choices {
            if choice.finish_reason.is_some() {
                out.finished();
            }
            let delta = choice.delta;
            let tool_calls: Vec<ToolCall> = delta
                .tool_calls
                .unwrap_or_default()
                .into_iter()
                .enumerate()
                .map(|(k, c)| {
                    let f = c.function.unwrap_or_default();
                    ToolCall {
                        index: Some(c.index.unwrap_or(k)),
                        id: c.id.unwrap_or_default(),
                        name: f.name.unwrap_or_default(),
                        arguments: f.arguments.unwrap_or_default(),
                    }
                })
                .collect();
            let content = delta.content.unwrap_or_default();
            if !content.is_empty() || !tool_calls.is_empty() {
                out.push(Message::assistant_tool_calls(content, tool_calls));
            }
        }
        if let Some(usage) = usage {
            // With `include_usage`, the last chunk before `[DONE]` has no choices and the
            // call's usage.
            out.push(Message {
                usage: Some(usage),
                ..Message::assistant("")
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ToolDefinition;

    #[test]
    fn content_parts_become_content_part_arrays() {
        let user = Message::user("What is this?")
            .with_image_url("https://x/a.png")
            .with_image_base64("image/png", "AAAA")
            .with_part(ContentPart::text("Be short."));
        assert_eq!(
            wire_message(&user),
            json!({"role": "user", "content": [
                {"type": "text", "text": "What is this?"},
                {"type": "image_url", "image_url": {"url": "https://x/a.png"}},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
                {"type": "text", "text": "Be short."}
            ]})
        );
        // Only user messages carry images: elsewhere the image is described.
        let tool = Message::tool("", "c1", "camera").with_image_url("https://x/b.png");
        assert_eq!(
            wire_message(&tool),
            json!({"role": "tool", "tool_call_id": "c1", "content": [
                {"type": "text", "text": "[an image at https://x/b.png]"}
            ]})
        );
        // Without parts, content stays a plain string.
        assert_eq!(
            wire_message(&Message::user("hi")),
            json!({"role": "user", "content": "hi"})
        );
    }

    #[test]
    fn request_body_follows_the_protocol() {
        let model = OpenAiChatModel::new(
            OpenAiConfig::new("http://127.0.0.1:1/v1/", "m").extra("temperature", json!(0)),
        )
        .unwrap();
        assert_eq!(
            model.http.endpoint(),
            "http://127.0.0.1:1/v1/chat/completions"
        );
        let request = ChatRequest::new([
            Arc::new(Message::system("be brief")),
            Arc::new(Message::user("hi")),
            Arc::new(Message::assistant_tool_calls(
                "",
                vec![ToolCall::new("c1", "lookup", "{\"id\":1}")],
            )),
            Arc::new(Message::tool("found", "c1", "lookup")),
        ])
        .with_tools([ToolDefinition {
            name: "lookup".into(),
            description: "Looks up.".into(),
            parameters: json!({"type": "object"}),
        }]);
        assert_eq!(
            model.request_body(&request, true),
            json!({
                "model": "m",
                "messages": [
                    {"role": "system", "content": "be brief"},
                    {"role": "user", "content": "hi"},
                    {"role": "assistant", "content": null, "tool_calls": [
                        {"id": "c1", "type": "function",
                         "function": {"name": "lookup", "arguments": "{\"id\":1}"}}
                    ]},
                    {"role": "tool", "content": "found", "tool_call_id": "c1"}
                ],
                "tools": [{"type": "function", "function": {
                    "name": "lookup", "description": "Looks up.", "parameters": {"type": "object"}
                }}],
                "stream": true,
                "stream_options": {"include_usage": true},
                "temperature": 0
            })
        );
    }

    #[test]
    fn usage_and_response_format_follow_the_protocol() {
        let model = OpenAiChatModel::new(OpenAiConfig::new("http://127.0.0.1:1/v1", "m")).unwrap();
        let usage = json!({"prompt_tokens": 120, "completion_tokens": 30,
            "prompt_tokens_details": {"cached_tokens": 100},
            "completion_tokens_details": {"reasoning_tokens": 12}});
        let body = json!({"choices": [{"message": {"content": "hi"}}], "usage": usage});
        let reply = model.parse_completion(&body.to_string()).unwrap();
        let expected = Usage::new(120, 30)
            .with_cached_input(100)
            .with_reasoning(12);
        assert_eq!(reply.usage.as_deref(), Some(&expected));
        let bare = json!({"choices": [{"message": {"content": "hi"}}]});
        assert_eq!(
            model
                .parse_completion(&bare.to_string())
                .unwrap()
                .usage
                .as_deref(),
            None
        );

        // A streamed reply's usage chunk is read by the LiteLLM test
        // (tests/it/openai_compat.rs, usage_is_read_from_plain_and_streamed_replies).

        #[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
        struct Verdict {
            approved: bool,
        }
        let mut request = ChatRequest::new([Arc::new(Message::user("ok?"))]);
        request.output_schema = Some(Arc::new(super::super::OutputSchema::of::<Verdict>()));
        let body = model.request_body(&request, false);
        assert_eq!(body["response_format"]["type"], "json_schema");
        assert_eq!(body["response_format"]["json_schema"]["name"], "Verdict");
        assert_eq!(
            body["response_format"]["json_schema"]["schema"]["required"],
            json!(["approved"])
        );
        assert!(body.get("stream_options").is_none());
    }

    #[test]
    fn request_params_are_sent_and_win_over_the_configured_ones() {
        let model = OpenAiChatModel::new(
            OpenAiConfig::new("http://127.0.0.1:1/v1/", "m")
                .extra("temperature", json!(1))
                .extra("seed", json!(7)),
        )
        .unwrap();
        let mut request = ChatRequest::new([Arc::new(Message::user("hi"))]);
        request.params = crate::model::ModelParams {
            temperature: Some(0.5),
            max_tokens: Some(64),
            stop: Some(vec!["END".into()]),
            ..Default::default()
        };
        assert_eq!(
            model.request_body(&request, false),
            json!({
                "model": "m",
                "messages": [{"role": "user", "content": "hi"}],
                "stream": false,
                "temperature": 0.5,
                "seed": 7,
                "max_tokens": 64,
                "stop": ["END"]
            })
        );
    }

    #[test]
    fn config_debug_hides_the_key() {
        let c = OpenAiConfig::new("http://x/v1", "m").api_key("not-a-real-key");
        assert!(!format!("{c:?}").contains("not-a-real-key"));
    }
}
