//! `AnthropicChatModel` against a small HTTP/1.1 server on 127.0.0.1 that speaks the Messages
//! API, seen through a `ChatModelAgent` run as a user sees it.
//!
//! Run with `cargo test -p agentweave-runtime --features anthropic --test it -- anthropic::`.
#![cfg(feature = "anthropic")]

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use agentweave_runtime::model::{
    AnthropicChatModel, AnthropicConfig, AnthropicUsage, ChatModel, ChatRequest, HttpLimits,
    ModelError, RetryPolicy, SizeLimit, Usage,
};
use agentweave_runtime::{AgentEvent, EventOutput, Message, Session};
use futures::StreamExt;
use serde_json::{json, Value};
use support::model_server::{self, Server, SSE_HEAD};
use support::{fast, show};

/// Answers each connection with the next canned response (written in the given pieces), then
/// with HTTP 500.
async fn serve(responses: Vec<Vec<String>>) -> Server {
    let exhausted = raw(
        "500 Internal Server Error",
        &[],
        r#"{"type":"error","error":{"type":"api_error","message":"no more responses"}}"#,
    );
    model_server::serve("", responses, exhausted).await
}

/// A whole JSON response with extra headers, the body delimited by the end of the connection.
fn raw(status: &str, headers: &[(&str, &str)], body: &str) -> String {
    let headers = [&[("Content-Type", "application/json")], headers].concat();
    model_server::response(status, &headers, body)
}

fn reply(content: Value, input_tokens: u64, output_tokens: u64) -> Vec<String> {
    let body = json!({
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test",
        "content": content, "stop_reason": "end_turn",
        "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens}
    });
    vec![raw("200 OK", &[], &body.to_string())]
}

/// An SSE response: the head, then one piece per event (named by its `type`).
fn sse(events: &[Value]) -> Vec<String> {
    let mut pieces = vec![SSE_HEAD.to_owned()];
    pieces.extend(
        events
            .iter()
            .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap())),
    );
    pieces
}

fn model(base_url: &str) -> AnthropicChatModel {
    AnthropicChatModel::new(
        AnthropicConfig::new(base_url, "claude-test")
            .api_key("test-key")
            .max_tokens(512),
    )
    .unwrap()
}

/// Runs the clerk (one tool, `lookup_order`) on one question, reading every streamed event to
/// its end: the session and the events.
async fn run_clerk(
    model: AnthropicChatModel,
    retry: RetryPolicy,
    streaming: bool,
) -> (Arc<Session>, Vec<AgentEvent>) {
    let (session, events) =
        support::run_question(support::clerk(model, retry), "What is order 42?", streaming).await;
    for e in &events {
        if let Some(EventOutput::Stream(s)) = &e.output {
            // Drain the caller's reader so the stream completes.
            let mut r = s.fork();
            while r.next().await.is_some() {}
        }
    }
    (session, events)
}

/// Runs the clerk on one question: its error events (`error: …`), then the session's record.
async fn run(model: AnthropicChatModel, retry: RetryPolicy, streaming: bool) -> Vec<String> {
    let (session, events) = run_clerk(model, retry, streaming).await;
    let mut lines: Vec<String> = events
        .iter()
        .filter_map(|e| e.error.as_ref().map(|err| format!("error: {err}")))
        .collect();
    for e in session.events() {
        if let Some(m) = e.message().await.unwrap() {
            lines.push(show(&m));
        }
    }
    lines
}

fn tool_use() -> Value {
    json!([
        {"type": "text", "text": "Let me look."},
        {"type": "tool_use", "id": "toolu_1", "name": "lookup_order", "input": {"order_id": 42}}
    ])
}

