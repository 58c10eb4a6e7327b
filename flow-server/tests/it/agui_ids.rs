//! AG-UI tool call ids over real HTTP: unique within a run whatever the models send (two
//! scripted models numbering their calls alike), and a front-end tool's result, sent back
//! under the id its call went out with, resumes the call and comes back under that id.

use crate::common;

use agentweave_runtime::model::ChatRequest;
use agentweave_runtime::{set_sub_agents, ChatModelAgent, FlowAgent, InMemoryStore, Role};
use agentweave_runtime::{ScriptStep, ScriptedModel, TurnRouting};
use agentweave_server::{AppState, Auth, FrontendTool};
use common::{post, spawn, TOKEN};
use serde_json::{json, Value};

/// `relay`: `front` hands over to `shipper`, which asks the front end to confirm the address.
/// Both scripted models number their calls per model: the transfer and the front-end call
/// carry the same model id.
fn state() -> AppState {
    let answered = |r: &ChatRequest| {
        r.messages.last().is_some_and(|m| {
            m.role == Role::Tool && m.tool_name.as_deref() == Some("confirm_address")
        })
    };
    let shipper = ChatModelAgent::builder(
        "shipper",
        ScriptedModel::rules()
            .when_with(answered, |r: &ChatRequest| {
                ScriptStep::text(format!(
                    "Shipping to {}.",
                    r.messages.last().unwrap().content
                ))
            })
            .otherwise(ScriptStep::tool_call("confirm_address", json!({}))),
    )
    .tool(FrontendTool::new(
        "confirm_address",
        "Asks the customer to confirm the delivery address; returns it.",
        json!({"type": "object", "properties": {}}),
    ))
    .build()
    .unwrap();
    let front = ChatModelAgent::builder(
        "front",
        ScriptedModel::rules().otherwise(ScriptStep::transfer("shipper")),
    )
    .build()
    .unwrap();
    let relay = set_sub_agents(FlowAgent::new(front), [FlowAgent::new(shipper)]).unwrap();
    AppState::builder(InMemoryStore::new())
        .flow("relay", relay)
        .flow("desk", agentweave_server::demo::desk())
        .auth(Auth::bearer(TOKEN))
        .turn_routing(TurnRouting::Root)
        .build()
        .unwrap()
}

async fn run(base: &str, flow: &str, body: Value) -> Vec<Value> {
    let response = post(base, &format!("/agui/{flow}"), body).await;
    assert_eq!(response.status(), 200);
    let text = response.text().await.unwrap();
    text.split("\n\n")
        .filter_map(|f| f.trim().strip_prefix("data: "))
        .map(|d| serde_json::from_str(d).unwrap())
        .collect()
}

fn of<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == kind).collect()
}

#[tokio::test]
async fn tool_call_ids_are_unique_within_a_run() {
    let server = spawn(state()).await;
    let events = run(
        &server.base,
        "desk",
        json!({"threadId": "ids", "runId": "r1", "tools": [],
               "messages": [{"id": "u1", "role": "user", "content": "I want a refund"}]}),
    )
    .await;
    let starts: Vec<&str> = of(&events, "TOOL_CALL_START")
        .iter()
        .map(|e| e["toolCallId"].as_str().unwrap())
        .collect();
    assert!(starts.len() >= 3, "{starts:?}");
    let unique: std::collections::BTreeSet<&&str> = starts.iter().collect();
    assert_eq!(unique.len(), starts.len(), "{starts:?}");
    // Each call's arguments, end and result go under its own id.
    for kind in ["TOOL_CALL_END", "TOOL_CALL_RESULT"] {
        for e in of(&events, kind) {
            let id = e["toolCallId"].as_str().unwrap();
            assert!(
                starts.contains(&id),
                "{kind} {id} has no start in {starts:?}"
            );
        }
    }
    let names: Vec<&str> = of(&events, "TOOL_CALL_START")
        .iter()
        .map(|e| e["toolCallName"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["transfer_to_agent", "lookup_order", "issue_refund"]);
}

#[tokio::test]
async fn a_front_end_result_under_the_sent_id_resumes_its_call() {
    let server = spawn(state()).await;
    let tools = json!([{"name": "confirm_address", "description": "Confirms the address.",
                        "parameters": {"type": "object", "properties": {}}}]);
    let events = run(
        &server.base,
        "relay",
        json!({"threadId": "fe", "runId": "r1", "tools": tools,
               "messages": [{"id": "u1", "role": "user", "content": "Ship my order"}]}),
    )
    .await;
    let starts = of(&events, "TOOL_CALL_START");
    assert_eq!(starts.len(), 2);
    let (transfer, confirm) = (&starts[0]["toolCallId"], &starts[1]["toolCallId"]);
    assert_ne!(
        transfer, confirm,
        "the model ids were the same; the sent ids differ"
    );
    let finished = events.last().unwrap();
    assert_eq!(finished["outcome"]["pendingToolCallIds"], json!([confirm]));
    let sent = confirm.as_str().unwrap();
    let events = run(
        &server.base,
        "relay",
        json!({"threadId": "fe", "runId": "r2", "tools": tools,
               "messages": [{"id": "u1", "role": "user", "content": "Ship my order"},
                            {"id": "t1", "role": "tool", "toolCallId": sent,
                             "content": "4 Privet Drive"}]}),
    )
    .await;
    let result = of(&events, "TOOL_CALL_RESULT");
    assert_eq!(
        result[0]["toolCallId"], sent,
        "the result under the id the call went out with"
    );
    assert_eq!(result[0]["content"], "4 Privet Drive");
    assert_eq!(
        events.last().unwrap()["result"],
        "Shipping to 4 Privet Drive."
    );
}
