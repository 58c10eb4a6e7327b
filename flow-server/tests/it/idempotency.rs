//! Idempotency keys in one process: a request sent again with its `Idempotency-Key` (A2A
//! `messageId`, AG-UI `runId`) gets the run it started and never runs twice; another request
//! under the key is 422 `idempotency_key_reused`; keys are the caller's own; a run's id
//! answers from its record in a server started again on the store. (The kill tests in
//! `door_kills.rs` do the same across a SIGKILL.)

use crate::common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use agentweave_runtime::{
    tool_fn, ChatModelAgent, FlowAgent, InMemoryStore, Role, ScriptStep, ScriptedModel,
};
use agentweave_server::{AppState, Auth, Principal, Scope};
use common::*;
use serde_json::{json, Value};

const ANA: &str = "ana-chat-token-0123456789";
const BOB: &str = "bob-chat-token-0123456789";

/// A flow whose `pay` tool counts its calls; the model calls it once, then says "paid".
fn counting_flow(calls: Arc<AtomicUsize>) -> FlowAgent {
    let model = ScriptedModel::rules()
        .when(
            |r| r.messages.last().is_some_and(|m| m.role == Role::Tool),
            ScriptStep::text("paid"),
        )
        .otherwise(ScriptStep::tool_call("pay", json!({})));
    let pay = tool_fn("pay", "Pays.", move |_: Value| {
        let calls = Arc::clone(&calls);
        async move {
            calls.fetch_add(1, Ordering::SeqCst);
            Ok::<_, std::io::Error>("paid once".to_owned())
        }
    });
    FlowAgent::new(
        ChatModelAgent::builder("teller", model)
            .tool(pay)
            .build()
            .unwrap(),
    )
}

fn state(store: InMemoryStore, calls: Arc<AtomicUsize>) -> AppState {
    let scopes = [Scope::Chat, Scope::Read];
    AppState::builder(store)
        .flow("pay", counting_flow(calls))
        .auth(Auth::tokens([
            (ANA, Principal::new("ana").scopes(scopes)),
            (BOB, Principal::new("bob").scopes(scopes)),
        ]))
        .build()
        .unwrap()
}

async fn post_as(
    token: &str,
    base: &str,
    path: &str,
    key: Option<&str>,
    body: Value,
) -> reqwest::Response {
    let mut request = client()
        .post(format!("{base}{path}"))
        .bearer_auth(token)
        .json(&body);
    if let Some(key) = key {
        request = request.header("Idempotency-Key", key);
    }
    request.send().await.unwrap()
}

async fn turns_of(base: &str, thread: &str) -> Value {
    client()
        .get(format!("{base}/v1/flows/pay/threads/{thread}"))
        .bearer_auth(ANA)
        .send()
        .await
        .unwrap()
        .json::<Value>()
        .await
        .unwrap()["turns"]
        .clone()
}

#[tokio::test]
async fn a_turn_sent_again_with_its_key_is_answered_from_its_record() {
    let calls = Arc::new(AtomicUsize::new(0));
    let server = spawn(state(InMemoryStore::new(), calls.clone())).await;
    let base = &server.base;
    let path = "/v1/flows/pay/threads/t1/turns";
    let body = json!({"message": "pay 7"});
    let first = read_sse(post_as(ANA, base, path, Some("\"k-1\""), body.clone()).await).await;
    assert_eq!(done(&first)["output"], "paid");
    let again = read_sse(post_as(ANA, base, path, Some("\"k-1\""), body.clone()).await).await;
    assert_eq!(done(&again)["output"], "paid");
    // The same events, from the record: the tool's result is among them.
    let results = |events: &[Sse]| {
        events
            .iter()
            .filter(|e| e.name == "event" && e.data["message"]["content"] == "paid once")
            .count()
    };
    assert_eq!((results(&first), results(&again)), (1, 1));
    assert_eq!(calls.load(Ordering::SeqCst), 1, "the tool ran once");
    assert_eq!(turns_of(base, "t1").await, 1, "one turn, not two");

    // Another body under the key: refused, nothing runs.
    let other = post_as(
        ANA,
        base,
        path,
        Some("\"k-1\""),
        json!({"message": "pay 8"}),
    )
    .await;
    let (status, code, message) = error_code(other).await;
    assert_eq!((status, code.as_str()), (422, "idempotency_key_reused"));
    assert!(message.contains("Idempotency-Key"), "{message}");
    // A malformed key is a clear 400.
    let bad = post_as(ANA, base, path, Some("\"\""), body.clone()).await;
    assert_eq!(error_code(bad).await.0, 400);
    assert_eq!(calls.load(Ordering::SeqCst), 1);

    // The key is the caller's: another principal's request under it is a run of its own.
    let bob = read_sse(post_as(BOB, base, path, Some("\"k-1\""), body.clone()).await).await;
    assert_eq!(done(&bob)["output"], "paid");
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    // And a new key is a new turn.
    read_sse(post_as(ANA, base, path, Some("k-2"), body).await).await;
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    assert_eq!(turns_of(base, "t1").await, 3);
}

