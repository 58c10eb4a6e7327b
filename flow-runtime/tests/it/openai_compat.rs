//! `OpenAiChatModel` against a real, independent OpenAI-compatible server: the LiteLLM proxy
//! with the offline models of `scripts/openai_compat/litellm.yaml` (mocks and a scripted desk,
//! no weights, no network).
//!
//! `.ci/run` (through `.ci/litellm.sh`) and `scripts/openai_compat.sh` install and start the
//! server, then run `cargo test -p agentweave-runtime --features openai --test it -- openai_compat::` with
//! `AGENTFLOW_OPENAI_COMPAT_URL` (the base URL, `…/v1`) and `AGENTFLOW_OPENAI_COMPAT_KEY` (the
//! proxy's key) set. Without the URL each test is skipped with a message
//! ([`skip_missing_component`]), or fails in CI (`AGENTFLOW_REQUIRE_COMPONENTS=1`).
#![cfg(feature = "openai")]

use crate::support;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use agentweave_runtime::model::{
    ModelError, OpenAiChatModel, OpenAiConfig, RetryPolicy, TimeoutKind, Usage,
};
use agentweave_runtime::testing::skip_missing_component;
use agentweave_runtime::{
    AgentEvent, ChatAgentError, ChatModel, ChatModelAgent, ChatRequest, EventOutput, FlowAgent,
    Message, Role, Runner, Session,
};
use futures::StreamExt;

/// The model at the server the script started, or `None` (and a note) when none is set up.
fn model(name: &str) -> Option<OpenAiChatModel> {
    let Some(url) = std::env::var("AGENTFLOW_OPENAI_COMPAT_URL")
        .ok()
        .filter(|u| !u.is_empty())
    else {
        skip_missing_component(
            "the LiteLLM proxy",
            "set AGENTFLOW_OPENAI_COMPAT_URL, or run scripts/openai_compat.sh",
        );
        return None;
    };
    let mut config = OpenAiConfig::new(url, name).timeout(Duration::from_secs(60));
    if let Ok(key) = std::env::var("AGENTFLOW_OPENAI_COMPAT_KEY") {
        config = config.api_key(key);
    }
    Some(OpenAiChatModel::new(config).unwrap())
}

fn ask(text: &str) -> ChatRequest {
    ChatRequest::new([Arc::new(Message::user(text))])
}

/// A message on one line, with call ids replaced by `#1`, `#2`, … in order of appearance (the
/// server makes them up).
fn show(m: &Message, ids: &mut HashMap<String, usize>) -> String {
    let mut id = |id: &str| {
        if id.is_empty() {
            return String::new();
        }
        let next = ids.len() + 1;
        format!("#{}", ids.entry(id.to_owned()).or_insert(next))
    };
    let mut s = format!("{}: {}", m.role, m.content);
    for c in &m.tool_calls {
        let index = c.index.map(|i| format!("@{i} ")).unwrap_or_default();
        s.push_str(&format!(
            " [call {index}{} {} {}]",
            id(&c.id),
            c.name,
            c.arguments
        ));
    }
    if let Some(call) = &m.tool_call_id {
        s.push_str(&format!(" [result of {}]", id(call)));
    }
    s
}

