//! Telemetry: the `tracing` spans of model calls and tool calls, named and attributed after the
//! OpenTelemetry semantic conventions for generative AI (their latest development version:
//! `gen_ai.provider.name`, `gen_ai.conversation.id`, `invoke_agent` spans, the `cache_read` and
//! `reasoning` token counts).
//!
//! Every agent run is a span named `invoke_agent` (`otel.name` = `invoke_agent {agent}`,
//! `gen_ai.operation.name` = `invoke_agent`, `gen_ai.agent.name`, `gen_ai.agent.description`
//! when the agent has one, `agentflow.run_path`). Inside it, a
//! [`ChatModelAgent`](crate::ChatModelAgent) opens
//!
//! - one span named `chat` per model call (per attempt, when calls are retried), with
//!   `otel.name` = `chat {model}`, `gen_ai.operation.name` = `chat`, `gen_ai.provider.name`
//!   (the model's [`provider_name`](crate::ChatModel::provider_name)),
//!   `gen_ai.request.model`, `gen_ai.agent.name`, `agentflow.run_path`, `agentflow.attempt`,
//!   `agentflow.streaming`, and once the reply is in, `gen_ai.usage.input_tokens` and
//!   `gen_ai.usage.output_tokens` (if the model reported usage),
//!   `agentflow.usage.cost_usd` (the call's cost in dollars, when the run's budgets or its
//!   shared spending gate have a price for the model),
//!   `gen_ai.usage.cache_read.input_tokens` and `gen_ai.usage.reasoning.output_tokens` (if it
//!   reported them) and `gen_ai.response.finish_reasons` (`tool_calls` or `stop`);
//!   `gen_ai.response.model` when the reply names the model that answered (a
//!   `FailoverModel`'s);
//! - one span named `execute_tool` per call of one of its tools, with `otel.name` =
//!   `execute_tool {tool}`, `gen_ai.operation.name` = `execute_tool`, `gen_ai.tool.name`,
//!   `gen_ai.tool.call.id`, `gen_ai.tool.type` = `function`, `gen_ai.agent.name` and
//!   `agentflow.run_path`.
//!
//! Every one of these spans of a thread's turn carries the thread's id as
//! `gen_ai.conversation.id` (see [`RunContext::with_conversation_id`](crate::RunContext::with_conversation_id)).
//!
//! A failed call sets `error.type` (the error's kind, e.g. `ModelError::Http`),
//! `otel.status_code` = `ERROR` and `otel.status_description` (the error's text) on its span.
//!
//! Prompts, replies, tool arguments and results are not recorded unless the agent asks for it
//! with [`record_content`](crate::ChatModelAgentBuilder::record_content), as the conventions
//! advise: then `gen_ai.input.messages` and `gen_ai.output.messages` (model calls) and
//! `gen_ai.tool.call.arguments` and `gen_ai.tool.call.result` (tool calls) hold them as JSON.
//!
//! The `otel.*` fields are the ones `tracing-opentelemetry` maps to the span's name and
//! status; `examples/otel.rs` (feature `otel`) exports the spans over OTLP.
//!
//! With no subscriber interested, a span costs a check of a cached flag: no field is built
//! (see `crate::trace`).

use tracing::field::Empty;
use tracing::Span;

use crate::agent::RunContext;
use crate::llm::tool::ToolError;
use crate::message::{Message, ToolCall};
use crate::model::{ChatRequest, ModelError};
use crate::trace::spans_wanted;

/// The span of one model call.
pub(crate) fn model_span(
    cx: &RunContext,
    model: &str,
    provider: &str,
    attempt: u32,
    streaming: bool,
) -> Span {
    if !spans_wanted() {
        return Span::none();
    }
    tracing::info_span!(
        "chat",
        otel.name = %format_args!("chat {model}"),
        otel.kind = "client",
        gen_ai.operation.name = "chat",
        gen_ai.provider.name = provider,
        gen_ai.request.model = model,
        gen_ai.agent.name = cx.agent_name(),
        gen_ai.conversation.id = cx.conversation_id(),
        agentflow.run_path = %cx.run_path(),
        agentflow.attempt = i64::from(attempt),
        agentflow.streaming = streaming,
        gen_ai.usage.input_tokens = Empty,
        gen_ai.usage.output_tokens = Empty,
        gen_ai.usage.cache_read.input_tokens = Empty,
        gen_ai.usage.reasoning.output_tokens = Empty,
        agentflow.usage.cost_usd = Empty,
        gen_ai.response.finish_reasons = Empty,
        gen_ai.response.model = Empty,
        gen_ai.input.messages = Empty,
        gen_ai.output.messages = Empty,
        error.type = Empty,
        otel.status_code = Empty,
        otel.status_description = Empty,
    )
}

