//! The `otel` feature: agentflow's spans reach OpenTelemetry with their GenAI attributes, their
//! names and status, nested as agent > chat / execute_tool (in-memory exporter).

use agentflow::model::{ScriptStep, ScriptedModel, Usage};
use agentflow::otel::{self, InMemorySpanExporter, SpanData};
use agentflow::prelude::*;
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

#[test]
fn spans_export_with_genai_attributes_nested_under_the_agent() {
    let exporter = InMemorySpanExporter::default();
    let provider = otel::in_memory_provider(exporter.clone(), "test");
    let subscriber = tracing_subscriber::registry().with(otel::layer(&provider));
    tracing::subscriber::with_default(subscriber, || {
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
        let events: Vec<_> = rt.block_on(Runner::new(FlowAgent::new(agent)).query("x").collect());
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
            "agent"
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