#[tokio::test]
async fn a_background_run_sent_again_is_the_same_run_and_its_id_answers_after_a_restart() {
    let calls = Arc::new(AtomicUsize::new(0));
    let store = InMemoryStore::new();
    let server = spawn(state(store.clone(), calls.clone())).await;
    let base = &server.base;
    let path = "/v1/flows/pay/threads/t2/runs";
    let body = json!({"message": "pay 9"});
    let made: Value = post_as(ANA, base, path, Some("run-1"), body.clone())
        .await
        .json()
        .await
        .unwrap();
    let run_id = made["run_id"].as_str().unwrap().to_owned();
    let again: Value = post_as(ANA, base, path, Some("run-1"), body.clone())
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(again["run_id"], run_id, "the resend is the same run");
    let wait = |base: String, run_id: String| async move {
        client()
            .get(format!("{base}/v1/flows/pay/threads/t2/runs/{run_id}/wait"))
            .bearer_auth(ANA)
            .send()
            .await
            .unwrap()
    };
    let outcome: Value = wait(base.clone(), run_id.clone())
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(outcome["status"], "success", "{outcome}");
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    drop(server);

    // A new server on the store (a restart: no run in its memory) answers for the run from
    // its record, and the resend still runs nothing.
    let server = spawn(state(store, calls.clone())).await;
    let base = &server.base;
    let status: Value = client()
        .get(format!("{base}/v1/flows/pay/threads/t2/runs/{run_id}"))
        .bearer_auth(ANA)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(status["status"], "success", "{status}");
    assert_eq!(status["recorded"], true);
    let outcome: Value = wait(base.clone(), run_id.clone())
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(outcome["output"], "paid", "{outcome}");
    let resent = post_as(ANA, base, path, Some("run-1"), body).await;
    assert_eq!(resent.status(), 202);
    let resent: Value = resent.json().await.unwrap();
    assert_eq!(resent["status"], "success", "{resent}");
    assert_eq!(calls.load(Ordering::SeqCst), 1, "nothing ran again");
    // An id no run had is still unknown.
    let unknown = wait(base.clone(), "no-such-run".into()).await;
    assert_eq!(error_code(unknown).await.1, "unknown_run");
}

#[tokio::test]
async fn agent_protocol_runs_answer_after_a_restart() {
    let calls = Arc::new(AtomicUsize::new(0));
    let store = InMemoryStore::new();
    let server = spawn(state(store.clone(), calls.clone())).await;
    let input = json!({"assistant_id": "pay",
        "input": {"messages": [{"role": "user", "content": "pay 4"}]}});
    let run: Value = post_as(
        ANA,
        &server.base,
        "/v1/threads/t3/runs",
        Some("ap-1"),
        input.clone(),
    )
    .await
    .json()
    .await
    .unwrap();
    let run_id = run["run_id"].as_str().unwrap().to_owned();
    let read = |base: String, path: String| async move {
        client()
            .get(format!("{base}{path}"))
            .bearer_auth(ANA)
            .send()
            .await
            .unwrap()
    };
    let joined: Value = read(
        server.base.clone(),
        format!("/v1/threads/t3/runs/{run_id}/join"),
    )
    .await
    .json()
    .await
    .unwrap();
    assert_eq!(
        joined["messages"].as_array().unwrap().last().unwrap()["content"],
        "paid"
    );
    drop(server);

    let server = spawn(state(store, calls.clone())).await;
    let base = server.base.clone();
    let status: Value = read(base.clone(), format!("/v1/threads/t3/runs/{run_id}"))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(status["status"], "success", "{status}");
    let joined: Value = read(base.clone(), format!("/v1/threads/t3/runs/{run_id}/join"))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(
        joined["messages"].as_array().unwrap().last().unwrap()["content"],
        "paid"
    );
    // Sent again, the background run is the recorded one; the wait answers the values.
    let again: Value = post_as(
        ANA,
        &base,
        "/v1/threads/t3/runs",
        Some("ap-1"),
        input.clone(),
    )
    .await
    .json()
    .await
    .unwrap();
    assert_eq!(
        (again["run_id"].as_str(), again["status"].as_str()),
        (Some(run_id.as_str()), Some("success"))
    );
    assert_eq!(calls.load(Ordering::SeqCst), 1, "nothing ran again");
    let unknown = read(base, "/v1/threads/t3/runs/no-such-run".into()).await;
    assert_eq!(error_code(unknown).await.1, "unknown_run");
}

