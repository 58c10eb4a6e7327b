// Its own test binary, not a module of tests/it: it sets a process-wide environment variable
// (`std::env::set_var`), which other tests of a shared binary could read while it changes.
//! `OpenAiChatModel` against a small HTTP/1.1 server on 127.0.0.1 that speaks the
//! chat-completions protocol, seen as a user sees it: through a `ChatModelAgent` run.
//!
//! Run with `cargo test -p agentweave-runtime --features openai --test openai`.
#![cfg(feature = "openai")]

mod support;

use std::sync::Arc;
use std::time::Duration;

use agentweave_runtime::model::{
    ModelError, OpenAiChatModel, OpenAiConfig, RetryPolicy, TimeoutKind,
};
use agentweave_runtime::{
    AgentEvent, ChatAgentError, ChatModelAgent, EventOutput, FlowAgent, Message,
};
use futures::StreamExt;
use serde_json::{json, Value};
use support::model_server::{self, Server, SSE_HEAD};
use support::{fast, show};
use tokio::net::TcpListener;

/// Answers each connection with the next canned response (written in the given pieces), then
/// with HTTP 500.
async fn serve(responses: Vec<Vec<String>>) -> Server {
    let exhausted = raw(
        "500 Internal Server Error",
        "application/json",
        r#"{"error":{"message":"the test server has no more responses"}}"#,
    );
    model_server::serve("/v1", responses, exhausted).await
}

/// A whole response, the body delimited by the end of the connection.
fn raw(status: &str, content_type: &str, body: &str) -> String {
    model_server::response(status, &[("Content-Type", content_type)], body)
}

fn completion(message: Value) -> Vec<String> {
    let body = json!({
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "test-model",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}]
    });
    vec![raw("200 OK", "application/json", &body.to_string())]
}

/// An SSE response: the head, then one piece per `data:` event.
fn sse(events: &[Value], done: bool) -> Vec<String> {
    let mut pieces = vec![SSE_HEAD.to_owned()];
    pieces.extend(events.iter().map(|e| format!("data: {e}\n\n")));
    if done {
        pieces.push("data: [DONE]\n\n".to_owned());
    }
    pieces
}

