//! Record against a real OpenAI-compatible server, replay offline: the desk runs on the
//! LiteLLM proxy's scripted desk (`scripts/openai_compat/litellm.yaml`, started by
//! `.ci/litellm.sh`), recorded into a cassette; then the same turns replay from the cassette
//! with the server out of reach, and the replayed events equal the recorded ones.
#![cfg(feature = "openai")]

use std::sync::Arc;
use std::time::Duration;

use agentweave_eval::cassette::{Cassette, Mode};
use agentweave_runtime::model::{OpenAiChatModel, OpenAiConfig};
use agentweave_runtime::testing::skip_missing_component;
use agentweave_runtime::{
    set_sub_agents, tool_fn, ChatModel, ChatModelAgent, EventJson, FlowAgent, Runner,
};
use futures::StreamExt;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct LookupOrder {
    order_id: u64,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct IssueRefund {
    order_id: u64,
    amount_eur: f64,
}

fn desk(cassette: &Cassette, model: &Arc<dyn ChatModel>) -> FlowAgent {
    let agent = |name: &str, description: &str| {
        ChatModelAgent::builder(name, cassette.model(Arc::clone(model))).description(description)
    };
    let triage = agent("triage", "The front desk.").build().unwrap();
    let refund = agent("refund", "Refunds orders.")
        .tool_arc(cassette.tool(tool_fn(
            "lookup_order",
            "Finds an order.",
            |a: LookupOrder| async move {
                Ok::<_, String>(format!("order {}: one kettle, 39.00 EUR", a.order_id))
            },
        )))
        .tool_arc(cassette.tool(tool_fn(
            "issue_refund",
            "Pays money back.",
            |a: IssueRefund| async move {
                Ok::<_, String>(format!(
                    "refunded {:.2} EUR for order {}",
                    a.amount_eur, a.order_id
                ))
            },
        )))
        .build()
        .unwrap();
    set_sub_agents(FlowAgent::new(triage), [FlowAgent::new(refund)]).unwrap()
}

async fn run(flow: FlowAgent, question: &str) -> Vec<EventJson> {
    let mut events = Runner::builder(flow).streaming(true).build().run(question);
    let mut out = Vec::new();
    while let Some(e) = events.next().await {
        out.push(e.materialized().await.unwrap());
    }
    out
}

#[tokio::test]
async fn a_run_recorded_on_litellm_replays_offline_with_equal_events() {
    let Some(url) = std::env::var("AGENTFLOW_OPENAI_COMPAT_URL")
        .ok()
        .filter(|u| !u.is_empty())
    else {
        skip_missing_component(
            "the LiteLLM proxy",
            "set AGENTFLOW_OPENAI_COMPAT_URL; .ci/litellm.sh starts one",
        );
        return;
    };
    let mut config = OpenAiConfig::new(url, "scripted-desk").timeout(Duration::from_secs(60));
    if let Ok(key) = std::env::var("AGENTFLOW_OPENAI_COMPAT_KEY") {
        config = config.api_key(key);
    }
    let live: Arc<dyn ChatModel> = Arc::new(OpenAiChatModel::new(config).unwrap());
    let path = std::env::temp_dir().join(format!("litellm-desk-{}.json", std::process::id()));
    let question = "I want a refund for order 42, please.";

    let recording = Cassette::new(&path, Mode::Record);
    let recorded = run(desk(&recording, &live), question).await;
    recording.save().unwrap();
    assert!(recorded.iter().all(|e| e.error.is_none()), "{recorded:?}");
    let last = recorded.last().and_then(|e| e.message.as_ref()).unwrap();
    assert!(
        last.content.contains("refunded 39.00 EUR for order 42"),
        "{last:?}"
    );

    // Offline: a model of the same name at an address where nothing listens.
    let offline: Arc<dyn ChatModel> = Arc::new(
        OpenAiChatModel::new(OpenAiConfig::new("http://127.0.0.1:9/v1", "scripted-desk")).unwrap(),
    );
    let replaying = Cassette::replay(&path).unwrap();
    let replayed = run(desk(&replaying, &offline), question).await;
    assert!(replaying.errors().is_empty(), "{:?}", replaying.errors());
    assert_eq!(replaying.unused(), 0);
    assert_eq!(replayed, recorded);
    std::fs::remove_file(&path).ok();
}