#[tokio::test]
async fn tool_use_round_trip_with_system_prompt_and_usage() {
    let server = serve(vec![
        reply(tool_use(), 30, 12),
        reply(
            json!([{"type": "text", "text": "Order 42 is a kettle."}]),
            50,
            8,
        ),
    ])
    .await;
    let model = model(&server.base_url);
    let lines = run(model.clone(), fast(0), false).await;
    assert_eq!(
        lines,
        [
            r#"assistant: Let me look. [call toolu_1 lookup_order {"order_id":42}]"#,
            "tool: order 42: a kettle [result of toolu_1]",
            "assistant: Order 42 is a kettle.",
        ]
    );
    assert_eq!(
        model.usage(),
        AnthropicUsage {
            calls: 2,
            input_tokens: 80,
            output_tokens: 20
        }
    );
    let received = server.received.lock().unwrap().clone();
    assert_eq!(received.len(), 2);
    assert_eq!(received[0].request_line, "POST /v1/messages HTTP/1.1");
    assert_eq!(received[0].header("x-api-key").as_deref(), Some("test-key"));
    assert_eq!(
        received[0].header("anthropic-version").as_deref(),
        Some("2023-06-01")
    );
    let first = &received[0].body;
    assert_eq!(first["system"], "You look up orders.");
    assert_eq!(first["max_tokens"], 512);
    assert_eq!(
        first["messages"],
        json!([{"role": "user", "content": [{"type": "text", "text": "What is order 42?"}]}])
    );
    assert_eq!(first["tools"][0]["name"], "lookup_order");
    assert_eq!(first["tools"][0]["input_schema"]["type"], "object");
    assert!(first.get("stream").is_none());
    // The second request carries the tool use and its result, in the protocol's turns.
    assert_eq!(
        received[1].body["messages"],
        json!([
            {"role": "user", "content": [{"type": "text", "text": "What is order 42?"}]},
            {"role": "assistant", "content": [
                {"type": "text", "text": "Let me look."},
                {"type": "tool_use", "id": "toolu_1", "name": "lookup_order",
                 "input": {"order_id": 42}}
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1",
                 "content": [{"type": "text", "text": "order 42: a kettle"}]}
            ]}
        ])
    );
}

fn streamed_tool_use() -> Vec<String> {
    sse(&[
        json!({"type": "message_start", "message": {"id": "msg_1", "type": "message",
            "role": "assistant", "content": [], "usage": {"input_tokens": 25, "output_tokens": 1}}}),
        json!({"type": "content_block_start", "index": 0,
            "content_block": {"type": "text", "text": ""}}),
        json!({"type": "ping"}),
        json!({"type": "content_block_delta", "index": 0,
            "delta": {"type": "text_delta", "text": "Let me "}}),
        json!({"type": "content_block_delta", "index": 0,
            "delta": {"type": "text_delta", "text": "look."}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "content_block_start", "index": 1, "content_block":
            {"type": "tool_use", "id": "toolu_9", "name": "lookup_order", "input": {}}}),
        json!({"type": "content_block_delta", "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": "{\"order_"}}),
        json!({"type": "content_block_delta", "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": "id\": 42}"}}),
        json!({"type": "content_block_stop", "index": 1}),
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"},
            "usage": {"output_tokens": 17}}),
        json!({"type": "message_stop"}),
    ])
}

/// The streamed answer after the tool's result: 60 input tokens, 3 output tokens.
fn streamed_answer() -> Vec<String> {
    sse(&[
        json!({"type": "message_start", "message": {"usage": {"input_tokens": 60}}}),
        json!({"type": "content_block_start", "index": 0,
            "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": 0,
            "delta": {"type": "text_delta", "text": "A kettle."}}),
        json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"},
            "usage": {"output_tokens": 3}}),
        json!({"type": "message_stop"}),
    ])
}

#[tokio::test]
async fn streaming_text_and_tool_use_events() {
    let server = serve(vec![streamed_tool_use(), streamed_answer()]).await;
    let model = model(&server.base_url);
    let lines = run(model.clone(), fast(0), true).await;
    assert_eq!(
        lines,
        [
            r#"assistant: Let me look. [call toolu_9 lookup_order {"order_id": 42}]"#,
            "tool: order 42: a kettle [result of toolu_9]",
            "assistant: A kettle.",
        ]
    );
    assert_eq!(
        model.usage(),
        AnthropicUsage {
            calls: 2,
            input_tokens: 85,
            output_tokens: 20
        }
    );
    assert_eq!(server.received.lock().unwrap()[0].body["stream"], true);
}

/// Runs the clerk on one question; the usage of each recorded message, and the session's
/// usage report.
async fn usage_of_run(
    model: AnthropicChatModel,
    streaming: bool,
) -> (Vec<Option<Usage>>, agentweave_runtime::model::UsageReport) {
    let (session, events) = run_clerk(model, fast(0), streaming).await;
    for e in &events {
        assert!(e.error.is_none(), "{:?}", e.error);
    }
    let mut usage = Vec::new();
    for e in session.events() {
        if let Some(m) = e.message().await.unwrap() {
            usage.push(m.usage.as_deref().copied());
        }
    }
    (usage, session.usage())
}

