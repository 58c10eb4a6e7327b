//! The A2A endpoint over real HTTP: JSON-RPC errors with their codes, a task's life through
//! plain JSON-RPC calls, and the official Python SDK's client (`a2a-sdk`, installed by
//! `.ci/a2a.sh`) against the served desk.

use crate::common;

use std::time::Duration;

use agentweave_runtime::kit::PlanTool;
use agentweave_runtime::{
    ChatModelAgent, FlowAgent, FnAgent, InMemoryStore, ScriptStep, ScriptedModel, TurnRouting,
};
use agentweave_server::{AppState, Auth};
use common::{spawn, TOKEN};
use serde_json::{json, Value};

/// An agent that writes its plan of two steps, then rewrites it with both done, then answers.
pub(crate) fn planner() -> FlowAgent {
    let model = ScriptedModel::new([
        ScriptStep::tool_call(
            "write_plan",
            json!({"steps": [{"step": "gather", "status": "in_progress"},
                             {"step": "write", "status": "pending"}]}),
        ),
        ScriptStep::tool_call(
            "write_plan",
            json!({"steps": [{"step": "gather", "status": "done"},
                             {"step": "write", "status": "done"}]}),
        ),
        ScriptStep::text("Report written."),
    ]);
    FlowAgent::new(
        ChatModelAgent::builder("planner", model)
            .tool(PlanTool)
            .build()
            .unwrap(),
    )
}

/// The desk, `slow`: an agent that says it started, then works until it is cancelled, and
/// `planner`.
fn state() -> AppState {
    let slow = FnAgent::new("slow", |cx, _| async move {
        cx.say("working on it");
        std::future::pending::<()>().await;
        Ok(())
    });
    AppState::builder(InMemoryStore::new())
        .flow("desk", agentweave_server::demo::desk())
        .flow("slow", FlowAgent::new(slow))
        .flow("planner", planner())
        .auth(Auth::bearer(TOKEN))
        .webhook_secret(SECRET)
        // The test's receivers listen on loopback: let it through, as an operator would.
        .outbound(common::loopback_allowed())
        .turn_routing(TurnRouting::Root)
        .build()
        .unwrap()
}

const SECRET: &[u8] = b"a2a-push-secret-for-tests";

/// A webhook receiver on loopback: sends (headers, body) of each POST to the channel.
async fn receiver() -> (
    String,
    tokio::sync::mpsc::UnboundedReceiver<(axum::http::HeaderMap, Vec<u8>)>,
) {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(
            move |headers: axum::http::HeaderMap, body: axum::body::Bytes| {
                let tx = tx.clone();
                async move {
                    let _ = tx.send((headers, body.to_vec()));
                    axum::http::StatusCode::OK
                }
            },
        ),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    // `127.1` is 127.0.0.1 to a URL parser: the server echoes the client's own URL back, and
    // the leak check refuses `http://127.0.0.1` in any answer (it would be an internal URL).
    (format!("http://127.1:{}/hook", addr.port()), rx)
}

async fn call(base: &str, flow: &str, body: Value) -> Value {
    reqwest::Client::new()
        .post(format!("{base}/a2a/{flow}"))
        .bearer_auth(TOKEN)
        .header("A2A-Version", "1.0")
        .json(&body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// A new message id per message (a messageId sent again is the same message: see the
/// idempotency tests).
fn message_id() -> String {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    format!(
        "m{}",
        NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    )
}

fn send(text: &str, context: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {
        "messageId": message_id(), "role": "ROLE_USER", "contextId": context, "parts": [{"text": text}]}}})
}

