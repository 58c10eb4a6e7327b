//! A failed turn, on every door: each protocol maps the engine's one turn stream, so a model
//! whose stream breaks part-way and a store that fails while recording the turn end the same
//! way everywhere: the protocol's documented public error (`model_unavailable`,
//! `store_unavailable`), the turn not recorded and its run or task failed, the stream closed
//! cleanly, and nothing internal sent (the test server's leak check reads every byte, and
//! each test looks for the failures' internal text).

use crate::common;

use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;

use agentweave_runtime::model::ModelError;
use agentweave_runtime::store::{StoreError, ThreadError, ThreadHead, ThreadRecord, ThreadStore};
use agentweave_runtime::{
    ChatModelAgent, FlowAgent, FnAgent, InMemoryStore, RetryPolicy, ScriptStep, ScriptedModel,
};
use agentweave_server::{AppState, Auth};
use async_trait::async_trait;
use common::{read_sse, spawn, TOKEN};
use serde_json::{json, Value};

/// Internal text of the failures: never sent.
const MODEL_SECRET: &str = "upstream 10.9.8.7:443 reset by peer";
const STORE_SECRET: &str = "/srv/secret/threads: permission denied";

/// A thread store that records nothing: every append fails with an I/O error naming a server
/// path; the rest is the memory store's.
struct AppendFails(InMemoryStore);

#[async_trait]
impl ThreadStore for AppendFails {
    async fn head(&self, id: &str) -> Result<Option<ThreadHead>, ThreadError> {
        self.0.head(id).await
    }
    async fn read(&self, id: &str, turns: Range<u64>) -> Result<Vec<ThreadRecord>, ThreadError> {
        self.0.read(id, turns).await
    }
    async fn append(&self, id: &str, _: u64, _: ThreadRecord) -> Result<u64, ThreadError> {
        Err(StoreError::Io {
            operation: "append",
            id: id.to_owned(),
            source: Arc::new(std::io::Error::other(STORE_SECRET)),
        }
        .into())
    }
    async fn list(&self) -> Result<Vec<String>, ThreadError> {
        self.0.list().await
    }
    async fn delete(&self, id: &str) -> Result<bool, ThreadError> {
        self.0.delete(id).await
    }
    async fn lease_thread(&self, id: &str, owner: &str, ttl: Duration) -> Result<(), ThreadError> {
        self.0.lease_thread(id, owner, ttl).await
    }
    async fn renew_thread_lease(
        &self,
        id: &str,
        owner: &str,
        ttl: Duration,
    ) -> Result<(), ThreadError> {
        self.0.renew_thread_lease(id, owner, ttl).await
    }
    async fn release_thread_lease(&self, id: &str, owner: &str) -> Result<(), ThreadError> {
        self.0.release_thread_lease(id, owner).await
    }
}

/// Two flows: `model`, whose model's stream breaks after two chunks (no retry), and `store`,
/// which answers but whose turns cannot be recorded.
fn state() -> AppState {
    let broken = ScriptStep::text("a partial answer that will never finish").fail_mid_stream(
        2,
        ModelError::Connection {
            model: "m".into(),
            message: MODEL_SECRET.into(),
        },
    );
    let model = ScriptedModel::rules().otherwise(broken);
    let helper = ChatModelAgent::builder("helper", model)
        .retry(RetryPolicy::none())
        .build()
        .unwrap();
    let clerk = FnAgent::new("clerk", |cx, _| async move {
        cx.say("noted");
        Ok(())
    });
    let store = InMemoryStore::new();
    let threads = store.clone();
    AppState::builder(store)
        .flow("model", FlowAgent::new(helper))
        .flow("store", FlowAgent::new(clerk))
        .runners(move |name, runner| match name {
            "store" => runner.thread_store(AppendFails(threads.clone())),
            _ => runner,
        })
        .auth(Auth::bearer(TOKEN))
        .webhook_secret(SECRET)
        // The test's receivers listen on loopback: let it through, as an operator would.
        .outbound(common::loopback_allowed())
        .build()
        .unwrap()
}

const SECRET: &[u8] = b"failed-streams-webhook-secret";

/// The public code each flow's failure has.
const FLOWS: [(&str, &str); 2] = [
    ("model", "model_unavailable"),
    ("store", "store_unavailable"),
];

fn assert_no_secret(text: &str) {
    for secret in [MODEL_SECRET, STORE_SECRET, "10.9.8.7", "/srv/secret"] {
        assert!(!text.contains(secret), "sent {secret:?}: {text}");
    }
}

