//! The AG-UI endpoint: the official AG-UI client (`@ag-ui/client`, installed by `.ci/agui.sh`)
//! drives turns of the desk and a front-end tool and validates the event sequences; and the
//! endpoint over plain HTTP.

mod common;

use std::time::Duration;

use common::{spawn, TOKEN};
use flow_runtime::model::ChatRequest;
use flow_runtime::{
    ChatModelAgent, FlowAgent, InMemoryStore, Role, ScriptStep, ScriptedModel, TurnRouting,
};
use flow_server::{AppState, Auth, FrontendTool};
use serde_json::{json, Value};

/// The desk, and `ui`: an agent that asks the front end to confirm the address, then ships.
fn state() -> AppState {
    let answered = |r: &ChatRequest| {
        r.messages.last().is_some_and(|m| {
            m.role == Role::Tool && m.tool_name.as_deref() == Some("confirm_address")
        })
    };
    let model = ScriptedModel::rules()
        .when(
            move |r: &ChatRequest| answered(r),
            ScriptStep::text("Shipping to 221B Baker Street."),
        )
        .otherwise(ScriptStep::tool_call("confirm_address", json!({})));
    let shipper = ChatModelAgent::builder("shipper", model)
        .tool(FrontendTool::new(
            "confirm_address",
            "Asks the customer to confirm the delivery address; returns it.",
            json!({"type": "object", "properties": {}}),
        ))
        .build()
        .unwrap();
    AppState::builder(InMemoryStore::new())
        .flow("desk", flow_server::demo::desk())
        .flow("ui", FlowAgent::new(shipper))
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
        json!({"threadId": "th-1", "runId": "r", "messages": messages, "tools": [], "context": [],
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

/// The official AG-UI client (see `tests/agui/client.mjs`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_agui_client_drives_the_desk_and_a_front_end_tool() {
    let Ok(modules) = std::env::var("AGENTFLOW_AGUI_NODE_MODULES") else {
        flow_runtime::testing::skip_missing_component(
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
