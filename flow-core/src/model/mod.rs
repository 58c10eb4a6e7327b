//! Chat models: the [`ChatModel`] trait, what it is asked ([`ChatRequest`]) and how it fails
//! ([`ModelError`]).
//!
//! A model answers a conversation with one assistant [`Message`], whole
//! ([`ChatModel::generate`]) or in chunks ([`ChatModel::stream`]); the answer may call tools
//! (see [`ToolCall`](crate::ToolCall)). [`ChatModelAgent`](crate::ChatModelAgent) runs the
//! ReAct loop over a model. Three models ship with the runtime:
//!
//! - [`ScriptedModel`]: deterministic, offline, answers from a script or from rules;
//! - `OpenAiChatModel` (cargo feature `openai`): any OpenAI-compatible `/v1/chat/completions`
//!   server (OpenAI, Ollama, vLLM, llama.cpp);
//! - `AnthropicChatModel` (cargo feature `anthropic`): Anthropic's Messages API
//!   (`/v1/messages`), or a proxy serving it.
//!
//! `EnvModels` picks each agent's model from the environment (`OPENAI_MODEL_<AGENT>` over
//! `OPENAI_MODEL`) and falls back to the agent's script offline.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures::stream::BoxStream;
use futures::StreamExt;
use serde::{Deserialize, Serialize};

use crate::message::{Message, MessageRef};

mod failover;
mod http_kinds;
mod params;
mod retry;
#[doc(hidden)]
pub mod schema;
mod scripted;

pub use failover::{BreakerPolicy, BreakerState, FailoverModel};
pub use http_kinds::{SizeLimit, TimeoutKind};
pub use params::ModelParams;
pub use retry::RetryPolicy;
pub use scripted::{ScriptRules, ScriptStep, ScriptedModel};

pub use crate::usage::{Usage, UsageReport, UsageTotal, USAGE_SESSION_KEY};
pub use schema::{OutputSchema, DEFAULT_OUTPUT_RETRIES};

/// A tool as a model sees it: name, description and the JSON Schema of its arguments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDefinition {
    /// The name the model calls the tool by.
    pub name: String,
    /// What the tool does and when to call it (the model reads this).
    pub description: String,
    /// JSON Schema of the arguments object.
    pub parameters: serde_json::Value,
}

/// What a model is asked: the conversation so far and the tools it may call.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChatRequest {
    /// The conversation, oldest first (a system message first, if the agent has instructions).
    pub messages: Vec<MessageRef>,
    /// The tools the model may call; empty if it may not call any. Shared: an agent builds its
    /// definitions once and every request it makes points at them.
    pub tools: Arc<[ToolDefinition]>,
    /// The JSON Schema the answer must match, when the agent declared an output type (see
    /// [`structured`](crate::structured)); the OpenAI client sends it as
    /// `response_format`.
    pub output_schema: Option<Arc<OutputSchema>>,
    /// Sampling parameters (temperature, max tokens, ...); unset ones are not sent.
    pub params: ModelParams,
}

impl ChatRequest {
    /// A request with the given messages and no tools.
    pub fn new(messages: impl IntoIterator<Item = MessageRef>) -> Self {
        ChatRequest {
            messages: messages.into_iter().collect(),
            tools: Arc::default(),
            output_schema: None,
            params: ModelParams::default(),
        }
    }

    /// This request with the given tools.
    pub fn with_tools(mut self, tools: impl IntoIterator<Item = ToolDefinition>) -> Self {
        self.tools = tools.into_iter().collect();
        self
    }

    /// The last message with the user role (a user's question or another agent's rewritten
    /// context), if any.
    pub fn last_user_message(&self) -> Option<&Message> {
        self.messages
            .iter()
            .rev()
            .map(|m| &**m)
            .find(|m| m.role == crate::Role::User)
    }
}

/// The chunks of a streamed answer. Each chunk is an assistant [`Message`]; tool calls in
/// chunks carry an `index` so [`Message::concat`] merges the pieces of one call. An `Err`
/// ends the stream: the model failed part-way.
pub type ModelStream = BoxStream<'static, Result<Message, ModelError>>;