async fn post(base: &str, path: &str, body: Value) -> reqwest::Response {
    common::post(base, path, body).await
}

/// The thread has no record: the failed turn was not recorded.
async fn assert_not_recorded(base: &str, flow: &str, thread: &str) {
    let response = common::get(base, &format!("/v1/flows/{flow}/threads/{thread}")).await;
    let status = response.status().as_u16();
    let body: Value = response.json().await.unwrap();
    assert!(
        status == 404 || body["messages"].as_array().is_some_and(Vec::is_empty),
        "{flow}/{thread}: {status} {body}"
    );
}

#[tokio::test]
async fn a_turn_ends_with_its_public_error_and_done_failed() {
    let server = spawn(state()).await;
    for (flow, code) in FLOWS {
        let response = post(
            &server.base,
            &format!("/v1/flows/{flow}/threads/t1/turns"),
            json!({"message": "help"}),
        )
        .await;
        let events = read_sse(response).await;
        let text = format!("{events:?}");
        assert_no_secret(&text);
        let errors: Vec<&Value> = events
            .iter()
            .filter(|e| e.name == "error")
            .map(|e| &e.data)
            .collect();
        assert!(
            errors.iter().any(|e| e["code"] == code),
            "{flow}: no `error` with {code}: {text}"
        );
        for e in &errors {
            assert!(
                e["correlation_id"].as_str().is_some_and(|c| c.len() == 16),
                "{e}"
            );
        }
        let done = common::done(&events);
        assert_eq!(done["failed"], true, "{flow}: {done}");
        assert_eq!(done["interrupted"], false);
        assert_not_recorded(&server.base, flow, "t1").await;
    }
}

#[tokio::test]
async fn a_streamed_run_ends_with_done_error_and_its_run_is_failed() {
    let server = spawn(state()).await;
    for (flow, code) in FLOWS {
        let response = post(
            &server.base,
            &format!("/v1/flows/{flow}/threads/t2/runs"),
            json!({"message": "help", "stream": true}),
        )
        .await;
        let events = read_sse(response).await;
        let text = format!("{events:?}");
        assert_no_secret(&text);
        // The agent's error event, then the run's end.
        assert!(
            events
                .iter()
                .any(|e| e.name == "event" && e.data["error"]["code"] == code),
            "{flow}: no event with {code}: {text}"
        );
        let done = common::done(&events);
        assert_eq!(done["status"], "error", "{flow}: {done}");
        assert_eq!(done["error"]["code"], code, "{flow}: {done}");
        let run_id = done["run_id"].as_str().unwrap();
        let run: Value = common::get(
            &server.base,
            &format!("/v1/flows/{flow}/threads/t2/runs/{run_id}"),
        )
        .await
        .json()
        .await
        .unwrap();
        assert_eq!(run["status"], "error", "{run}");
        assert_no_secret(&run.to_string());
        assert_not_recorded(&server.base, flow, "t2").await;
    }
}