fn delta(delta: Value, finish: Option<&str>) -> Value {
    json!({"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
}

fn agent(base_url: &str, retry: RetryPolicy) -> FlowAgent {
    let model = OpenAiChatModel::new(OpenAiConfig::new(base_url, "test-model").api_key("test-key"))
        .unwrap();
    support::clerk(model, retry)
}

async fn line(e: &AgentEvent) -> String {
    let mut s = e.run_path().to_string();
    match &e.output {
        Some(EventOutput::Message(m)) => s.push_str(&format!(" {}", show(m))),
        Some(EventOutput::Stream(stream)) => {
            let mut reader = stream.fork();
            let mut parts = Vec::new();
            while let Some(chunk) = reader.next().await {
                parts.push(match chunk {
                    Ok(c) => show(&c),
                    Err(e) => format!("error: {}", e.message),
                });
            }
            s.push_str(&format!(" stream[{}]", parts.join(" | ")));
        }
        _ => {}
    }
    if let Some(err) = &e.error {
        s.push_str(&format!(" error: {err}"));
    }
    s
}

/// Runs the agent on one question; returns the event lines, the session's record and the
/// events themselves.
async fn run(flow: FlowAgent, streaming: bool) -> (Vec<String>, Vec<String>, Vec<AgentEvent>) {
    let (session, events) = support::run_question(flow, "What is order 42?", streaming).await;
    let mut lines = Vec::new();
    for e in &events {
        lines.push(line(e).await);
    }
    let mut record = Vec::new();
    for e in session.events() {
        record.push(match e.message().await.unwrap() {
            Some(m) => format!("{} {}", e.run_path(), show(&m)),
            None => e.run_path().to_string(),
        });
    }
    (lines, record, events)
}

fn tool_call_message() -> Value {
    json!({
        "role": "assistant",
        "content": null,
        "tool_calls": [{
            "id": "call_abc",
            "type": "function",
            "function": {"name": "lookup_order", "arguments": "{\"order_id\":42}"}
        }]
    })
}

#[tokio::test]
async fn non_streaming_tool_calling_round_trip() {
    let server = serve(vec![
        completion(tool_call_message()),
        completion(json!({"role": "assistant", "content": "Order 42 is a kettle."})),
    ])
    .await;
    let (lines, record, _) = run(agent(&server.base_url, fast(0)), false).await;
    let expected = [
        r#"clerk assistant:  [call call_abc lookup_order {"order_id":42}]"#,
        "clerk tool: order 42: a kettle [result of call_abc]",
        "clerk assistant: Order 42 is a kettle.",
    ];
    assert_eq!(lines, expected);
    assert_eq!(record, expected);

    let received = server.received.lock().unwrap().clone();
    assert_eq!(received.len(), 2);
    assert_eq!(
        received[0].request_line,
        "POST /v1/chat/completions HTTP/1.1"
    );
    assert_eq!(
        received[0].header("authorization").as_deref(),
        Some("Bearer test-key")
    );
    assert_eq!(
        received[0].body,
        json!({
            "model": "test-model",
            "messages": [
                {"role": "system", "content": "You look up orders."},
                {"role": "user", "content": "What is order 42?"}
            ],
            "tools": [{
                "type": "function",
                "function": {
                    "name": "lookup_order",
                    "description": "Finds an order.",
                    "parameters": {
                        "type": "object",
                        "properties": {"order_id": {
                            "description": "The order number.",
                            "type": "integer", "format": "uint64", "minimum": 0
                        }},
                        "required": ["order_id"]
                    }
                }
            }],
            "stream": false
        })
    );
    assert_eq!(
        received[1].body["messages"],
        json!([
            {"role": "system", "content": "You look up orders."},
            {"role": "user", "content": "What is order 42?"},
            {"role": "assistant", "content": null, "tool_calls": [{
                "id": "call_abc", "type": "function",
                "function": {"name": "lookup_order", "arguments": "{\"order_id\":42}"}
            }]},
            {"role": "tool", "content": "order 42: a kettle", "tool_call_id": "call_abc"}
        ])
    );
}

#[tokio::test]
async fn streaming_merges_tool_calls_split_across_sse_chunks() {
    let server = serve(vec![
        sse(
            &[
                delta(json!({"role": "assistant", "content": ""}), None),
                delta(
                    json!({"tool_calls": [{"index": 0, "id": "call_abc", "type": "function",
                        "function": {"name": "lookup_order", "arguments": ""}}]}),
                    None,
                ),
                delta(
                    json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"order"}}]}),
                    None,
                ),
                delta(
                    json!({"tool_calls": [{"index": 0, "function": {"arguments": "_id\":42}"}}]}),
                    None,
                ),
                delta(json!({}), Some("tool_calls")),
            ],
            true,
        ),
        sse(
            &[
                delta(json!({"role": "assistant", "content": "Order 42"}), None),
                delta(json!({"content": " is a kettle."}), None),
                delta(json!({}), Some("stop")),
            ],
            true,
        ),
    ])
    .await;
    let (lines, record, _) = run(agent(&server.base_url, fast(0)), true).await;
    assert_eq!(
        lines,
        [
            concat!(
                "clerk stream[assistant:  [call call_abc lookup_order ]",
                r#" | assistant:  [call   {"order]"#,
                r#" | assistant:  [call   _id":42}]]"#
            ),
            "clerk tool: order 42: a kettle [result of call_abc]",
            "clerk stream[assistant: Order 42 | assistant:  is a kettle.]",
        ]
    );
    assert_eq!(
        record,
        [
            r#"clerk assistant:  [call call_abc lookup_order {"order_id":42}]"#,
            "clerk tool: order 42: a kettle [result of call_abc]",
            "clerk assistant: Order 42 is a kettle.",
        ]
    );
    let received = server.received.lock().unwrap().clone();
    assert_eq!(received[0].body["stream"], json!(true));
    assert_eq!(
        received[1].body["messages"][2]["tool_calls"][0]["function"]["arguments"],
        json!("{\"order_id\":42}")
    );
}

