//! The AG-UI endpoint: the official AG-UI client (`@ag-ui/client`, installed by `.ci/agui.sh`)
//! drives turns of the desk and a front-end tool and validates the event sequences; and the
//! endpoint over plain HTTP.

use crate::common;

use std::time::Duration;

use agentweave_runtime::model::ChatRequest;
use agentweave_runtime::{
    ChatModelAgent, FlowAgent, FnAgent, InMemoryStore, Role, ScriptStep, ScriptedModel, TurnRouting,
};
use agentweave_server::{AppState, Auth, FrontendTool};
use common::{spawn, TOKEN};
use serde_json::{json, Value};

/// `shop`'s model: calls the front-end tool `confirm_address` when the request offers it (it
/// has no tool of its own), then ships to the address the tool gave.
fn shop_model() -> ScriptedModel {
    ScriptedModel::rules()
        .when_with(
            |r: &ChatRequest| {
                r.messages.last().is_some_and(|m| {
                    m.role == Role::Tool && m.tool_name.as_deref() == Some("confirm_address")
                })
            },
            |r: &ChatRequest| {
                ScriptStep::text(format!(
                    "Shipping to {}.",
                    r.messages.last().unwrap().content
                ))
            },
        )
        .when(
            |r: &ChatRequest| r.tools.iter().any(|t| t.name == "confirm_address"),
            ScriptStep::tool_call("confirm_address", json!({"country": "UK"})),
        )
        .otherwise(ScriptStep::text("I have no way to confirm your address."))
}

/// The desk; `ui`: an agent that asks the front end to confirm the address, then ships;
/// `shop`: the same with the front end's tools only; `visits`: greets and counts visits.
fn state() -> AppState {
    state_with(shop_model())
}

fn state_with(shop: ScriptedModel) -> AppState {
    let answered = |r: &ChatRequest| {
        r.messages.last().is_some_and(|m| {
            m.role == Role::Tool && m.tool_name.as_deref() == Some("confirm_address")
        })
    };
    let shipper = || {
        let model = ScriptedModel::rules()
            .when(
                move |r: &ChatRequest| answered(r),
                ScriptStep::text("Shipping to 221B Baker Street."),
            )
            .otherwise(ScriptStep::tool_call("confirm_address", json!({})));
        ChatModelAgent::builder("shipper", model)
            .tool(FrontendTool::new(
                "confirm_address",
                "Asks the customer to confirm the delivery address; returns it.",
                json!({"type": "object", "properties": {}}),
            ))
            .build()
            .unwrap()
    };
    // `relay`: a front desk that hands over to a shipper; both scripted models number their
    // calls per model, so the transfer and the front-end call carry the same model id.
    let front = ChatModelAgent::builder(
        "front",
        ScriptedModel::rules().otherwise(ScriptStep::transfer("shipper")),
    )
    .build()
    .unwrap();
    let relay =
        agentweave_runtime::set_sub_agents(FlowAgent::new(front), [FlowAgent::new(shipper())])
            .unwrap();
    // `visits`: greets `name` (a value the client's state gives) and counts the visits.
    let visits = FnAgent::new("counter", |cx, _| async move {
        let name: String = cx
            .session()
            .value("name")
            .ok()
            .flatten()
            .unwrap_or_default();
        let seen: u64 = cx.session().value("visits").ok().flatten().unwrap_or(0);
        cx.session().set_value("visits", seen + 1).unwrap();
        cx.say(format!("Hello {name}, visit {}.", seen + 1));
        Ok(())
    });
    let shop = ChatModelAgent::builder("shop", shop).build().unwrap();
    AppState::builder(InMemoryStore::new())
        .flow("desk", agentweave_server::demo::desk())
        .flow("ui", FlowAgent::new(shipper()))
        .flow("relay", relay)
        .flow("shop", FlowAgent::new(shop))
        .flow("visits", FlowAgent::new(visits))
        .flow("planner", crate::a2a::planner())
        .auth(Auth::bearer(TOKEN))
        .turn_routing(TurnRouting::Root)
        .build()
        .unwrap()
}

async fn run(base: &str, flow: &str, body: Value) -> (u16, Vec<Value>) {
    let response = reqwest::Client::new()
        .post(format!("{base}/agui/{flow}"))
        .bearer_auth(TOKEN)
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let text = tokio::time::timeout(Duration::from_secs(60), response.text())
        .await
        .unwrap()
        .unwrap();
    let events = text
        .split("\n\n")
        .filter_map(|f| f.strip_prefix("data: "))
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    (status, events)
}