#[tokio::test]
async fn a2a_message_ids_and_agui_run_ids_are_keys() {
    let calls = Arc::new(AtomicUsize::new(0));
    let server = spawn(state(InMemoryStore::new(), calls.clone())).await;
    let base = &server.base;
    let send = |id: &str, text: &str| {
        json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {
            "messageId": id, "role": "ROLE_USER", "contextId": "c1", "parts": [{"text": text}]}}})
    };
    let first: Value = post_as(ANA, base, "/a2a/pay", None, send("m-1", "pay 1"))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(first["result"]["task"]["id"], "c1.0", "{first}");
    let again: Value = post_as(ANA, base, "/a2a/pay", None, send("m-1", "pay 1"))
        .await
        .json()
        .await
        .unwrap();
    // SendMessage answers the recorded task again.
    assert_eq!(again["result"]["task"]["id"], "c1.0", "{again}");
    assert_eq!(
        again["result"]["task"]["status"]["state"],
        "TASK_STATE_COMPLETED"
    );
    // SendStreamingMessage says which task it is.
    let mut streamed = send("m-1", "pay 1");
    streamed["method"] = json!("SendStreamingMessage");
    let text = post_as(ANA, base, "/a2a/pay", None, streamed)
        .await
        .text()
        .await
        .unwrap();
    assert!(
        text.contains("'c1.0'") && text.contains("nothing ran again"),
        "{text}"
    );
    let reused: Value = post_as(ANA, base, "/a2a/pay", None, send("m-1", "pay 2"))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(reused["error"]["code"], -32602, "{reused}");
    assert_eq!(calls.load(Ordering::SeqCst), 1);

    let input = json!({"threadId": "g1", "runId": "r-1", "tools": [], "context": [], "state": {},
        "forwardedProps": {}, "messages": [{"id": "1", "role": "user", "content": "pay 3"}]});
    let first = post_as(ANA, base, "/agui/pay", None, input.clone()).await;
    assert_eq!(first.status(), 200);
    let _ = first.bytes().await.unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    let again = post_as(ANA, base, "/agui/pay", None, input).await;
    let (status, _, message) = error_code(again).await;
    assert_eq!(status, 409);
    assert!(message.contains("nothing ran again"), "{message}");
    assert_eq!(calls.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_queued_run_sent_again_is_queued_once() {
    let calls = Arc::new(AtomicUsize::new(0));
    let state = AppState::builder(InMemoryStore::new())
        .flow("pay", counting_flow(calls.clone()))
        .auth(Auth::tokens([(
            ANA,
            Principal::new("ana").scopes([Scope::Chat, Scope::Read]),
        )]))
        .run_queue(agentweave_runtime::store::InMemoryRunQueue::new())
        .build()
        .unwrap();
    let server = spawn(state).await;
    let base = &server.base;
    let path = "/v1/flows/pay/threads/q1/runs";
    let body = json!({"message": "pay 5"});
    let first: Value = post_as(ANA, base, path, Some("q-1"), body.clone())
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(first["queued"], true, "{first}");
    let again = post_as(ANA, base, path, Some("q-1"), body).await;
    assert_eq!(again.status(), 202);
    let again: Value = again.json().await.unwrap();
    assert_eq!(again["run_id"], first["run_id"], "{again}");
    let run_id = first["run_id"].as_str().unwrap();
    let outcome: Value = client()
        .get(format!("{base}{path}/{run_id}/wait"))
        .bearer_auth(ANA)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(outcome["status"], "success", "{outcome}");
    let listed: Value = client()
        .get(format!("{base}{path}"))
        .bearer_auth(ANA)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(listed["runs"].as_array().unwrap().len(), 1, "{listed}");
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}
