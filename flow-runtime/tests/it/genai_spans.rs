//! Model and tool calls are `tracing` spans under the agent's, with the OpenTelemetry GenAI
//! attribute names; errors are recorded on them; content only when asked for.

use crate::support;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use agentweave_runtime::model::{ScriptStep, ScriptedModel, Usage};
use agentweave_runtime::{tool_fn, ChatModelAgent, FlowAgent, ModelError, Runner};
use futures::StreamExt;
use schemars::JsonSchema;
use serde::Deserialize;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::Subscriber;
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;

/// A span as captured: its name, its parent's name, and its fields (as recorded last).
#[derive(Debug, Clone)]
struct Captured {
    name: String,
    parent: Option<String>,
    fields: BTreeMap<String, String>,
}

#[derive(Clone, Default)]
struct Spans(Arc<Mutex<Vec<(u64, Captured)>>>);

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
}

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Spans {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, cx: Context<'_, S>) {
        let mut fields = BTreeMap::new();
        attrs.record(&mut Fields(&mut fields));
        let parent = cx
            .span(id)
            .and_then(|s| s.parent())
            .map(|p| p.name().to_owned());
        self.0.lock().unwrap().push((
            id.into_u64(),
            Captured {
                name: attrs.metadata().name().to_owned(),
                parent,
                fields,
            },
        ));
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, _cx: Context<'_, S>) {
        let mut spans = self.0.lock().unwrap();
        if let Some((_, span)) = spans.iter_mut().rev().find(|(k, _)| *k == id.into_u64()) {
            values.record(&mut Fields(&mut span.fields));
        }
    }
}

#[derive(Deserialize, JsonSchema)]
struct Order {
    /// The order.
    order_id: u32,
}

fn capture(body: impl FnOnce()) -> Vec<Captured> {
    let spans = Spans::default();
    let subscriber = tracing_subscriber::registry().with(spans.clone());
    support::with_subscriber(subscriber, body);
    let got = spans
        .0
        .lock()
        .unwrap()
        .iter()
        .map(|(_, s)| s.clone())
        .collect();
    got
}

fn field<'a>(span: &'a Captured, name: &str) -> Option<&'a str> {
    span.fields.get(name).map(String::as_str)
}

fn desk(record_content: bool) -> FlowAgent {
    let refund = ChatModelAgent::builder(
        "refund",
        ScriptedModel::rules()
            .after_tool(
                "lookup_order",
                ScriptStep::text("Refunded.").with_usage(Usage::new(60, 4)),
            )
            .otherwise(ScriptStep::tool_call(
                "lookup_order",
                serde_json::json!({"order_id": 42}),
            ))
            .named("refund-model"),
    )
    .tool(tool_fn(
        "lookup_order",
        "Looks up an order.",
        |o: Order| async move {
            if o.order_id == 42 {
                Err::<String, _>("the order database is down".to_owned())
            } else {
                Ok(format!("order {}", o.order_id))
            }
        },
    ))
    .record_content(record_content)
    .build()
    .unwrap();
    support::triage_to(refund)
}