fn types(events: &[Value]) -> Vec<&str> {
    events.iter().map(|e| e["type"].as_str().unwrap()).collect()
}

#[tokio::test]
async fn a_turn_is_agui_events_and_an_interrupt_is_answered_with_resume() {
    let server = spawn(state()).await;
    let input = |messages: Value, resume: Value| {
        json!({"threadId": "th-1", "runId": run_id(), "messages": messages, "tools": [], "context": [],
               "state": {}, "forwardedProps": {}, "resume": resume})
    };
    let (status, events) = run(
        &server.base,
        "desk",
        input(
            json!([{"id": "1", "role": "user", "content": "I want a refund"}]),
            json!([]),
        ),
    )
    .await;
    assert_eq!(status, 200);
    let t = types(&events);
    assert_eq!(t[..2], ["RUN_STARTED", "STATE_SNAPSHOT"]);
    assert!(
        t.contains(&"STATE_DELTA") && t.contains(&"TOOL_CALL_RESULT"),
        "{t:?}"
    );
    let last = events.last().unwrap();
    assert_eq!(last["outcome"]["type"], "interrupt", "{last}");
    let id = last["outcome"]["interrupts"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    // A new message while the thread waits is refused; the resume goes through.
    let (status, _) = run(
        &server.base,
        "desk",
        input(
            json!([{"id": "2", "role": "user", "content": "hello?"}]),
            json!([]),
        ),
    )
    .await;
    assert_eq!(status, 409);
    let (_, events) = run(
        &server.base,
        "desk",
        input(
            json!([]),
            json!([{"interruptId": id, "status": "resolved", "payload": {"approve": false}}]),
        ),
    )
    .await;
    let last = events.last().unwrap();
    assert_eq!(last["type"], "RUN_FINISHED");
    assert_eq!(
        last["result"],
        "Sorry: the refund for order 42 was not approved."
    );
}

/// The agent's plan (`write_plan`) is state: each version a `STATE_DELTA` of `/kit.plan`, the
/// first an `add`, the next a `replace`, before the run finishes.
#[tokio::test]
async fn the_plan_reaches_the_client_as_state() {
    let server = spawn(state()).await;
    let (status, events) = run(
        &server.base,
        "planner",
        json!({"threadId": "th-p", "runId": run_id(), "state": {},
               "messages": [{"id": "1", "role": "user", "content": "Write the report"}]}),
    )
    .await;
    assert_eq!(status, 200);
    let plan_ops: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "STATE_DELTA")
        .flat_map(|e| e["delta"].as_array().unwrap())
        .filter(|op| op["path"] == "/kit.plan")
        .collect();
    assert_eq!(plan_ops.len(), 2, "{events:?}");
    assert_eq!(plan_ops[0]["op"], "add");
    assert_eq!(
        plan_ops[0]["value"]["steps"][0],
        json!({"step": "gather", "status": "in_progress"})
    );
    assert_eq!(plan_ops[1]["op"], "replace");
    assert_eq!(
        plan_ops[1]["value"]["steps"],
        json!([{"step": "gather", "status": "done"}, {"step": "write", "status": "done"}])
    );
    assert_eq!(events.last().unwrap()["type"], "RUN_FINISHED");
}

#[tokio::test]
async fn the_state_carries_the_session_values_both_ways() {
    let server = spawn(state()).await;
    let input = |state: Value| {
        json!({"threadId": "th-s", "runId": run_id(), "state": state,
               "messages": [{"id": "1", "role": "user", "content": "hi"}]})
    };
    let (status, events) = run(
        &server.base,
        "visits",
        input(json!({"name": "Ada", "visits": 4})),
    )
    .await;
    assert_eq!(status, 200);
    let snapshot = events
        .iter()
        .find(|e| e["type"] == "STATE_SNAPSHOT")
        .unwrap();
    assert_eq!(snapshot["snapshot"]["name"], "Ada");
    assert_eq!(snapshot["snapshot"]["visits"], 4);
    assert_eq!(snapshot["snapshot"]["agentflow"]["agent"], "counter");
    let delta = events.iter().find(|e| e["type"] == "STATE_DELTA").unwrap();
    assert_eq!(
        delta["delta"],
        json!([{"op": "replace", "path": "/visits", "value": 5}])
    );
    assert_eq!(events.last().unwrap()["result"], "Hello Ada, visit 5.");
    // Never the framework's own values (token usage and the like).
    assert!(!serde_json::to_string(&events)
        .unwrap()
        .contains("agentflow."));
    // A framework value, or a state that is not an object, is refused.
    let (status, _) = run(
        &server.base,
        "visits",
        input(json!({"agentflow.usage": {}})),
    )
    .await;
    assert_eq!(status, 400);
    let (status, _) = run(&server.base, "visits", input(json!([1, 2]))).await;
    assert_eq!(status, 400);
}

