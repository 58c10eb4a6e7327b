//! Declarative approvals for tools, served: a tool named by a rule stops for a human before it
//! runs; an approval runs it once, a denial reaches the model as the tool's result and the tool
//! never runs; a predicate over the arguments decides which calls ask.

use crate::common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use common::{done, get, post, read_sse, spawn, turn, TOKEN};
use flow_runtime::{
    tool_fn, ChatModelAgent, FlowAgent, InMemoryStore, ScriptStep, ScriptedModel, Tool,
    ToolApprovals,
};
use flow_server::{AppState, Auth};
use serde_json::{json, Value};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Disk {
    disk: String,
}

fn state(approvals: ToolApprovals, disk: &str, runs: Arc<AtomicUsize>) -> AppState {
    let wipe = tool_fn("wipe_disk", "Wipes a disk.", move |a: Disk| {
        let runs = Arc::clone(&runs);
        async move {
            runs.fetch_add(1, Ordering::SeqCst);
            Ok::<_, String>(format!("wiped {}", a.disk))
        }
    });
    let tools: Vec<Arc<dyn Tool>> = vec![Arc::new(wipe)];
    let model = ScriptedModel::rules()
        .after_tool("wipe_disk", ScriptStep::text("Finished."))
        .otherwise(ScriptStep::tool_call("wipe_disk", json!({ "disk": disk })));
    let agent = ChatModelAgent::builder("ops", model)
        .tools(approvals.apply(tools))
        .build()
        .unwrap();
    AppState::builder(InMemoryStore::new())
        .flow("ops", FlowAgent::new(agent))
        .auth(Auth::bearer(TOKEN))
        .build()
        .unwrap()
}

async fn tool_result(base: &str, thread: &str) -> String {
    let thread: Value = get(base, &format!("/v1/flows/ops/threads/{thread}"))
        .await
        .json()
        .await
        .unwrap();
    thread["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["message"]["role"] == "tool")
        .map(|m| m["message"]["content"].as_str().unwrap().to_owned())
        .unwrap_or_default()
}

async fn answer(base: &str, thread: &str, id: &str, data: Value) -> Vec<common::Sse> {
    read_sse(
        post(
            base,
            &format!("/v1/flows/ops/threads/{thread}/resume"),
            json!({"interrupt_id": id, "data": data}),
        )
        .await,
    )
    .await
}

#[tokio::test]
async fn an_approved_call_runs_once_a_denied_one_never_and_the_model_hears_why() {
    let runs = Arc::new(AtomicUsize::new(0));
    let server = spawn(state(
        ToolApprovals::new().always("wipe_*"),
        "d1",
        Arc::clone(&runs),
    ))
    .await;
    let base = &server.base;

    let events = turn(base, "ops", "yes", "wipe d1").await;
    let asked = &done(&events)["interrupts"][0];
    assert_eq!(asked["info"]["approval"]["tool"], "wipe_disk");
    assert_eq!(
        asked["info"]["approval"]["arguments"],
        json!({"disk": "d1"})
    );
    assert_eq!(
        runs.load(Ordering::SeqCst),
        0,
        "nothing ran before the approval"
    );
    let id = asked["id"].as_str().unwrap().to_owned();
    let events = answer(base, "yes", &id, json!(true)).await;
    assert_eq!(done(&events)["output"], "Finished.");
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert_eq!(tool_result(base, "yes").await, "wiped d1");

    let events = turn(base, "ops", "no", "wipe d1").await;
    let id = done(&events)["interrupts"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let events = answer(
        base,
        "no",
        &id,
        json!({"approve": false, "reason": "change freeze"}),
    )
    .await;
    assert_eq!(done(&events)["interrupted"], false);
    assert_eq!(runs.load(Ordering::SeqCst), 1, "the denied call never ran");
    let result = tool_result(base, "no").await;
    assert!(result.contains("was not approved"), "{result}");
    assert!(result.contains("change freeze"), "{result}");
}

#[tokio::test]
async fn a_predicate_over_the_arguments_decides_which_calls_ask() {
    let runs = Arc::new(AtomicUsize::new(0));
    let approvals = ToolApprovals::new().when("wipe_disk", |args| args["disk"] == "prod");
    let server = spawn(state(approvals.clone(), "scratch", Arc::clone(&runs))).await;
    let events = turn(&server.base, "ops", "t", "wipe scratch").await;
    assert_eq!(done(&events)["interrupted"], false);
    assert_eq!(runs.load(Ordering::SeqCst), 1);

    let server = spawn(state(approvals, "prod", Arc::clone(&runs))).await;
    let events = turn(&server.base, "ops", "t", "wipe prod").await;
    assert_eq!(done(&events)["interrupted"], true);
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}