#[tokio::test]
async fn http_429_is_retried_and_the_failed_attempt_leaves_no_trace() {
    let server = serve(vec![
        vec![model_server::response(
            "429 Too Many Requests",
            &[("Content-Type", "application/json"), ("Retry-After", "0")],
            &json!({"error": {"message": "Rate limit reached", "type": "requests"}}).to_string(),
        )],
        completion(json!({"role": "assistant", "content": "Order 42 is a kettle."})),
    ])
    .await;
    let (lines, record, _) = run(agent(&server.base_url, fast(2)), false).await;
    assert_eq!(lines, ["clerk assistant: Order 42 is a kettle."]);
    assert_eq!(record, ["clerk assistant: Order 42 is a kettle."]);
    let received = server.received.lock().unwrap().clone();
    assert_eq!(received.len(), 2);
    assert_eq!(received[0].body, received[1].body);
}

#[tokio::test]
async fn a_stream_that_breaks_off_is_retried_and_only_the_retry_is_recorded() {
    let server = serve(vec![
        // No finish_reason, no [DONE]: the connection just ends.
        sse(
            &[delta(
                json!({"role": "assistant", "content": "Order"}),
                None,
            )],
            false,
        ),
        sse(
            &[
                delta(json!({"role": "assistant", "content": "Order 42"}), None),
                delta(json!({"content": " is a kettle."}), Some("stop")),
            ],
            true,
        ),
    ])
    .await;
    let (lines, record, _) = run(agent(&server.base_url, fast(1)), true).await;
    assert_eq!(
        lines,
        [
            "clerk stream[assistant: Order | error: model 'test-model' stream broke off part-way: \
             the stream ended before the reply was complete (no finish_reason and no [DONE]); \
             agent 'clerk' will retry (attempt 2 of 2)]",
            "clerk stream[assistant: Order 42 | assistant:  is a kettle.]",
        ]
    );
    assert_eq!(record, ["clerk assistant: Order 42 is a kettle."]);
}