#[test]
fn model_and_tool_calls_are_spans_under_the_agent_with_genai_attributes() {
    let spans = capture(|| {
        let events: Vec<_> =
            futures::executor::block_on(Runner::new(desk(false)).run("refund").collect());
        assert_eq!(events.len(), 5, "{events:?}");
    });
    let tree: Vec<(String, Option<String>, Option<&str>)> = spans
        .iter()
        .map(|s| {
            (
                s.name.clone(),
                s.parent.clone(),
                field(s, "agentflow.run_path"),
            )
        })
        .collect();
    let agent = Some("invoke_agent".to_owned());
    assert_eq!(
        tree,
        [
            ("invoke_agent".into(), None, Some("triage")),
            ("chat".into(), agent.clone(), Some("triage")),
            ("invoke_agent".into(), None, Some("triage/refund")),
            ("chat".into(), agent.clone(), Some("triage/refund")),
            ("execute_tool".into(), agent.clone(), Some("triage/refund")),
            ("chat".into(), agent.clone(), Some("triage/refund")),
        ]
    );

    let triage = &spans[0];
    assert_eq!(field(triage, "otel.name"), Some("invoke_agent triage"));
    assert_eq!(field(triage, "gen_ai.operation.name"), Some("invoke_agent"));
    assert_eq!(field(triage, "gen_ai.agent.name"), Some("triage"));
    // Outside a thread, no conversation.
    assert!(spans
        .iter()
        .all(|s| field(s, "gen_ai.conversation.id").is_none()));

    let chat = &spans[1];
    assert_eq!(field(chat, "otel.name"), Some("chat triage-model"));
    assert_eq!(field(chat, "gen_ai.operation.name"), Some("chat"));
    // A scripted model is no provider the conventions name.
    assert_eq!(field(chat, "gen_ai.provider.name"), Some("_OTHER"));
    assert_eq!(field(chat, "gen_ai.request.model"), Some("triage-model"));
    assert_eq!(field(chat, "gen_ai.agent.name"), Some("triage"));
    assert_eq!(field(chat, "gen_ai.usage.input_tokens"), Some("100"));
    assert_eq!(field(chat, "gen_ai.usage.output_tokens"), Some("10"));
    assert_eq!(
        field(chat, "gen_ai.response.finish_reasons"),
        Some("tool_calls")
    );
    assert_eq!(
        field(&spans[5], "gen_ai.response.finish_reasons"),
        Some("stop")
    );
    assert_eq!(field(&spans[5], "gen_ai.usage.input_tokens"), Some("60"));

    let tool = &spans[4];
    assert_eq!(field(tool, "otel.name"), Some("execute_tool lookup_order"));
    assert_eq!(field(tool, "gen_ai.operation.name"), Some("execute_tool"));
    assert_eq!(field(tool, "gen_ai.tool.name"), Some("lookup_order"));
    assert_eq!(field(tool, "gen_ai.tool.call.id"), Some("call_1_1"));
    assert_eq!(field(tool, "gen_ai.tool.type"), Some("function"));
    // The tool failed: the error is on its span.
    assert_eq!(field(tool, "error.type"), Some("ToolError::Failed"));
    assert_eq!(field(tool, "otel.status_code"), Some("ERROR"));
    assert!(field(tool, "otel.status_description")
        .unwrap()
        .contains("the order database is down"));

    // No content by default.
    for s in &spans {
        for name in [
            "gen_ai.input.messages",
            "gen_ai.output.messages",
            "gen_ai.tool.call.arguments",
            "gen_ai.tool.call.result",
        ] {
            assert_eq!(field(s, name), None, "{} has {name}", s.name);
        }
    }
}

#[test]
fn content_is_recorded_only_when_the_agent_asks_for_it() {
    let spans = capture(|| {
        let _: Vec<_> =
            futures::executor::block_on(Runner::new(desk(true)).run("refund").collect());
    });
    // Only the refund agent asked.
    assert_eq!(field(&spans[1], "gen_ai.input.messages"), None);
    let chat = &spans[3];
    let input: serde_json::Value =
        serde_json::from_str(field(chat, "gen_ai.input.messages").unwrap()).unwrap();
    let said: Vec<&str> = input
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["content"].as_str())
        .collect();
    assert!(said.contains(&"refund"), "{said:?}");
    let output: serde_json::Value =
        serde_json::from_str(field(chat, "gen_ai.output.messages").unwrap()).unwrap();
    assert_eq!(output[0]["tool_calls"][0]["name"], "lookup_order");
    let tool = &spans[4];
    assert_eq!(
        field(tool, "gen_ai.tool.call.arguments"),
        Some(r#"{"order_id":42}"#)
    );
}

#[test]
fn a_failed_model_call_is_recorded_on_its_span() {
    let spans = capture(|| {
        let agent = ChatModelAgent::builder(
            "bot",
            ScriptedModel::new([ScriptStep::fail(ModelError::http("m", 401, "bad key"))]),
        )
        .build()
        .unwrap();
        let events: Vec<_> =
            futures::executor::block_on(Runner::new(FlowAgent::new(agent)).run("hi").collect());
        assert!(events[0].error.is_some());
    });
    let chat = &spans[1];
    assert_eq!(chat.name, "chat");
    assert_eq!(field(chat, "error.type"), Some("ModelError::Http"));
    assert_eq!(field(chat, "otel.status_code"), Some("ERROR"));
    assert!(field(chat, "otel.status_description")
        .unwrap()
        .contains("HTTP 401"));
}