/// A webhook receiver on loopback: sends each POST's body to the channel.
async fn receiver() -> (String, tokio::sync::mpsc::UnboundedReceiver<Vec<u8>>) {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |body: axum::body::Bytes| {
            let tx = tx.clone();
            async move {
                let _ = tx.send(body.to_vec());
                axum::http::StatusCode::OK
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    // `127.1`: the leak check refuses `http://127.0.0.1` in any answer.
    (format!("http://127.1:{}/hook", addr.port()), rx)
}

#[tokio::test]
async fn a_background_run_waits_to_error_and_its_webhook_says_so() {
    let server = spawn(state()).await;
    let (url, mut hooks) = receiver().await;
    for (flow, code) in FLOWS {
        let started = post(
            &server.base,
            &format!("/v1/flows/{flow}/threads/t3/runs"),
            json!({"message": "help", "webhook": url}),
        )
        .await;
        assert_eq!(started.status(), 202);
        let started: Value = started.json().await.unwrap();
        let run_id = started["run_id"].as_str().unwrap();
        let waited: Value = common::get(
            &server.base,
            &format!("/v1/flows/{flow}/threads/t3/runs/{run_id}/wait"),
        )
        .await
        .json()
        .await
        .unwrap();
        assert_eq!(waited["status"], "error", "{flow}: {waited}");
        assert_eq!(waited["error"]["code"], code, "{flow}: {waited}");
        assert_no_secret(&waited.to_string());
        let hook = tokio::time::timeout(Duration::from_secs(20), hooks.recv())
            .await
            .expect("the webhook is sent")
            .unwrap();
        let hook: Value = serde_json::from_slice(&hook).unwrap();
        assert_eq!(hook["status"], "error", "{flow}: {hook}");
        assert_eq!(hook["error"]["code"], code, "{flow}: {hook}");
        assert_no_secret(&hook.to_string());
        assert_not_recorded(&server.base, flow, "t3").await;
    }
}

#[tokio::test]
async fn an_agent_protocol_run_streams_its_error_and_wait_answers_it() {
    let server = spawn(state()).await;
    for (flow, code) in FLOWS {
        let response = post(
            &server.base,
            "/v1/threads/t4/runs/stream",
            json!({"assistant_id": flow, "input": {"messages": [{"role": "user", "content": "help"}]}}),
        )
        .await;
        let events = read_sse(response).await;
        let text = format!("{events:?}");
        assert_no_secret(&text);
        let error = events
            .iter()
            .find(|e| e.name == "error")
            .unwrap_or_else(|| panic!("{flow}: no `error`: {text}"));
        assert_eq!(error.data["error"], code, "{flow}: {text}");
        assert_eq!(events.last().unwrap().name, "end", "{flow}: {text}");

        let waited: Value = post(
            &server.base,
            "/v1/threads/t5/runs/wait",
            json!({"assistant_id": flow, "input": {"messages": [{"role": "user", "content": "help"}]}}),
        )
        .await
        .json()
        .await
        .unwrap();
        assert_eq!(waited["__error__"]["error"], code, "{flow}: {waited}");
        assert_no_secret(&waited.to_string());
        for thread in ["t4", "t5"] {
            let state: Value = common::get(&server.base, &format!("/v1/threads/{thread}/state"))
                .await
                .json()
                .await
                .unwrap();
            assert_no_secret(&state.to_string());
            assert_eq!(
                state["values"]["messages"].as_array().map_or(0, Vec::len),
                0,
                "{flow}/{thread}: {state}"
            );
        }
        // The protocol's threads are the caller's: the next flow uses new ones.
        let deleted = common::client()
            .delete(format!("{}/v1/threads/t4", server.base))
            .bearer_auth(TOKEN)
            .send()
            .await
            .unwrap();
        assert!(deleted.status().is_success(), "{}", deleted.status());
        let deleted = common::client()
            .delete(format!("{}/v1/threads/t5", server.base))
            .bearer_auth(TOKEN)
            .send()
            .await
            .unwrap();
        assert!(deleted.status().is_success(), "{}", deleted.status());
    }
}

fn a2a_send(method: &str, context: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": {"message": {
        "messageId": format!("m-{context}"), "role": "ROLE_USER", "contextId": context,
        "parts": [{"text": "help"}]}}})
}

async fn a2a(base: &str, flow: &str, body: Value) -> reqwest::Response {
    common::client()
        .post(format!("{base}/a2a/{flow}"))
        .bearer_auth(TOKEN)
        .header("A2A-Version", "1.0")
        .json(&body)
        .send()
        .await
        .unwrap()
}

/// The error an A2A failed status carries (its message's metadata).
fn a2a_error(status: &Value) -> &Value {
    &status["message"]["metadata"]["agentflow"]["error"]
}

#[tokio::test]
async fn an_a2a_task_fails_with_its_public_error_sent_or_streamed() {
    let server = spawn(state()).await;
    for (flow, code) in FLOWS {
        let context = format!("ctx-{flow}");
        // SendMessage waits for the task's end by default.
        let answer: Value = a2a(&server.base, flow, a2a_send("SendMessage", &context))
            .await
            .json()
            .await
            .unwrap();
        assert_no_secret(&answer.to_string());
        let task = &answer["result"]["task"];
        assert_eq!(
            task["status"]["state"], "TASK_STATE_FAILED",
            "{flow}: {answer}"
        );
        assert_eq!(a2a_error(&task["status"])["code"], code, "{flow}: {answer}");
        let got: Value = a2a(
            &server.base,
            flow,
            json!({"jsonrpc": "2.0", "id": 2, "method": "GetTask", "params": {"id": task["id"]}}),
        )
        .await
        .json()
        .await
        .unwrap();
        assert_eq!(
            got["result"]["status"]["state"], "TASK_STATE_FAILED",
            "{flow}: {got}"
        );

        let streamed = a2a(
            &server.base,
            flow,
            a2a_send("SendStreamingMessage", &format!("{context}-s")),
        )
        .await;
        assert_eq!(streamed.headers()["content-type"], "text/event-stream");
        let text = tokio::time::timeout(Duration::from_secs(30), streamed.text())
            .await
            .expect("the stream closes")
            .unwrap();
        assert_no_secret(&text);
        let events: Vec<Value> = text
            .split("\n\n")
            .filter_map(|f| f.strip_prefix("data: "))
            .map(|d| serde_json::from_str(d).unwrap())
            .collect();
        let last = &events.last().unwrap()["result"]["statusUpdate"]["status"];
        assert_eq!(last["state"], "TASK_STATE_FAILED", "{flow}: {text}");
        assert_eq!(a2a_error(last)["code"], code, "{flow}: {text}");
    }
}