#[tokio::test]
async fn a_malformed_body_is_a_clear_typed_error() {
    let server = serve(vec![vec![raw(
        "200 OK",
        "application/json",
        "this is not json",
    )]])
    .await;
    let (lines, _, events) = run(agent(&server.base_url, fast(3)), false).await;
    assert_eq!(
        lines,
        [
            "clerk error: agent 'clerk' got no answer from its model after 1 attempt(s): model \
          'test-model' sent a reply that is not a valid chat completion: expected ident at line 1 \
          column 2; the body starts: this is not json; check that the server speaks the \
          OpenAI-compatible protocol"
        ]
    );
    let error = events[0].error.as_ref().unwrap();
    let chat = error
        .chat_agent_error()
        .unwrap_or_else(|| panic!("not a ChatModelAgent's error: {error:?}"));
    assert!(matches!(
        chat,
        ChatAgentError::Model {
            attempts: 1,
            source: ModelError::Malformed { .. },
            ..
        }
    ));
    // Not retried.
    assert_eq!(server.received.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn a_malformed_stream_chunk_is_a_clear_typed_error() {
    let mut pieces = sse(
        &[delta(json!({"role": "assistant", "content": "Hi"}), None)],
        false,
    );
    pieces.push("data: {not json}\n\n".to_owned());
    let server = serve(vec![pieces]).await;
    let (lines, record, _) = run(agent(&server.base_url, fast(3)), true).await;
    assert_eq!(
        lines,
        [
            "clerk stream[assistant: Hi | error: model 'test-model' sent a reply that is not a \
             valid chat completion: a stream chunk is not valid: key must be a string at line 1 \
             column 2; the chunk starts: {not json}; check that the server speaks the \
             OpenAI-compatible protocol; agent 'clerk' is giving up]",
            "clerk error: agent 'clerk' got no answer from its model after 1 attempt(s): model \
             'test-model' sent a reply that is not a valid chat completion: a stream chunk is not \
             valid: key must be a string at line 1 column 2; the chunk starts: {not json}; check \
             that the server speaks the OpenAI-compatible protocol",
        ]
    );
    // The error event is recorded; the broken stream is not.
    assert_eq!(record, ["clerk"]);
}

#[tokio::test]
async fn an_http_error_reports_the_servers_message() {
    let server = serve(vec![vec![raw(
        "400 Bad Request",
        "application/json",
        r#"{"error":{"message":"Invalid 'messages': empty array","type":"invalid_request_error"}}"#,
    )]])
    .await;
    let (lines, _, _) = run(agent(&server.base_url, fast(3)), false).await;
    assert_eq!(
        lines,
        [
            "clerk error: agent 'clerk' got no answer from its model after 1 attempt(s): model \
          'test-model' answered HTTP 400: Invalid 'messages': empty array"
        ]
    );
}

#[tokio::test]
async fn an_unreachable_server_is_a_connection_error() {
    // Bind, learn the port, close: nothing listens there any more.
    let port = TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let (_, _, events) = run(
        agent(&format!("http://127.0.0.1:{port}/v1"), fast(1)),
        false,
    )
    .await;
    assert_eq!(events.len(), 1);
    let Some(inner) = &events[0].error else {
        panic!("expected an error event, got {:?}", events[0]);
    };
    match inner
        .chat_agent_error()
        .expect("a ChatModelAgent's own error")
    {
        ChatAgentError::Model {
            agent,
            attempts,
            source: ModelError::Connection { model, message },
        } => {
            assert_eq!((&**agent, *attempts, &**model), ("clerk", 2, "test-model"));
            assert!(
                message.starts_with(&format!(
                    "POST http://127.0.0.1:{port}/v1/chat/completions: "
                )),
                "{message}"
            );
        }
        other => panic!("expected a connection error, got {other:?}"),
    }
}

#[tokio::test]
async fn configuration_comes_from_the_usual_environment_variables() {
    let server = serve(vec![completion(
        json!({"role": "assistant", "content": "Hello."}),
    )])
    .await;
    // The only test in this binary that touches the environment.
    std::env::set_var("OPENAI_BASE_URL", &server.base_url);
    std::env::set_var("OPENAI_API_KEY", "env-key");
    std::env::set_var("OPENAI_MODEL", "env-model");
    let config = OpenAiConfig::from_env();
    assert_eq!(config.base_url, server.base_url);
    assert_eq!(config.model, "env-model");
    let model = OpenAiChatModel::new(config).unwrap();
    let agent = ChatModelAgent::builder("greeter", model).build().unwrap();
    let (lines, _, _) = run(FlowAgent::new(agent), false).await;
    assert_eq!(lines, ["greeter assistant: Hello."]);
    let received = server.received.lock().unwrap().clone();
    assert_eq!(
        received[0].header("authorization").as_deref(),
        Some("Bearer env-key")
    );
    assert_eq!(received[0].body["model"], json!("env-model"));
    assert_eq!(received[0].body.get("tools"), None);
}

/// The frame the LiteLLM proxy (1.108) sends when its model fails part-way through a stream:
/// `json.dumps` spacing, a null `type`, a string `code`, and a message carrying the Python
/// traceback; then the connection ends without `[DONE]`.
fn litellm_midstream_error_frame() -> String {
    let mut traceback = String::from(
        "litellm.APIConnectionError: the model broke off mid-stream\nTraceback (most recent call \
         last):\n",
    );
    for k in 0..20 {
        traceback.push_str(&format!(
            "  File \"site-packages/litellm/litellm_core_utils/streaming_handler.py\", line {k}, in \
             __anext__\n    async for chunk in self.completion_stream:\n"
        ));
    }
    traceback.push_str("RuntimeError: the model broke off mid-stream\n");
    let error = json!({"message": traceback, "type": null, "param": null, "code": "500"});
    format!("data: {{\"error\": {error}}}\n\n")
}

#[tokio::test]
async fn a_servers_long_midstream_error_is_cut_like_an_http_error_body() {
    let mut pieces = sse(
        &[delta(json!({"role": "assistant", "content": "Ord"}), None)],
        false,
    );
    pieces.push(litellm_midstream_error_frame());
    let server = serve(vec![pieces]).await;
    let (_, record, events) = run(agent(&server.base_url, fast(0)), true).await;
    let Some(inner) = &events.last().unwrap().error else {
        panic!("expected an error event, got {events:?}");
    };
    let ChatAgentError::Model {
        source: ModelError::StreamInterrupted { message, .. },
        ..
    } = inner
        .chat_agent_error()
        .expect("a ChatModelAgent's own error")
    else {
        panic!("expected an interrupted stream, got {inner:?}");
    };
    assert!(
        message.starts_with(
            "the server reported an error: litellm.APIConnectionError: the model broke off \
             mid-stream\nTraceback"
        ),
        "{message}"
    );
    // 500 characters of the server's message, then an ellipsis.
    let server_part = message
        .strip_prefix("the server reported an error: ")
        .unwrap();
    assert_eq!(server_part.chars().count(), 501, "{message}");
    assert!(server_part.ends_with('…'));
    assert_eq!(record, ["clerk"]);
}

#[tokio::test]
async fn a_call_past_the_timeout_says_so() {
    // Accepts the connection, reads nothing, never answers.
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base_url = format!("http://{}/v1", listener.local_addr().unwrap());
    let _held = tokio::spawn(async move {
        let mut sockets = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            sockets.push(socket);
        }
    });
    let model = OpenAiChatModel::new(
        OpenAiConfig::new(&base_url, "test-model").timeout(Duration::from_millis(200)),
    )
    .unwrap();
    let request =
        agentweave_runtime::ChatRequest::new([Arc::new(Message::user("What is order 42?"))]);
    let error = agentweave_runtime::ChatModel::generate(&model, &request)
        .await
        .unwrap_err();
    let ModelError::Timeout { kind, limit, .. } = &error else {
        panic!("expected a timeout, got {error:?}");
    };
    assert_eq!(
        (*kind, *limit),
        (TimeoutKind::Total, Duration::from_millis(200))
    );
    assert_eq!(
        error.to_string(),
        "model 'test-model' timed out: no end of the call within 200ms \
         (HttpLimits::total_timeout); raise it if the server is slow but healthy"
    );
    assert!(error.retryable());
}

#[tokio::test]
async fn litellms_529_without_a_reason_phrase_is_retried() {
    // The LiteLLM proxy's answer when its model is overloaded: status 529, an empty reason
    // phrase, a JSON error body with a string `code`.
    let body = json!({"error": {
        "message": "litellm.APIError: APIError: OpenAIException - overloaded",
        "type": "internal_server_error", "param": null, "code": "529"
    }});
    let server = serve(vec![
        vec![raw("529 ", "application/json", &body.to_string())],
        completion(json!({"role": "assistant", "content": "Order 42 is a kettle."})),
    ])
    .await;
    let (lines, record, _) = run(agent(&server.base_url, fast(1)), false).await;
    assert_eq!(lines, ["clerk assistant: Order 42 is a kettle."]);
    assert_eq!(record, lines);
    assert_eq!(server.received.lock().unwrap().len(), 2);
}