#[test]
fn a_threads_turn_names_its_conversation_on_every_span() {
    use agentweave_runtime::{InMemoryStore, Message, TurnRequest};
    let spans = capture(|| {
        let runner = Runner::builder(desk(false))
            .thread_store(InMemoryStore::new())
            .build();
        futures::executor::block_on(async {
            let turn = runner
                .turn(TurnRequest::new("ada-42", Message::user("refund")))
                .await
                .unwrap();
            turn.finish().await;
        });
    });
    let names: Vec<&str> = spans.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "invoke_agent",
            "chat",
            "invoke_agent",
            "chat",
            "execute_tool",
            "chat"
        ]
    );
    for s in &spans {
        assert_eq!(
            field(s, "gen_ai.conversation.id"),
            Some("ada-42"),
            "{} names its conversation",
            s.name
        );
    }
}

#[test]
fn cached_and_reasoning_tokens_have_the_conventions_names() {
    let spans = capture(|| {
        let mut usage = Usage::new(100, 10);
        usage.cached_input_tokens = Some(80);
        usage.reasoning_tokens = Some(6);
        let agent = ChatModelAgent::builder(
            "bot",
            ScriptedModel::new([ScriptStep::text("hi").with_usage(usage)]),
        )
        .build()
        .unwrap();
        let _: Vec<_> =
            futures::executor::block_on(Runner::new(FlowAgent::new(agent)).run("hi").collect());
    });
    let chat = &spans[1];
    assert_eq!(
        field(chat, "gen_ai.usage.cache_read.input_tokens"),
        Some("80")
    );
    assert_eq!(
        field(chat, "gen_ai.usage.reasoning.output_tokens"),
        Some("6")
    );
}

/// Runs a one-reply agent (100 prompt and 10 reply tokens) under `runner`'s configuration and
/// gives its chat span.
fn chat_span_of(configure: impl FnOnce(agentweave_runtime::RunnerBuilder) -> Runner) -> Captured {
    let spans = capture(|| {
        let agent = ChatModelAgent::builder(
            "bot",
            ScriptedModel::new([ScriptStep::text("hi").with_usage(Usage::new(100, 10))]).named("m"),
        )
        .build()
        .unwrap();
        let runner = configure(Runner::builder(FlowAgent::new(agent)));
        let _: Vec<_> = futures::executor::block_on(runner.run("hi").collect());
    });
    spans
        .into_iter()
        .find(|s| s.name == "chat")
        .expect("a chat span")
}

#[test]
fn a_model_calls_cost_is_on_its_span_when_a_price_is_known() {
    use agentweave_runtime::budget::{BudgetLimits, Budgets, ModelPrice};
    // 100 x $2 + 10 x $8 per million tokens: 280 millionths of a dollar.
    let priced = chat_span_of(|b| {
        b.budgets(
            Budgets::new(BudgetLimits::default().max_model_calls(10))
                .price("m", ModelPrice::per_million_tokens(2.0, 8.0)),
        )
        .build()
    });
    assert_eq!(field(&priced, "agentflow.usage.cost_usd"), Some("0.00028"));
    // The shared spending's price table serves as well.
    let shared = chat_span_of(|b| {
        b.spending(
            agentweave_runtime::SpendingBudgets::new(Arc::new(
                agentweave_runtime::store::InMemoryRunQueue::new(),
            ))
            .price("m", ModelPrice::per_million_tokens(2.0, 8.0)),
        )
        .build()
    });
    assert_eq!(field(&shared, "agentflow.usage.cost_usd"), Some("0.00028"));
    // No price, no cost.
    let unpriced = chat_span_of(|b| b.build());
    assert_eq!(field(&unpriced, "agentflow.usage.cost_usd"), None);
    assert_eq!(field(&unpriced, "gen_ai.usage.input_tokens"), Some("100"));
}