#[tokio::test]
async fn jsonrpc_errors_have_a2a_codes() {
    let server = spawn(state()).await;
    let client = reqwest::Client::new();
    let raw = |body: &'static str| {
        client
            .post(format!("{}/a2a/desk", server.base))
            .bearer_auth(TOKEN)
            .header("content-type", "application/json")
            .body(body)
            .send()
    };
    let code = |v: Value| v["error"]["code"].as_i64().unwrap();
    let parse: Value = raw("{not json").await.unwrap().json().await.unwrap();
    assert_eq!(code(parse), -32700);
    let invalid: Value = raw(r#"{"jsonrpc": "1.0", "id": 1, "method": "GetTask"}"#)
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(code(invalid), -32600);
    let method = call(
        &server.base,
        "desk",
        json!({"jsonrpc": "2.0", "id": 2, "method": "message/teleport", "params": {}}),
    )
    .await;
    assert_eq!(code(method.clone()), -32601);
    assert_eq!(method["id"], 2);
    let params = call(
        &server.base,
        "desk",
        json!({"jsonrpc": "2.0", "id": 3, "method": "GetTask", "params": [1]}),
    )
    .await;
    assert_eq!(code(params), -32602);
    let unknown = call(
        &server.base,
        "desk",
        json!({"jsonrpc": "2.0", "id": 4, "method": "GetTask", "params": {"id": "nobody.0"}}),
    )
    .await;
    assert_eq!(code(unknown), -32001);
    let push = json!({"jsonrpc": "2.0", "id": 5, "method": "CreateTaskPushNotificationConfig",
                      "params": {"taskId": "nobody.0", "url": "ftp://example.com/hook"}});
    assert_eq!(code(call(&server.base, "desk", push.clone()).await), -32602);
    // Without a webhook secret, a server sends no push notifications (and its card says so).
    let plain = spawn(
        AppState::builder(InMemoryStore::new())
            .flow("desk", agentweave_server::demo::desk())
            .auth(Auth::bearer(TOKEN))
            .build()
            .unwrap(),
    )
    .await;
    assert_eq!(code(call(&plain.base, "desk", push).await), -32003);
    let version: Value = client
        .post(format!("{}/a2a/desk", server.base))
        .bearer_auth(TOKEN)
        .header("A2A-Version", "0.3")
        .json(&send("hi", "c1"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(code(version), -32009);
    let bad_context = call(&server.base, "desk", send("hi", "a.b")).await;
    assert_eq!(code(bad_context), -32602);
    // Without the token: the server's 401, before any JSON-RPC.
    let anonymous = client
        .post(format!("{}/a2a/desk", server.base))
        .json(&send("hi", "c1"))
        .send()
        .await
        .unwrap();
    assert_eq!(anonymous.status(), 401);
}

#[tokio::test]
async fn the_card_is_public_and_describes_the_flow() {
    let server = spawn(state()).await;
    let card: Value = reqwest::get(format!(
        "{}/a2a/desk/.well-known/agent-card.json",
        server.base
    ))
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    assert_eq!(card["name"], "desk");
    assert_eq!(
        card["supportedInterfaces"][0]["url"],
        format!("{}/a2a/desk", server.base)
    );
    assert_eq!(card["skills"].as_array().unwrap().len(), 3);
    // Two flows: the root card says where the per-flow cards are.
    let root = reqwest::get(format!("{}/.well-known/agent-card.json", server.base))
        .await
        .unwrap();
    assert_eq!(root.status(), 400);
}

/// A task through plain JSON-RPC: input-required at the refund approval, answered, completed;
/// another tenant's caller cannot see it.
#[tokio::test]
async fn a_refund_task_waits_for_input_and_the_next_message_resumes_it() {
    let server = spawn(state()).await;
    let first = call(&server.base, "desk", send("I want a refund", "ctx-1")).await;
    let task = &first["result"]["task"];
    assert_eq!(
        task["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "{first}"
    );
    assert_eq!(task["id"], "ctx-1.0");
    assert_eq!(task["contextId"], "ctx-1");
    let question = &task["status"]["message"]["parts"][0]["text"];
    assert_eq!(question, "Approve a refund of 39.00 EUR for order 42?");
    assert!(
        !first.to_string().contains("\"state\":{"),
        "no saved state leaks"
    );

    // A new message without a taskId in a waiting context answers the waiting task.
    let answer = json!({"jsonrpc": "2.0", "id": 2, "method": "SendMessage", "params": {"message": {
        "messageId": "answer-2", "role": "ROLE_USER", "contextId": "ctx-1", "taskId": "ctx-1.0",
        "parts": [{"data": {"approve": false}}]}}});
    let second = call(&server.base, "desk", answer).await;
    let task = &second["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{second}");
    assert_eq!(
        task["artifacts"][0]["parts"][0]["text"],
        "Sorry: the refund for order 42 was not approved."
    );
    // The ended task takes no more messages; a new one in the context starts turn 1.
    let again = json!({"jsonrpc": "2.0", "id": 3, "method": "SendMessage", "params": {"message": {
        "messageId": "answer-3", "role": "ROLE_USER", "contextId": "ctx-1", "taskId": "ctx-1.0",
        "parts": [{"text": "hello?"}]}}});
    assert_eq!(
        call(&server.base, "desk", again).await["error"]["code"],
        -32004
    );
    let next = call(&server.base, "desk", send("hello again", "ctx-1")).await;
    assert_eq!(next["result"]["task"]["id"], "ctx-1.1");

    // GetTask from the store's records (history trimmed to the last message).
    let got = call(
        &server.base,
        "desk",
        json!({"jsonrpc": "2.0", "id": 4, "method": "GetTask",
        "params": {"id": "ctx-1.0", "historyLength": 1}}),
    )
    .await;
    assert_eq!(got["result"]["status"]["state"], "TASK_STATE_COMPLETED");
    assert_eq!(got["result"]["history"].as_array().unwrap().len(), 1);
    // A finished task cannot be cancelled.
    let cancel = call(
        &server.base,
        "desk",
        json!({"jsonrpc": "2.0", "id": 5, "method": "CancelTask",
        "params": {"id": "ctx-1.0"}}),
    )
    .await;
    assert_eq!(cancel["error"]["code"], -32002);
}

#[tokio::test]
async fn a_streamed_task_is_server_sent_jsonrpc_responses() {
    let server = spawn(state()).await;
    let mut body = send("My kettle arrived broken", "ctx-s");
    body["method"] = json!("SendStreamingMessage");
    let response = reqwest::Client::new()
        .post(format!("{}/a2a/desk", server.base))
        .bearer_auth(TOKEN)
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let text = tokio::time::timeout(Duration::from_secs(60), response.text())
        .await
        .unwrap()
        .unwrap();
    let events: Vec<Value> = text
        .split("\n\n")
        .filter_map(|f| f.strip_prefix("data: "))
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    assert!(events.iter().all(|e| e["id"] == 1 && e["jsonrpc"] == "2.0"));
    assert!(events[0]["result"]["task"].is_object());
    let paths: Vec<&str> = events
        .iter()
        .filter_map(|e| {
            e["result"]["statusUpdate"]["status"]["message"]["metadata"]["agentflow"]["runPath"]
                .as_str()
        })
        .collect();
    assert!(paths.contains(&"triage/complaint"), "{paths:?}");
    let last = events.last().unwrap();
    assert_eq!(
        last["result"]["statusUpdate"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{text}"
    );
    let artifact = events
        .iter()
        .find_map(|e| e["result"]["artifactUpdate"]["artifact"]["parts"][0]["text"].as_str())
        .unwrap();
    assert_eq!(
        artifact,
        "Your complaint is logged as #1001; we will call you tomorrow."
    );
}

/// Each version of the agent's plan (`write_plan`) reaches the client as the `plan` artifact
/// while the task works; the task keeps the last version only, beside the answer.
#[tokio::test]
async fn the_plan_is_the_plan_artifact_updated_as_it_changes() {
    let server = spawn(state()).await;
    let mut body = send("Write the report", "ctx-p");
    body["method"] = json!("SendStreamingMessage");
    let response = reqwest::Client::new()
        .post(format!("{}/a2a/planner", server.base))
        .bearer_auth(TOKEN)
        .json(&body)
        .send()
        .await
        .unwrap();
    let text = tokio::time::timeout(Duration::from_secs(60), response.text())
        .await
        .unwrap()
        .unwrap();
    let events: Vec<Value> = text
        .split("\n\n")
        .filter_map(|f| f.strip_prefix("data: "))
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    let plans: Vec<&Value> = events
        .iter()
        .map(|e| &e["result"]["artifactUpdate"]["artifact"])
        .filter(|a| a["artifactId"] == "plan")
        .collect();
    assert_eq!(plans.len(), 2, "{text}");
    assert_eq!(
        plans[0]["parts"][0]["data"]["steps"],
        json!([{"step": "gather", "status": "in_progress"},
               {"step": "write", "status": "pending"}])
    );
    assert_eq!(plans[0]["parts"][1]["text"], "[>] gather\n[ ] write\n");
    assert_eq!(plans[1]["parts"][1]["text"], "[x] gather\n[x] write\n");

    let got = call(
        &server.base,
        "planner",
        json!({"jsonrpc": "2.0", "id": 2, "method": "GetTask", "params": {"id": "ctx-p.0"}}),
    )
    .await;
    let artifacts = got["result"]["artifacts"].as_array().unwrap();
    let ids: Vec<&str> = artifacts
        .iter()
        .map(|a| a["artifactId"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["plan", "answer"], "{got}");
    assert_eq!(artifacts[0]["parts"][1]["text"], "[x] gather\n[x] write\n");
}

/// The official Python SDK's client against the server (see `tests/a2a/sdk_client.py`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_python_sdk_client_talks_to_the_server() {
    let Ok(python) = std::env::var("AGENTFLOW_A2A_PYTHON") else {
        agentweave_runtime::testing::skip_missing_component(
            "the A2A Python SDK (a2a-sdk)",
            "source .ci/a2a.sh to install it and set AGENTFLOW_A2A_PYTHON",
        );
        return;
    };
    let server = spawn(state()).await;
    let (hook, mut hits) = receiver().await;
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/a2a/sdk_client.py");
    let run = tokio::process::Command::new(python)
        .arg(script)
        .arg(&server.base)
        .arg(TOKEN)
        .arg(&hook)
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(Duration::from_secs(120), run)
        .await
        .expect("the SDK client finishes within 120 s")
        .expect("the SDK client starts");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    println!("{stdout}");
    assert!(
        output.status.success() && stdout.contains("A2A SDK CLIENT OK"),
        "the SDK client failed:\n{stdout}\n{stderr}"
    );
    // The webhook the client set on the waiting task was told it was cancelled: the task as a
    // StreamResponse, with the client's token, signed under the server's webhook secret.
    let (headers, body) = tokio::time::timeout(Duration::from_secs(30), hits.recv())
        .await
        .expect("the push notification arrives")
        .unwrap();
    let pushed: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(
        pushed["task"]["status"]["state"], "TASK_STATE_CANCELED",
        "{pushed}"
    );
    assert_eq!(headers["x-a2a-notification-token"], "push-token-1");
    let timestamp: u64 = headers["x-agentflow-timestamp"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(
        headers["x-agentflow-signature"].to_str().unwrap(),
        agentweave_server::webhooks::signature(SECRET, timestamp, &body)
    );
}