#[tokio::test]
async fn usage_is_on_the_reply_messages_plain_and_streamed() {
    // Plain replies; the second read 40 input tokens from the prompt cache.
    let cached = {
        let body = json!({
            "id": "msg_2", "type": "message", "role": "assistant", "model": "claude-test",
            "content": [{"type": "text", "text": "Order 42 is a kettle."}],
            "stop_reason": "end_turn",
            "usage": {"input_tokens": 10, "cache_read_input_tokens": 40, "output_tokens": 8}
        });
        vec![raw("200 OK", &[], &body.to_string())]
    };
    let server = serve(vec![reply(tool_use(), 30, 12), cached]).await;
    let (usage, report) = usage_of_run(model(&server.base_url), false).await;
    assert_eq!(
        usage,
        [
            Some(Usage::new(30, 12)),
            None, // the tool's result
            Some(Usage::new(50, 8).with_cached_input(40)),
        ]
    );
    assert_eq!(report.calls, 2);
    assert_eq!(report.total, Usage::new(80, 20).with_cached_input(40));
    assert_eq!(report.by_model["claude-test"].calls, 2);
    assert_eq!(report.by_agent["clerk"].usage.output_tokens, 20);

    // Streamed replies: input from `message_start`, output from the last `message_delta`.
    let server = serve(vec![streamed_tool_use(), streamed_answer()]).await;
    let (usage, report) = usage_of_run(model(&server.base_url), true).await;
    assert_eq!(
        usage,
        [Some(Usage::new(25, 17)), None, Some(Usage::new(60, 3))]
    );
    assert_eq!(report.total, Usage::new(85, 20));
    assert_eq!(report.calls, 2);
}

#[tokio::test]
async fn overloaded_529_is_retried_after_the_servers_retry_after() {
    let overloaded = raw(
        "529 Site Overloaded",
        &[("retry-after", "0")],
        r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
    );
    let limited = raw(
        "429 Too Many Requests",
        &[("retry-after", "0")],
        r#"{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}"#,
    );
    let server = serve(vec![
        vec![overloaded],
        vec![limited],
        reply(
            json!([{"type": "text", "text": "Order 42 is a kettle."}]),
            1,
            1,
        ),
    ])
    .await;
    let lines = run(model(&server.base_url), fast(2), false).await;
    assert_eq!(lines, ["assistant: Order 42 is a kettle."]);
    assert_eq!(server.received.lock().unwrap().len(), 3);
}

#[tokio::test]
async fn a_retry_after_too_long_for_a_duration_is_the_longest_wait_not_a_panic() {
    for value in ["1e30", "184467440737095516160"] {
        let server = serve(vec![vec![raw(
            "429 Too Many Requests",
            &[("retry-after", value)],
            r#"{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}"#,
        )]])
        .await;
        let request = ChatRequest::new([Arc::new(Message::user("hi"))]);
        let e = model(&server.base_url)
            .generate(&request)
            .await
            .unwrap_err();
        assert!(e.retryable(), "{value}");
        assert_eq!(e.retry_after(), Some(Duration::MAX), "{value}");
    }
}

#[tokio::test]
async fn http_errors_are_typed_with_retry_after() {
    let server = serve(vec![vec![raw(
        "429 Too Many Requests",
        &[("retry-after", "7")],
        r#"{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}"#,
    )]])
    .await;
    let request = ChatRequest::new([Arc::new(Message::user("hi"))]);
    let e = model(&server.base_url)
        .generate(&request)
        .await
        .unwrap_err();
    assert!(e.retryable());
    assert_eq!(e.retry_after(), Some(Duration::from_secs(7)));
    match &e {
        ModelError::Http { status, body, .. } => {
            assert_eq!(*status, 429);
            assert_eq!(&**body, "rate_limit_error: slow down");
        }
        other => panic!("{other:?}"),
    }
    // Out of retries, the agent ends its run with the error.
    let server = serve(vec![]).await;
    let lines = run(model(&server.base_url), fast(1), false).await;
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].starts_with(
            "error: agent 'clerk' got no answer from its model after 2 attempt(s): model \
             'claude-test' answered HTTP 500: api_error: no more responses"
        ),
        "{lines:?}"
    );
}

async fn stream_error(events: Vec<String>) -> ModelError {
    let server = serve(vec![events]).await;
    let request = ChatRequest::new([Arc::new(Message::user("hi"))]);
    let mut stream = model(&server.base_url).stream(&request).await.unwrap();
    while let Some(item) = stream.next().await {
        if let Err(e) = item {
            assert!(stream.next().await.is_none(), "the error ends the stream");
            return e;
        }
    }
    panic!("the stream ended without an error");
}

