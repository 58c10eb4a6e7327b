//! agentflow's spans exported to OpenTelemetry over OTLP (cargo feature `otel`).
//!
//! ```text
//! cargo run --example otel --features otel
//! OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=http://localhost:4318/v1/traces \
//!     cargo run --example otel --features otel
//! ```
//!
//! Runs the refund desk offline (scripted models), with an OTLP/HTTP exporter configured for a
//! collector (Jaeger, Tempo, an OpenTelemetry Collector: anything listening for OTLP over HTTP;
//! default `http://localhost:4318/v1/traces`). The trace holds one `agent` span per agent run,
//! and under it a `chat {model}` span per model call and an `execute_tool {tool}` span per tool
//! call, with the GenAI attributes (`gen_ai.operation.name`, `gen_ai.request.model`,
//! `gen_ai.usage.input_tokens`, `gen_ai.tool.name`, ...). With no collector running, the export
//! fails and the spans are dropped; the run itself is the same.

use agentweave::model::{ScriptStep, ScriptedModel, Usage};
use agentweave::otel;
use agentweave::prelude::*;
use futures::StreamExt;
use tracing_subscriber::layer::SubscriberExt;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Order {
    /// The order number.
    order_id: u32,
}

fn desk() -> Result<FlowAgent, Box<dyn std::error::Error>> {
    let triage = ChatModelAgent::builder(
        "triage",
        ScriptedModel::rules()
            .otherwise(ScriptStep::transfer("refund").with_usage(Usage::new(52, 9)))
            .named("triage-model"),
    )
    .build()?;
    let refund = ChatModelAgent::builder(
        "refund",
        ScriptedModel::rules()
            .after_tool(
                "lookup_order",
                ScriptStep::text("Refunded 39 EUR.").with_usage(Usage::new(88, 7)),
            )
            .otherwise(
                ScriptStep::tool_call("lookup_order", serde_json::json!({"order_id": 42}))
                    .with_usage(Usage::new(70, 11)),
            )
            .named("refund-model"),
    )
    .tool(tool_fn("lookup_order", "Looks up an order.", |o: Order| async move {
        Ok::<_, String>(format!("order {}: a kettle, 39 EUR", o.order_id))
    }))
    .build()?;
    Ok(set_sub_agents(
        FlowAgent::new(triage),
        [FlowAgent::new(refund)],
    )?)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let endpoint = std::env::var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        .unwrap_or_else(|_| "http://localhost:4318/v1/traces".to_owned());
    let provider = otel::otlp_provider(&endpoint, "agentflow-example")?;
    let subscriber = tracing_subscriber::registry().with(otel::layer(&provider));
    let _guard = tracing::subscriber::set_default(subscriber);

    let mut events = Runner::new(desk()?).run("I want a refund for order 42");
    while let Some(event) = events.next().await {
        if let Some(m) = event.message_output() {
            println!("[{}] {}: {}", event.run_path(), m.role, m.content);
        }
    }
    drop(_guard);
    match provider.shutdown() {
        Ok(()) => println!("spans exported to {endpoint}"),
        Err(e) => {
            println!("spans not exported ({e}); is an OTLP collector listening at {endpoint}?")
        }
    }
    Ok(())
}