#[tokio::test]
async fn an_agui_run_ends_with_run_error() {
    let server = spawn(state()).await;
    for (flow, code) in FLOWS {
        let response = common::client()
            .post(format!("{}/agui/{flow}", server.base))
            .bearer_auth(TOKEN)
            .json(
                &json!({"threadId": "t6", "runId": "r1", "tools": [], "context": [],
                "messages": [{"id": "1", "role": "user", "content": "help"}]}),
            )
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        let text = tokio::time::timeout(Duration::from_secs(30), response.text())
            .await
            .expect("the stream closes")
            .unwrap();
        assert_no_secret(&text);
        let events: Vec<Value> = text
            .split("\n\n")
            .filter_map(|f| f.strip_prefix("data: "))
            .map(|d| serde_json::from_str(d).unwrap())
            .collect();
        assert_eq!(events[0]["type"], "RUN_STARTED");
        let last = events.last().unwrap();
        assert_eq!(last["type"], "RUN_ERROR", "{flow}: {text}");
        assert_eq!(last["code"], code, "{flow}: {text}");
        // Exactly one terminal event, and every streamed message that started was ended.
        let terminal = events
            .iter()
            .filter(|e| matches!(e["type"].as_str(), Some("RUN_ERROR" | "RUN_FINISHED")))
            .count();
        assert_eq!(terminal, 1, "{flow}: {text}");
        let starts = events
            .iter()
            .filter(|e| e["type"] == "TEXT_MESSAGE_START")
            .count();
        let ends = events
            .iter()
            .filter(|e| e["type"] == "TEXT_MESSAGE_END")
            .count();
        assert_eq!(starts, ends, "{flow}: {text}");
        if flow == "model" {
            assert_eq!(starts, 1, "the broken message started and ended: {text}");
        }
        assert_not_recorded(&server.base, flow, "t6").await;
    }
}

/// A server whose one flow, `flaky`, has a model whose first stream breaks part-way (a
/// retryable failure) and whose retry answers.
async fn flaky() -> common::TestServer {
    let model = ScriptedModel::new([
        ScriptStep::text("a partial answer that will never finish").fail_mid_stream(
            2,
            ModelError::StreamInterrupted {
                model: "m".into(),
                message: MODEL_SECRET.into(),
            },
        ),
        ScriptStep::text("all good"),
    ]);
    let helper = ChatModelAgent::builder("helper", model)
        .retry(RetryPolicy::new(1))
        .build()
        .unwrap();
    spawn(
        AppState::builder(InMemoryStore::new())
            .flow("flaky", FlowAgent::new(helper))
            .auth(Auth::bearer(TOKEN))
            .build()
            .unwrap(),
    )
    .await
}

/// The whole messages of a native stream's `event`s.
fn whole_messages(events: &[common::Sse]) -> Vec<String> {
    events
        .iter()
        .filter(|e| e.name == "event")
        .filter_map(|e| e.data["message"]["content"].as_str())
        .map(str::to_owned)
        .collect()
}