/// Records the request's messages on a model span (content recording only).
pub(crate) fn record_request(span: &Span, request: &ChatRequest) {
    if span.is_disabled() {
        return;
    }
    let messages: Vec<&Message> = request.messages.iter().map(|m| &**m).collect();
    if let Ok(text) = serde_json::to_string(&messages) {
        span.record("gen_ai.input.messages", text);
    }
}

/// Records a model call's cost, `micro_usd` millionths of a dollar, on its span as
/// `agentflow.usage.cost_usd` (dollars, a float).
pub(crate) fn record_cost(span: &Span, micro_usd: u64) {
    span.record("agentflow.usage.cost_usd", micro_usd as f64 / 1e6);
}

/// Records the reply's usage and finish reason on a model span, and with `content` the reply.
pub(crate) fn record_reply(span: &Span, reply: &Message, content: bool) {
    if span.is_disabled() {
        return;
    }
    // As signed integers: OpenTelemetry has no unsigned type, and tracing-opentelemetry
    // would write a `u64` as text.
    let int = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
    if let Some(usage) = reply.usage.as_deref() {
        span.record("gen_ai.usage.input_tokens", int(usage.input_tokens));
        span.record("gen_ai.usage.output_tokens", int(usage.output_tokens));
        if let Some(cached) = usage.cached_input_tokens {
            span.record("gen_ai.usage.cache_read.input_tokens", int(cached));
        }
        if let Some(reasoning) = usage.reasoning_tokens {
            span.record("gen_ai.usage.reasoning.output_tokens", int(reasoning));
        }
    }
    let finish = if reply.tool_calls.is_empty() {
        "stop"
    } else {
        "tool_calls"
    };
    span.record("gen_ai.response.finish_reasons", finish);
    if let Some(model) = reply.model.as_deref() {
        // The model that answered, when the agent's model chose among several (failover).
        span.record("gen_ai.response.model", model);
    }
    if content {
        if let Ok(text) = serde_json::to_string(&[reply]) {
            span.record("gen_ai.output.messages", text);
        }
    }
}

/// Records a failed model call on its span.
pub(crate) fn record_model_error(span: &Span, error: &ModelError) {
    if span.is_disabled() {
        return;
    }
    let kind = match error {
        ModelError::Http { .. } => "ModelError::Http",
        ModelError::Connection { .. } => "ModelError::Connection",
        ModelError::StreamInterrupted { .. } => "ModelError::StreamInterrupted",
        ModelError::Malformed { .. } => "ModelError::Malformed",
        ModelError::ScriptExhausted { .. } => "ModelError::ScriptExhausted",
        _ => "ModelError::Other",
    };
    record_error(span, kind, error);
}

/// The span of one tool call.
pub(crate) fn tool_span(cx: &RunContext, call: &ToolCall) -> Span {
    if !spans_wanted() {
        return Span::none();
    }
    tracing::info_span!(
        "execute_tool",
        otel.name = %format_args!("execute_tool {}", call.name),
        otel.kind = "internal",
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = %call.name,
        gen_ai.tool.call.id = %call.id,
        gen_ai.tool.type = "function",
        gen_ai.agent.name = cx.agent_name(),
        gen_ai.conversation.id = cx.conversation_id(),
        agentflow.run_path = %cx.run_path(),
        gen_ai.tool.call.arguments = Empty,
        gen_ai.tool.call.result = Empty,
        error.type = Empty,
        otel.status_code = Empty,
        otel.status_description = Empty,
    )
}

/// Records a tool call's outcome on its span: an error, and with `content` the arguments and
/// the result.
pub(crate) fn record_tool_outcome(
    span: &Span,
    arguments: &str,
    outcome: Result<&str, &ToolError>,
    content: bool,
) {
    if span.is_disabled() {
        return;
    }
    if content {
        span.record("gen_ai.tool.call.arguments", arguments);
    }
    match outcome {
        Ok(text) if content => {
            span.record("gen_ai.tool.call.result", text);
        }
        Ok(_) => {}
        Err(error) => {
            let kind = match error {
                ToolError::InvalidArguments { .. } => "ToolError::InvalidArguments",
                ToolError::UnknownTool { .. } => "ToolError::UnknownTool",
                ToolError::Failed { .. } => "ToolError::Failed",
                ToolError::TimedOut { .. } => "ToolError::TimedOut",
                ToolError::Panicked { .. } => "ToolError::Panicked",
                ToolError::Interrupted { .. } => "ToolError::Interrupted",
                ToolError::Middleware(_) => "MiddlewareError",
                _ => "ToolError",
            };
            if let ToolError::Interrupted { .. } = error {
                // Not a failure: the call waits for outside input.
                return;
            }
            record_error(span, kind, error);
        }
    }
}

/// Records an error on a span: its kind, and an error status with its text.
pub(crate) fn record_error(span: &Span, kind: &str, error: &dyn std::fmt::Display) {
    span.record("error.type", kind);
    span.record("otel.status_code", "ERROR");
    // As text (`&str`): tracing-opentelemetry reads the status description from a string.
    span.record("otel.status_description", error.to_string().as_str());
}