#[tokio::test]
async fn stream_failures_are_stream_interrupted() {
    let start = json!({"type": "message_start", "message": {"usage": {"input_tokens": 1}}});
    let e = stream_error(sse(&[
        start.clone(),
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
    ]))
    .await;
    assert!(matches!(e, ModelError::StreamInterrupted { .. }), "{e:?}");
    assert!(e.retryable());
    assert_eq!(
        e.to_string(),
        "model 'claude-test' stream broke off part-way: the server reported an error: \
         overloaded_error: Overloaded"
    );
    // Cut before message_stop.
    let e = stream_error(sse(&[
        start.clone(),
        json!({"type": "content_block_delta", "index": 0,
            "delta": {"type": "text_delta", "text": "par"}}),
    ]))
    .await;
    assert!(e.to_string().contains("no message_stop event"), "{e}");
    // Not JSON.
    let mut bad = sse(&[start]);
    bad.push("event: content_block_delta\ndata: {not json\n\n".to_owned());
    let e = stream_error(bad).await;
    assert!(matches!(e, ModelError::Malformed { .. }), "{e:?}");
}

#[tokio::test]
async fn replies_are_bounded_by_the_http_limits() {
    let big = "x".repeat(10_000);
    let server = serve(vec![reply(json!([{"type": "text", "text": big}]), 1, 1)]).await;
    let model = AnthropicChatModel::new(
        AnthropicConfig::new(&server.base_url, "claude-test")
            .limits(HttpLimits::default().max_body_bytes(1_000)),
    )
    .unwrap();
    let request = ChatRequest::new([Arc::new(Message::user("hi"))]);
    let e = model.generate(&request).await.unwrap_err();
    assert!(
        matches!(
            e,
            ModelError::LimitExceeded {
                what: SizeLimit::Body,
                limit: 1_000,
                ..
            }
        ),
        "{e:?}"
    );
}

#[tokio::test]
async fn a_user_image_reaches_the_server_as_an_image_block() {
    let server = serve(vec![reply(
        json!([{"type": "text", "text": "A cat."}]),
        1,
        1,
    )])
    .await;
    let request = ChatRequest::new([Arc::new(
        Message::user("What is this?").with_image_base64("image/png", "iVBORw0KGgo="),
    )]);
    let answer = model(&server.base_url).generate(&request).await.unwrap();
    assert_eq!(answer.content, "A cat.");
    assert_eq!(
        server.received.lock().unwrap()[0].body["messages"][0]["content"][1],
        json!({"type": "image", "source":
            {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}})
    );
}

/// Against an independent implementation of the Messages API: LiteLLM's proxy serving
/// `/v1/messages` with an offline mock model (`mock_response`), the proxy `.ci/litellm.sh`
/// starts in CI (with `scripts/openai_compat/litellm.yaml`'s model `mock-text`). Locally it
/// skips with a note unless `AGENTFLOW_ANTHROPIC_COMPAT_URL=http://127.0.0.1:PORT` (and
/// `AGENTFLOW_ANTHROPIC_COMPAT_KEY`) point at such a proxy.
#[tokio::test]
async fn litellm_proxy_messages_endpoint() {
    let Some(url) = std::env::var("AGENTFLOW_ANTHROPIC_COMPAT_URL")
        .ok()
        .filter(|u| !u.is_empty())
    else {
        agentweave_runtime::testing::skip_missing_component(
            "the LiteLLM proxy",
            "set AGENTFLOW_ANTHROPIC_COMPAT_URL, or run scripts/openai_compat.sh",
        );
        return;
    };
    let mut config = AnthropicConfig::new(url, "mock-text");
    if let Ok(key) = std::env::var("AGENTFLOW_ANTHROPIC_COMPAT_KEY") {
        config = config.api_key(key);
    }
    let model = AnthropicChatModel::new(config).unwrap();
    let request = ChatRequest::new([
        Arc::new(Message::system("You answer about orders.")),
        Arc::new(Message::user("What is order 42?")),
    ]);
    let whole = model.generate(&request).await.unwrap();
    assert_eq!(whole.content, "Order 42 is an electric kettle.");
    // Streamed (the proxy's mock answers whole; the client takes either form).
    let chunks: Vec<Message> = model
        .stream(&request)
        .await
        .unwrap()
        .map(|c| c.unwrap())
        .collect()
        .await;
    assert_eq!(
        Message::concat(chunks.iter()).content,
        "Order 42 is an electric kettle."
    );
    let usage = model.usage();
    assert_eq!(usage.calls, 2);
    assert!(
        usage.input_tokens > 0 && usage.output_tokens > 0,
        "{usage:?}"
    );
}