#[tokio::test]
async fn a_broken_stream_that_is_retried_shows_its_error_and_never_its_partial_message() {
    // /turns
    let server = flaky().await;
    let events = read_sse(
        post(
            &server.base,
            "/v1/flows/flaky/threads/t/turns",
            json!({"message": "help"}),
        )
        .await,
    )
    .await;
    let text = format!("{events:?}");
    assert_no_secret(&text);
    assert!(
        events
            .iter()
            .any(|e| e.name == "error" && e.data["code"] == "model_unavailable"),
        "{text}"
    );
    assert_eq!(whole_messages(&events), ["all good"], "{text}");
    assert_eq!(common::done(&events)["output"], "all good");

    // Streamed /runs (and so the Agent Protocol and webhooks, which read the same run).
    let server = flaky().await;
    let events = read_sse(
        post(
            &server.base,
            "/v1/flows/flaky/threads/t/runs",
            json!({"message": "help", "stream": true}),
        )
        .await,
    )
    .await;
    let text = format!("{events:?}");
    assert_no_secret(&text);
    assert!(
        events
            .iter()
            .any(|e| e.name == "event" && e.data["error"]["code"] == "model_unavailable"),
        "{text}"
    );
    assert_eq!(whole_messages(&events), ["all good"], "{text}");
    assert_eq!(common::done(&events)["status"], "success", "{text}");

    // A2A: the task's history has the answer only.
    let server = flaky().await;
    let answer: Value = a2a(&server.base, "flaky", a2a_send("SendMessage", "ctx"))
        .await
        .json()
        .await
        .unwrap();
    let task = &answer["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{answer}");
    assert!(!answer.to_string().contains("partial"), "{answer}");

    // AG-UI: the broken message is ended where it broke, then the answer streams.
    let server = flaky().await;
    let text = common::client()
        .post(format!("{}/agui/flaky", server.base))
        .bearer_auth(TOKEN)
        .json(&json!({"threadId": "t", "runId": "r1",
            "messages": [{"id": "1", "role": "user", "content": "help"}]}))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert_no_secret(&text);
    let events: Vec<Value> = text
        .split("\n\n")
        .filter_map(|f| f.strip_prefix("data: "))
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    let kinds: Vec<&str> = events.iter().filter_map(|e| e["type"].as_str()).collect();
    let starts: Vec<usize> = (0..kinds.len())
        .filter(|&i| kinds[i] == "TEXT_MESSAGE_START")
        .collect();
    assert_eq!(starts.len(), 2, "{kinds:?}");
    assert_eq!(
        kinds.iter().filter(|k| **k == "TEXT_MESSAGE_END").count(),
        2,
        "{kinds:?}"
    );
    // The first message ends before the second starts.
    let first_end = kinds.iter().position(|k| *k == "TEXT_MESSAGE_END").unwrap();
    assert!(first_end < starts[1], "{kinds:?}");
    assert_eq!(kinds.last(), Some(&"RUN_FINISHED"), "{kinds:?}");
}

/// Every correlation id in `events`, wherever it is (an event's error, an `error` frame, `done`).
fn references(events: &[common::Sse]) -> std::collections::BTreeSet<String> {
    fn walk(v: &Value, out: &mut std::collections::BTreeSet<String>) {
        match v {
            Value::Object(map) => {
                for (k, v) in map {
                    match (k.as_str(), v.as_str()) {
                        ("correlation_id", Some(id)) => {
                            out.insert(id.to_owned());
                        }
                        _ => walk(v, out),
                    }
                }
            }
            Value::Array(items) => items.iter().for_each(|v| walk(v, out)),
            _ => {}
        }
    }
    let mut out = std::collections::BTreeSet::new();
    for e in events {
        walk(&e.data, &mut out);
    }
    out
}

#[tokio::test]
async fn one_failure_shows_one_reference_on_the_turn_and_run_doors() {
    let server = spawn(state()).await;
    let base = &server.base;
    for (flow, _) in FLOWS {
        // A turn: its error event (or broken stream) and its failure say one reference.
        let events = read_sse(
            post(
                base,
                &format!("/v1/flows/{flow}/threads/r1/turns"),
                json!({"message": "help"}),
            )
            .await,
        )
        .await;
        let refs = references(&events);
        assert_eq!(refs.len(), 1, "{flow}: {refs:?} in {events:#?}");

        // A run: its error event, its `done`, and the run read afterwards say one reference.
        let events = read_sse(
            post(
                base,
                &format!("/v1/flows/{flow}/threads/r2/runs"),
                json!({"message": "help", "stream": true}),
            )
            .await,
        )
        .await;
        let mut refs = references(&events);
        let run_id = common::done(&events)["run_id"].as_str().unwrap().to_owned();
        let run: Value = common::get(base, &format!("/v1/flows/{flow}/threads/r2/runs/{run_id}"))
            .await
            .json()
            .await
            .unwrap();
        refs.extend(references(&[common::Sse {
            name: "run".into(),
            data: run,
        }]));
        assert_eq!(refs.len(), 1, "{flow}: {refs:?} in {events:#?}");
    }
}