#[tokio::test]
async fn the_front_ends_tools_are_offered_to_the_model_and_answered_by_the_client() {
    let model = shop_model();
    let server = spawn(state_with(model.clone())).await;
    let tools = json!([{"name": "confirm_address", "description": "Asks the customer for the address.",
                        "parameters": {"type": "object", "properties": {"country": {"type": "string"}}}}]);
    let input = |messages: Value, tools: &Value| json!({"threadId": "th-f", "runId": run_id(), "messages": messages, "tools": tools});
    let (status, events) = run(
        &server.base,
        "shop",
        input(
            json!([{"id": "1", "role": "user", "content": "Ship it"}]),
            &tools,
        ),
    )
    .await;
    assert_eq!(status, 200);
    // The model saw the tool as the front end described it.
    let offered = &model.requests()[0].tools;
    assert_eq!(offered.len(), 1);
    assert_eq!(offered[0].description, "Asks the customer for the address.");
    let call = events
        .iter()
        .find(|e| e["type"] == "TOOL_CALL_START")
        .unwrap();
    assert_eq!(call["toolCallName"], "confirm_address");
    let id = call["toolCallId"].as_str().unwrap();
    let last = events.last().unwrap();
    assert_eq!(last["outcome"]["type"], "success", "{last}");
    assert_eq!(last["outcome"]["pendingToolCallIds"], json!([id]));
    // The next run answers it with a tool message (the tools listed again, or not).
    let (status, events) = run(
        &server.base,
        "shop",
        input(
            json!([{"id": "2", "role": "tool", "toolCallId": id, "content": "10 Downing Street"}]),
            &json!([]),
        ),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(
        events.last().unwrap()["result"],
        "Shipping to 10 Downing Street."
    );
    // Without the tool, the model has none to call.
    let (_, events) = run(
        &server.base,
        "shop",
        json!({"threadId": "th-g", "runId": run_id(), "messages": [{"id": "1", "role": "user", "content": "Ship it"}]}),
    )
    .await;
    assert_eq!(
        events.last().unwrap()["result"],
        "I have no way to confirm your address."
    );
    // A tool name a model API would refuse is refused here.
    let (status, _) = run(
        &server.base,
        "shop",
        input(
            json!([{"id": "1", "role": "user", "content": "x"}]),
            &json!([{"name": "no spaces"}]),
        ),
    )
    .await;
    assert_eq!(status, 400);
}

/// The official AG-UI client (see `tests/agui/client.mjs`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_agui_client_drives_the_desk_and_a_front_end_tool() {
    let Ok(modules) = std::env::var("AGENTFLOW_AGUI_NODE_MODULES") else {
        agentweave_runtime::testing::skip_missing_component(
            "the AG-UI client (@ag-ui/client)",
            "source .ci/agui.sh to install it and set AGENTFLOW_AGUI_NODE_MODULES",
        );
        return;
    };
    let server = spawn(state()).await;
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/agui/client.mjs");
    let run = tokio::process::Command::new("node")
        .arg(script)
        .arg(&server.base)
        .arg(TOKEN)
        .env("NODE_PATH", modules)
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(Duration::from_secs(120), run)
        .await
        .expect("the AG-UI client finishes within 120 s")
        .expect("node starts");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    println!("{stdout}");
    assert!(
        output.status.success() && stdout.contains("AG-UI CLIENT OK"),
        "the AG-UI client failed:\n{stdout}\n{stderr}"
    );
}

/// A new run id per run (a runId sent again is the same run: see the idempotency tests).
fn run_id() -> String {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    format!(
        "r{}",
        NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    )
}