/// Runs `flow` on `question`: the events as lines (a stream as its chunks) and the session's
/// record.
async fn run(flow: FlowAgent, question: &str, streaming: bool) -> (Vec<String>, Vec<String>) {
    let (session, events) = support::run_question(flow, question, streaming).await;
    let mut ids = HashMap::new();
    let mut lines = Vec::new();
    for e in &events {
        let mut s = e.run_path().to_string();
        match &e.output {
            Some(EventOutput::Message(m)) => s.push_str(&format!(" {}", show(m, &mut ids))),
            Some(EventOutput::Stream(stream)) => {
                let mut reader = stream.fork();
                let mut parts = Vec::new();
                while let Some(chunk) = reader.next().await {
                    parts.push(match chunk {
                        Ok(c) => show(&c, &mut ids),
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
        lines.push(s);
    }
    let mut ids = HashMap::new();
    let mut record = Vec::new();
    for e in session.events() {
        record.push(match e.message().await.unwrap() {
            Some(m) => format!("{} {}", e.run_path(), show(&m, &mut ids)),
            None => e.run_path().to_string(),
        });
    }
    (lines, record)
}

/// Runs the clerk ([`support::clerk`], no retries) on `question`, as [`run`] does.
async fn run_clerk(
    model: OpenAiChatModel,
    question: &str,
    streaming: bool,
) -> (Vec<String>, Vec<String>) {
    run(
        support::clerk(model, RetryPolicy::none()),
        question,
        streaming,
    )
    .await
}

/// Runs `agent` alone on `question`, checking that no event carries an error: the session
/// and the events.
async fn run_without_errors(
    agent: ChatModelAgent,
    question: &str,
    streaming: bool,
) -> (Arc<Session>, Vec<AgentEvent>) {
    let (session, events) = support::run_question(FlowAgent::new(agent), question, streaming).await;
    assert!(events.iter().all(|e| e.error.is_none()), "{events:?}");
    (session, events)
}

/// The chunks of a streamed answer to `question`, each one `Ok`.
async fn stream_chunks(model: &OpenAiChatModel, question: &str) -> Vec<Message> {
    model
        .stream(&ask(question))
        .await
        .unwrap()
        .map(|c| c.unwrap())
        .collect()
        .await
}

/// The model error an agent's error event carries.
fn model_error(lines_and_events: &[AgentEvent]) -> (u32, &ModelError) {
    let Some(inner) = &lines_and_events.last().unwrap().error else {
        panic!("expected an error event, got {lines_and_events:?}");
    };
    match inner
        .chat_agent_error()
        .expect("a ChatModelAgent's own error")
    {
        ChatAgentError::Model {
            attempts, source, ..
        } => (*attempts, source),
        other => panic!("expected a model error, got {other:?}"),
    }
}

#[tokio::test]
async fn plain_text_generate() {
    let Some(model) = model("mock-text") else {
        return;
    };
    let reply = model.generate(&ask("What is order 42?")).await.unwrap();
    assert_eq!(reply.role, Role::Assistant);
    assert_eq!(reply.content, "Order 42 is an electric kettle.");
    assert!(reply.tool_calls.is_empty());
}

#[tokio::test]
async fn plain_text_stream() {
    let Some(model) = model("mock-text") else {
        return;
    };
    let chunks = stream_chunks(&model, "What is order 42?").await;
    // LiteLLM's mock streams three characters a chunk; then comes the usage, alone.
    let pieces: Vec<&str> = chunks.iter().map(|c| c.content.as_str()).collect();
    assert_eq!(
        pieces,
        ["Ord", "er ", "42 ", "is ", "an ", "ele", "ctr", "ic ", "ket", "tle", ".", ""]
    );
    assert!(chunks.last().unwrap().usage.is_some());
    let whole = Message::concat(&chunks);
    assert_eq!(whole.role, Role::Assistant);
    assert_eq!(whole.content, "Order 42 is an electric kettle.");
}

#[tokio::test]
async fn a_mocked_tool_call_is_read_with_its_text() {
    let Some(model) = model("mock-tool") else {
        return;
    };
    // LiteLLM sends its default mock text beside the call, and finish_reason "stop".
    let reply = model.generate(&ask("What is order 42?")).await.unwrap();
    assert_eq!(
        show(&reply, &mut HashMap::new()),
        r#"assistant: This is a mock request [call #1 lookup_order {"order_id":42}]"#
    );
    assert_eq!(reply.tool_calls[0].id, "call_mock_1");
}

#[tokio::test]
async fn tool_call_round_trip_unstreamed() {
    let Some(model) = model("scripted-desk") else {
        return;
    };
    let (lines, record) = run_clerk(model, "What is order 42?", false).await;
    let expected = [
        r#"clerk assistant:  [call #1 lookup_order {"order_id": 42}]"#,
        "clerk tool: order 42: a kettle [result of #1]",
        "clerk assistant: Done: order 42: a kettle",
    ];
    assert_eq!(lines, expected);
    assert_eq!(record, expected);
}

#[tokio::test]
async fn tool_call_round_trip_streamed() {
    let Some(model) = model("scripted-desk") else {
        return;
    };
    let (lines, record) = run_clerk(model, "What is order 42?", true).await;
    assert_eq!(
        lines,
        [
            concat!(
                "clerk stream[assistant:  [call @0 #1 lookup_order ]",
                r#" | assistant:  [call @0   {"order_]"#,
                r#" | assistant:  [call @0   id": 42}]"#,
                // The usage, in a chunk of its own (`stream_options.include_usage`).
                " | assistant: ]"
            ),
            "clerk tool: order 42: a kettle [result of #1]",
            concat!(
                "clerk stream[assistant: Done | assistant: : or | assistant: der  | assistant: 42: ",
                " | assistant: a ke | assistant: ttle | assistant: ]"
            ),
        ]
    );
    // The recorded reply is the chunks merged: one whole call, which keeps its index.
    assert_eq!(
        record,
        [
            r#"clerk assistant:  [call @0 #1 lookup_order {"order_id": 42}]"#,
            "clerk tool: order 42: a kettle [result of #1]",
            "clerk assistant: Done: order 42: a kettle",
        ]
    );
}

#[tokio::test]
async fn two_streamed_tool_calls_in_one_reply_stay_apart() {
    let Some(model) = model("scripted-desk") else {
        return;
    };
    let (lines, record) = run_clerk(model, "What are orders 42 and 7?", true).await;
    assert_eq!(
        lines[0],
        concat!(
            "clerk stream[assistant:  [call @0 #1 lookup_order ]",
            r#" | assistant:  [call @0   {"order_]"#,
            r#" | assistant:  [call @0   id": 42}]"#,
            " | assistant:  [call @1 #2 lookup_order ]",
            r#" | assistant:  [call @1   {"order]"#,
            r#" | assistant:  [call @1   _id": 7}]"#,
            " | assistant: ]"
        )
    );
    assert_eq!(
        record,
        [
            concat!(
                r#"clerk assistant:  [call @0 #1 lookup_order {"order_id": 42}]"#,
                r#" [call @1 #2 lookup_order {"order_id": 7}]"#
            ),
            "clerk tool: order 42: a kettle [result of #1]",
            "clerk tool: order 7: a kettle [result of #2]",
            "clerk assistant: Done: order 42: a kettle; order 7: a kettle",
        ]
    );
}

#[tokio::test]
async fn an_unknown_model_is_a_typed_http_400() {
    let Some(model) = model("no-such-model") else {
        return;
    };
    for streamed in [false, true] {
        let error = if streamed {
            model.stream(&ask("Hi")).await.err().unwrap()
        } else {
            model.generate(&ask("Hi")).await.unwrap_err()
        };
        let ModelError::Http {
            model,
            status,
            body,
            ..
        } = &error
        else {
            panic!("expected an HTTP error, got {error:?}");
        };
        assert_eq!((&**model, *status), ("no-such-model", 400));
        assert!(
            body.contains("Invalid model name passed in model=no-such-model"),
            "{body}"
        );
        assert!(!error.retryable());
    }
}

#[tokio::test]
async fn a_wrong_key_is_a_typed_http_error() {
    let Some(model) = model("mock-text") else {
        return;
    };
    let model = OpenAiChatModel::new(model.config().clone().api_key("sk-not-the-key")).unwrap();
    let error = model.generate(&ask("Hi")).await.unwrap_err();
    let ModelError::Http { status, .. } = &error else {
        panic!("expected an HTTP error, got {error:?}");
    };
    assert!((400..500).contains(status), "{error}");
    assert!(!error.retryable());
}

#[tokio::test]
async fn a_rate_limit_is_retried_then_reported() {
    let Some(model) = model("mock-rate-limited") else {
        return;
    };
    let flow = support::clerk(model, support::fast(1));
    let events: Vec<AgentEvent> = Runner::new(flow).run("Hi").collect().await;
    let (attempts, error) = model_error(&events);
    assert_eq!(attempts, 2);
    let ModelError::Http { status, body, .. } = error else {
        panic!("expected an HTTP error, got {error:?}");
    };
    assert_eq!(*status, 429);
    assert!(body.contains("this is a mock rate limit error"), "{body}");
}

#[tokio::test]
async fn a_server_error_before_the_stream_is_a_retryable_http_error() {
    let Some(model) = model("mock-stream-error") else {
        return;
    };
    // LiteLLM answers its mock streaming error with HTTP 529 (no reason phrase) and a JSON body.
    let error = model.stream(&ask("Hi")).await.err().unwrap();
    let ModelError::Http { status, body, .. } = &error else {
        panic!("expected an HTTP error, got {error:?}");
    };
    assert_eq!(*status, 529);
    assert!(
        body.contains("This is a mock error raised mid-stream"),
        "{body}"
    );
    assert!(error.retryable());
}

#[tokio::test]
async fn a_stream_breaking_off_is_a_typed_interruption() {
    let Some(model) = model("scripted-desk") else {
        return;
    };
    let items: Vec<Result<Message, ModelError>> = model
        .stream(&ask("Please break off now."))
        .await
        .unwrap()
        .collect()
        .await;
    let texts: Vec<&str> = items
        .iter()
        .filter_map(|i| i.as_ref().ok())
        .map(|m| m.content.as_str())
        .collect();
    assert_eq!(texts, ["You ", "said", ": Pl"]);
    assert_eq!(items.len(), 4, "{items:?}");
    let Err(error @ ModelError::StreamInterrupted { message, .. }) = &items[3] else {
        panic!("expected an interruption, got {:?}", items[3]);
    };
    assert!(
        message.starts_with(
            "the server reported an error: litellm.APIConnectionError: the scripted model broke \
             off mid-stream\nTraceback"
        ),
        "{message}"
    );
    // LiteLLM's message goes on with a whole traceback: it is cut to 500 characters.
    assert!(message.chars().count() <= 531, "{message}");
    assert!(error.retryable());
}

#[tokio::test]
async fn a_pooled_connection_outliving_the_servers_keep_alive_still_works() {
    let Some(model) = model("mock-text") else {
        return;
    };
    // uvicorn, under LiteLLM, closes idle connections after 5 s: the second call must not fail
    // on the connection the pool kept.
    for _ in 0..2 {
        let reply = model.generate(&ask("Hi")).await.unwrap();
        assert_eq!(reply.content, "Order 42 is an electric kettle.");
        tokio::time::sleep(Duration::from_millis(5500)).await;
    }
    let reply = model.stream(&ask("Hi")).await.unwrap().count().await;
    assert_eq!(reply, 12, "eleven pieces of text and the usage");
}

#[tokio::test]
async fn a_call_past_the_timeout_says_so() {
    let Some(model) = model("mock-slow") else {
        return;
    };
    let patient = model.generate(&ask("Hi")).await.unwrap();
    assert_eq!(patient.content, "Slow, but here.");
    let config = model.config().clone().timeout(Duration::from_millis(500));
    let hasty = OpenAiChatModel::new(config).unwrap();
    let error = hasty.generate(&ask("Hi")).await.unwrap_err();
    let ModelError::Timeout { kind, limit, .. } = &error else {
        panic!("expected a timeout, got {error:?}");
    };
    assert_eq!(
        (*kind, *limit),
        (TimeoutKind::Total, Duration::from_millis(500))
    );
    assert!(error.retryable());
}

#[tokio::test]
async fn usage_is_read_from_plain_and_streamed_replies() {
    let Some(model) = model("mock-text") else {
        return;
    };
    // LiteLLM's mock reports fixed figures for a whole reply...
    let reply = model.generate(&ask("What is order 42?")).await.unwrap();
    assert_eq!(reply.usage.as_deref(), Some(&Usage::new(10, 20)));
    // ...and counts the tokens of a streamed one, in a last chunk (`include_usage`).
    let chunks = stream_chunks(&model, "What is order 42?").await;
    let whole = Message::concat(&chunks);
    let usage = whole.usage.expect("the streamed reply reports its usage");
    assert!(
        usage.input_tokens > 0 && usage.output_tokens > 0,
        "{usage:?}"
    );
    assert_eq!(usage.reasoning_tokens, Some(0));

    // Through an agent run: the events carry it and the session totals it.
    for streaming in [false, true] {
        let agent = ChatModelAgent::builder("clerk", model.clone())
            .build()
            .unwrap();
        let (session, _) = run_without_errors(agent, "Hi", streaming).await;
        let report = session.usage();
        assert_eq!(report.calls, 1, "streaming: {streaming}");
        assert_eq!(report.by_agent["clerk"].calls, 1);
        assert_eq!(report.by_model["mock-text"].usage, report.total);
        assert!(report.total.output_tokens > 0, "streaming: {streaming}");
    }
}

#[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
struct Verdict {
    /// Whether the refund is approved.
    approved: bool,
    /// The amount, in euros.
    amount_eur: f64,
    /// Which order.
    order: String,
}

#[tokio::test]
async fn structured_output_round_trip_through_response_format() {
    let Some(model) = model("scripted-desk") else {
        return;
    };
    for (streaming, question) in [
        (false, "Approve the refund?"),
        (true, "Approve the refund?"),
        // The desk's first answer is not JSON: the agent sends the error back and decodes the
        // second.
        (false, "bad json please"),
    ] {
        let agent = ChatModelAgent::builder("judge", model.clone())
            .output_type::<Verdict>()
            .build()
            .unwrap();
        let (session, events) = run_without_errors(agent, question, streaming).await;
        let verdict: Verdict = session.value("judge").unwrap().expect("a decoded verdict");
        assert_eq!(
            verdict,
            Verdict {
                approved: true,
                amount_eur: 42.0,
                order: "order 42".into()
            },
            "{question}, streaming: {streaming}"
        );
        let answers = events
            .iter()
            .filter(|e| {
                matches!(
                    e.output,
                    Some(EventOutput::Message(_)) | Some(EventOutput::Stream(_))
                )
            })
            .count();
        let expected = if question.contains("bad json") { 2 } else { 1 };
        assert_eq!(answers, expected, "{question}");
    }
}