/// A chat model: answers a conversation, whole or streamed, possibly with tool calls.
///
/// Object safe: agents hold an `Arc<dyn ChatModel>`. Implement [`generate`](Self::generate);
/// implement [`stream`](Self::stream) too if the model can stream (the default streams the
/// whole answer as one chunk).
///
/// ```
/// use async_trait::async_trait;
/// use agentweave_runtime::model::{ChatModel, ChatRequest, ModelError};
/// use agentweave_runtime::Message;
///
/// /// Repeats the last user message.
/// struct Parrot;
///
/// #[async_trait]
/// impl ChatModel for Parrot {
///     fn model_name(&self) -> &str {
///         "parrot"
///     }
///     async fn generate(&self, request: &ChatRequest) -> Result<Message, ModelError> {
///         let said = request.last_user_message().map(|m| m.content.clone());
///         Ok(Message::assistant(said.unwrap_or_default()))
///     }
/// }
/// ```
#[async_trait]
pub trait ChatModel: Send + Sync + 'static {
    /// The model's name, as errors and logs report it (for an HTTP model: the model id).
    fn model_name(&self) -> &str;

    /// Who serves the model, as the OpenTelemetry GenAI conventions name providers
    /// (`gen_ai.provider.name` on each model call's span): `openai`, `anthropic`, ... The
    /// default, `_OTHER`, is the conventions' value for a provider they do not name (a scripted
    /// or home-made model).
    fn provider_name(&self) -> &str {
        "_OTHER"
    }

    /// Answers with one whole assistant message.
    async fn generate(&self, request: &ChatRequest) -> Result<Message, ModelError>;

    /// Answers in chunks. An `Err` from this call means nothing was streamed; an `Err` item in
    /// the stream means the model failed part-way.
    async fn stream(&self, request: &ChatRequest) -> Result<ModelStream, ModelError> {
        let whole = self.generate(request).await?;
        Ok(futures::stream::once(async move { Ok(whole) }).boxed())
    }
}

/// The future of a model call, as `#[async_trait]` writes it.
type ModelCall<'a, T> =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<T, ModelError>> + Send + 'a>>;

/// A shared model is the model: its calls are the inner model's futures, handed on as they
/// are (an `async fn` here would box a second future around each call).
impl<M: ChatModel + ?Sized> ChatModel for Arc<M> {
    fn model_name(&self) -> &str {
        (**self).model_name()
    }

    fn provider_name(&self) -> &str {
        (**self).provider_name()
    }

    fn generate<'life0, 'life1, 'async_trait>(
        &'life0 self,
        request: &'life1 ChatRequest,
    ) -> ModelCall<'async_trait, Message>
    where
        'life0: 'async_trait,
        'life1: 'async_trait,
        Self: 'async_trait,
    {
        (**self).generate(request)
    }

    fn stream<'life0, 'life1, 'async_trait>(
        &'life0 self,
        request: &'life1 ChatRequest,
    ) -> ModelCall<'async_trait, ModelStream>
    where
        'life0: 'async_trait,
        'life1: 'async_trait,
        Self: 'async_trait,
    {
        (**self).stream(request)
    }
}

/// Why a model call failed. [`retryable`](ModelError::retryable) tells whether trying again
/// may help; [`ChatModelAgent`](crate::ChatModelAgent) retries those under its
/// [`RetryPolicy`].
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum ModelError {
    /// The server answered with an HTTP error status. Retryable for 408, 409, 429 and 5xx.
    #[error("model '{model}' answered HTTP {status}: {body}{}", http_hint(*.status))]
    Http {
        /// The model asked.
        model: Arc<str>,
        /// The HTTP status code.
        status: u16,
        /// The start of the response body (the server's explanation).
        body: Arc<str>,
        /// How long the server asked to wait (`Retry-After`), if it said.
        retry_after: Option<Duration>,
    },
    /// The server could not be reached, or the connection failed before an answer. Retryable.
    #[error(
        "could not reach model '{model}': {message}; check the base URL and that the server is up"
    )]
    Connection {
        /// The model asked.
        model: Arc<str>,
        /// What failed.
        message: Arc<str>,
    },
    /// A stream of chunks broke off part-way (the connection dropped, the server gave up).
    /// Retryable.
    #[error("model '{model}' stream broke off part-way: {message}")]
    StreamInterrupted {
        /// The model asked.
        model: Arc<str>,
        /// What failed.
        message: Arc<str>,
    },
    /// The answer could not be read: not the protocol expected. Not retryable.
    #[error(
        "model '{model}' sent a reply that is not a valid chat completion: {message}; check \
         that the server speaks the OpenAI-compatible protocol"
    )]
    Malformed {
        /// The model asked.
        model: Arc<str>,
        /// What was wrong with it.
        message: Arc<str>,
    },
    /// A wait of an HTTP call ran out (see `HttpLimits`, cargo feature `http`). Retryable.
    #[error("model '{model}' timed out: no {kind} within {limit:?} (HttpLimits::{}); raise it if the server is slow but healthy", kind.field())]
    Timeout {
        /// The model asked.
        model: Arc<str>,
        /// Which wait ran out.
        kind: TimeoutKind,
        /// The limit that ran out.
        limit: Duration,
    },
    /// The reply went past a size limit of its HTTP call; reading stopped there (see
    /// `HttpLimits`, cargo feature `http`). Not retryable.
    #[error("model '{model}' sent a reply past a size limit: {what} is larger than {limit} bytes (HttpLimits::{}); raise the limit if the server is trusted and the reply legitimately this large", what.field())]
    LimitExceeded {
        /// The model asked.
        model: Arc<str>,
        /// Which limit.
        what: SizeLimit,
        /// The limit, in bytes.
        limit: usize,
    },
    /// A [`ScriptedModel`] has no reply for this request. Not retryable.
    #[error(
        "scripted model '{model}' has no reply for call {call}: {message}; add a step to its \
         script or a rule that matches"
    )]
    ScriptExhausted {
        /// The model asked.
        model: Arc<str>,
        /// Which call (1-based) found no reply.
        call: usize,
        /// Why.
        message: Arc<str>,
    },
    /// Any other failure, retryable or not as its source decided.
    #[error("model '{model}' failed: {message}")]
    Other {
        /// The model asked.
        model: Arc<str>,
        /// What went wrong.
        message: Arc<str>,
        /// Whether trying again may help.
        retryable: bool,
    },
}

