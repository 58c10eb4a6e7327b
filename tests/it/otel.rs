//! The `otel` feature: agentflow's spans reach OpenTelemetry with their GenAI attributes, their
//! names and status, nested as agent > chat / execute_tool (in-memory exporter).

use agentweave::model::{ScriptStep, ScriptedModel, Usage};
use agentweave::otel::{self, InMemorySpanExporter, SpanData};
use agentweave::prelude::*;
use futures::StreamExt;
use opentelemetry::trace::Status;
use opentelemetry::Value;
use tracing_subscriber::layer::SubscriberExt;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Order {
    /// The order number.
    order_id: u32,
}

fn attribute<'a>(span: &'a SpanData, key: &str) -> Option<&'a Value> {
    span.attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| &kv.value)
}

/// Runs `body` with `subscriber` as this thread's default while other tests run on other
/// threads with none. tracing caches one interest per callsite for the process and, while only
/// one dispatcher is alive, asks the registering thread's default alone: a callsite first hit
/// by another test's thread would be cached as "never" (and the global level filter set to
/// off). A second dispatcher alive for the whole process makes it ask every live one.
fn with_subscriber<S>(subscriber: S, body: impl FnOnce())
where
    S: tracing::Subscriber + Send + Sync + 'static,
{
    static KEEPER: std::sync::OnceLock<tracing::Dispatch> = std::sync::OnceLock::new();
    KEEPER.get_or_init(|| tracing::Dispatch::new(tracing::subscriber::NoSubscriber::default()));
    tracing::subscriber::with_default(subscriber, || {
        tracing::callsite::rebuild_interest_cache();
        body()
    });
}

#[test]
fn spans_export_with_genai_attributes_nested_under_the_agent() {
    let exporter = InMemorySpanExporter::default();
    let provider = otel::in_memory_provider(exporter.clone(), "test");
    let subscriber = tracing_subscriber::registry().with(otel::layer(&provider));
    with_subscriber(subscriber, || {
        let agent = ChatModelAgent::builder(
            "refund",
            ScriptedModel::rules()
                .after_tool(
                    "lookup_order",
                    ScriptStep::text("Done.").with_usage(Usage::new(30, 3)),
                )
                .otherwise(
                    ScriptStep::tool_call("lookup_order", serde_json::json!({"order_id": 42}))
                        .with_usage(Usage::new(20, 2)),
                )
                .named("refund-model"),
        )
        .tool(tool_fn(
            "lookup_order",
            "Looks up an order.",
            |o: Order| async move {
                Err::<String, _>(format!("the database is down (order {})", o.order_id))
            },
        ))
        .build()
        .unwrap();
        // A tokio runtime: the simple span processor exports with `futures`' `block_on`, which
        // cannot run inside `futures`' own executor.
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let events: Vec<_> = rt.block_on(Runner::new(FlowAgent::new(agent)).run("x").collect());
        assert_eq!(events.len(), 3);
    });
    provider.force_flush().unwrap();
    let spans = exporter.get_finished_spans().unwrap();
    let names: Vec<&str> = spans.iter().map(|s| s.name.as_ref()).collect();
    // Finished spans, in the order they ended.
    assert_eq!(
        names,
        [
            "chat refund-model",
            "execute_tool lookup_order",
            "chat refund-model",
            "invoke_agent refund"
        ]
    );
    let agent = &spans[3];
    for child in &spans[..3] {
        assert_eq!(child.parent_span_id, agent.span_context.span_id());
        assert_eq!(child.span_context.trace_id(), agent.span_context.trace_id());
    }
    let chat = &spans[0];
    assert_eq!(
        attribute(chat, "gen_ai.operation.name"),
        Some(&Value::from("chat"))
    );
    assert_eq!(
        attribute(chat, "gen_ai.request.model"),
        Some(&Value::from("refund-model"))
    );
    assert_eq!(
        attribute(chat, "gen_ai.usage.input_tokens"),
        Some(&Value::I64(20))
    );
    assert_eq!(
        attribute(chat, "gen_ai.usage.output_tokens"),
        Some(&Value::I64(2))
    );
    assert_eq!(
        attribute(chat, "agentflow.run_path"),
        Some(&Value::from("refund"))
    );
    assert_eq!(chat.span_kind, opentelemetry::trace::SpanKind::Client);
    let tool = &spans[1];
    assert_eq!(
        attribute(tool, "gen_ai.tool.name"),
        Some(&Value::from("lookup_order"))
    );
    assert_eq!(
        attribute(tool, "gen_ai.tool.call.id"),
        Some(&Value::from("call_1_1"))
    );
    let Status::Error { description } = &tool.status else {
        panic!(
            "the failed tool call has an error status: {:?}",
            tool.status
        );
    };
    assert!(
        description.contains("the database is down"),
        "{description}"
    );
    assert_eq!(chat.status, Status::Unset);
}

/// Reads one HTTP request from `stream` (headers, then `content-length` bytes) and answers 200.
fn answer_one_request(mut stream: std::net::TcpStream) -> (String, Vec<u8>) {
    use std::io::{Read, Write};
    let mut data = Vec::new();
    let mut buf = [0u8; 4096];
    let head_end = loop {
        let n = stream.read(&mut buf).unwrap();
        assert!(n > 0, "the exporter closed the connection early");
        data.extend_from_slice(&buf[..n]);
        if let Some(i) = data.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
    };
    let head = String::from_utf8_lossy(&data[..head_end]).to_lowercase();
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .map(|v| v.trim().parse().unwrap())
        .unwrap_or(0);
    while data.len() < head_end + length {
        let n = stream.read(&mut buf).unwrap();
        assert!(n > 0, "the exporter closed the connection mid-body");
        data.extend_from_slice(&buf[..n]);
    }
    stream
        .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
        .unwrap();
    (head, data[head_end..].to_vec())
}

#[test]
fn the_otlp_exporter_posts_spans_to_a_collector_and_takes_an_https_endpoint() {
    // An https collector: the exporter's TLS client needs a crypto provider, which
    // `otlp_provider` installs (without one, building the client panicked in its own thread).
    let https = otel::otlp_provider("https://127.0.0.1:9/v1/traces", "desk");
    assert!(https.is_ok(), "{:?}", https.err());

    // A collector on loopback gets the batch as OTLP protobuf when the provider shuts down.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let collector = std::thread::spawn(move || answer_one_request(listener.accept().unwrap().0));
    let provider = otel::otlp_provider(&format!("http://{addr}/v1/traces"), "refund-desk").unwrap();
    let subscriber = tracing_subscriber::registry().with(otel::layer(&provider));
    with_subscriber(subscriber, || {
        tracing::info_span!("invoke_agent refund").in_scope(|| {});
    });
    provider.shutdown().unwrap();
    let (head, body) = collector.join().unwrap();
    assert!(head.starts_with("post /v1/traces "), "{head}");
    assert!(
        head.contains("content-type: application/x-protobuf"),
        "{head}"
    );
    let has = |needle: &[u8]| body.windows(needle.len()).any(|w| w == needle);
    assert!(has(b"refund-desk"), "the service name is in the batch");
    assert!(has(b"invoke_agent refund"), "the span is in the batch");
}