impl ModelError {
    /// Whether trying the same call again may succeed: connection failures, broken streams,
    /// and HTTP 408, 409, 429 and 5xx answers.
    pub fn retryable(&self) -> bool {
        match self {
            ModelError::Http { status, .. } => {
                matches!(status, 408 | 409 | 429) || (500..600).contains(status)
            }
            ModelError::Connection { .. } | ModelError::StreamInterrupted { .. } => true,
            ModelError::Timeout { .. } => true,
            ModelError::LimitExceeded { .. } => false,
            ModelError::Malformed { .. } | ModelError::ScriptExhausted { .. } => false,
            ModelError::Other { retryable, .. } => *retryable,
        }
    }

    /// The model the error comes from.
    pub fn model(&self) -> &str {
        match self {
            ModelError::Http { model, .. }
            | ModelError::Connection { model, .. }
            | ModelError::StreamInterrupted { model, .. }
            | ModelError::Malformed { model, .. }
            | ModelError::ScriptExhausted { model, .. }
            | ModelError::Other { model, .. } => model,
            ModelError::Timeout { model, .. } | ModelError::LimitExceeded { model, .. } => model,
        }
    }

    /// An HTTP error answer, with the server's body (cut to its first 500 characters).
    pub fn http(model: impl Into<Arc<str>>, status: u16, body: &str) -> Self {
        ModelError::Http {
            model: model.into(),
            status,
            body: truncate(body, 500).into(),
            retry_after: None,
        }
    }

    /// A failure described in words.
    pub fn other(
        model: impl Into<Arc<str>>,
        message: impl Into<Arc<str>>,
        retryable: bool,
    ) -> Self {
        ModelError::Other {
            model: model.into(),
            message: message.into(),
            retryable,
        }
    }

    /// How long the server asked to wait before trying again, if it said.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            ModelError::Http { retry_after, .. } => *retry_after,
            _ => None,
        }
    }
}

/// What to do about an HTTP error status, appended to its message.
fn http_hint(status: u16) -> &'static str {
    match status {
        401 | 403 => "; check the API key (OPENAI_API_KEY)",
        404 => "; check the base URL (OPENAI_BASE_URL) and the model name (OPENAI_MODEL)",
        429 => "; the server is rate limiting: retry later or wait longer between retries",
        500..=599 => "; the server failed: retry later",
        _ => "",
    }
}

/// The first `max` characters of `text`, with `…` if it was cut.
#[doc(hidden)]
pub fn truncate(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retryable_http_statuses() {
        let retryable: Vec<u16> = [400, 401, 404, 408, 409, 422, 429, 500, 502, 503, 599]
            .into_iter()
            .filter(|&s| ModelError::http("m", s, "").retryable())
            .collect();
        assert_eq!(retryable, [408, 409, 429, 500, 502, 503, 599]);
    }

    #[test]
    fn http_error_text_names_model_and_status_and_cuts_the_body() {
        let long = "x".repeat(600);
        let e = ModelError::http("gpt", 503, &long);
        let text = e.to_string();
        assert_eq!(
            text,
            format!(
                "model 'gpt' answered HTTP 503: {}…; the server failed: retry later",
                "x".repeat(500)
            )
        );
        assert_eq!(
            ModelError::http("gpt", 401, "no key").to_string(),
            "model 'gpt' answered HTTP 401: no key; check the API key (OPENAI_API_KEY)"
        );
    }
}
