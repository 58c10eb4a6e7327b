// Its own test binary, not a module of tests/it: it installs a process-wide tracing subscriber
// (`set_global_default`, once per process).
//! A model outage seen through A2A and AG-UI: the client sees the public error (its message, its
//! stable code and a correlation id) and nothing of the internal one (the model's URL, the OS
//! error, the store key of the thread); the server's log has the internal error under the same
//! correlation id.

mod common;

use std::fmt::Write as _;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use agentweave_runtime::model::{ChatModel, ChatRequest};
use agentweave_runtime::{
    ChatModelAgent, FlowAgent, InMemoryStore, Message, ModelError, RetryPolicy,
};
use agentweave_server::{AppState, Auth};
use async_trait::async_trait;
use common::{spawn, TOKEN};
use serde_json::{json, Value};

/// The public message of a model outage.
const PUBLIC: &str = "The assistant is unavailable right now; try again.";

/// Text of the internal error that must never reach a client.
const INTERNAL: &[&str] = &[
    "http://127.0.0.1:4999",
    "os error",
    "Connection refused",
    "gpt-internal",
];

/// A model whose server is down: every call fails as a real HTTP model's would, naming the
/// internal URL and the OS error.
struct DownModel;

#[async_trait]
impl ChatModel for DownModel {
    fn model_name(&self) -> &str {
        "gpt-internal"
    }

    async fn generate(&self, _request: &ChatRequest) -> Result<Message, ModelError> {
        Err(ModelError::Connection {
            model: "gpt-internal".into(),
            message: "POST http://127.0.0.1:4999/v1/chat/completions: error sending request \
                      for url: Connection refused (os error 111)"
                .into(),
        })
    }
}

fn state() -> AppState {
    let agent = ChatModelAgent::builder("assistant", DownModel)
        .retry(RetryPolicy::none())
        .build()
        .unwrap();
    AppState::builder(InMemoryStore::new())
        .flow("outage", FlowAgent::new(agent))
        .auth(Auth::bearer(TOKEN))
        .build()
        .unwrap()
}

/// What the server logged at target `agentweave_server::outward`, one line per event.
fn log() -> &'static Mutex<Vec<String>> {
    static LOG: OnceLock<Mutex<Vec<String>>> = OnceLock::new();
    LOG.get_or_init(|| {
        tracing::subscriber::set_global_default(Capture).expect("one subscriber per test binary");
        Mutex::new(Vec::new())
    })
}

/// A subscriber keeping the fields of the outward module's events.
struct Capture;

struct Fields(String);

impl tracing::field::Visit for Fields {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        let _ = write!(self.0, "{}={:?} ", field.name(), value);
    }
}

impl tracing::Subscriber for Capture {
    fn enabled(&self, metadata: &tracing::Metadata<'_>) -> bool {
        metadata.target().starts_with("agentweave_server::outward")
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        let mut fields = Fields(String::new());
        event.record(&mut fields);
        log().lock().unwrap().push(fields.0);
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

/// Asserts `text` (what a client received) holds the public message and no internal text nor
/// the thread's store key, and that the log holds the internal error under `correlation_id`.
fn assert_public(text: &str, correlation_id: &str, thread: &str) {
    assert!(text.contains(PUBLIC), "{text}");
    assert!(text.contains(correlation_id), "{text}");
    for needle in INTERNAL {
        assert!(!text.contains(needle), "the client saw {needle:?}: {text}");
    }
    let store_key = format!("outage._.{thread}");
    assert!(
        !text.contains(&store_key),
        "the client saw {store_key}: {text}"
    );
    assert!(
        !text.contains("outage._."),
        "the client saw a store key: {text}"
    );
    let logged = log().lock().unwrap().clone();
    let line = logged
        .iter()
        .find(|l| l.contains(correlation_id))
        .unwrap_or_else(|| panic!("no log line has {correlation_id}: {logged:?}"));
    assert!(line.contains("Connection refused"), "{line}");
    assert!(line.contains("model_unavailable"), "{line}");
}

fn is_correlation_id(id: &str) -> bool {
    id.len() == 16 && id.bytes().all(|b| b.is_ascii_hexdigit())
}

async fn post(base: &str, path: &str, body: Value) -> String {
    let response = reqwest::Client::new()
        .post(format!("{base}{path}"))
        .bearer_auth(TOKEN)
        .header("A2A-Version", "1.0")
        .json(&body)
        .send()
        .await
        .unwrap();
    tokio::time::timeout(Duration::from_secs(60), response.text())
        .await
        .unwrap()
        .unwrap()
}

fn send(method: &str, context: &str) -> Value {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let id = format!(
        "m{}",
        NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    );
    json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": {"message": {
        "messageId": id, "role": "ROLE_USER", "contextId": context,
        "parts": [{"text": "Reset my password"}]}}})
}

/// The failed task's status message: the public text with its reference, and the public error
/// in its metadata.
fn check_failed_status(status: &Value, text: &str, thread: &str) {
    assert_eq!(status["state"], "TASK_STATE_FAILED", "{text}");
    let error = &status["message"]["metadata"]["agentflow"]["error"];
    assert_eq!(error["code"], "model_unavailable", "{text}");
    assert_eq!(error["message"], PUBLIC, "{text}");
    let id = error["correlation_id"].as_str().unwrap();
    assert!(is_correlation_id(id), "{id}");
    let shown = status["message"]["parts"][0]["text"].as_str().unwrap();
    assert_eq!(shown, format!("{PUBLIC} (ref {id})"));
    assert_public(text, id, thread);
}

#[tokio::test]
async fn a_model_outage_fails_an_a2a_task_with_the_public_error_only() {
    log();
    let server = spawn(state()).await;

    // SendMessage: the task comes back failed.
    let text = post(&server.base, "/a2a/outage", send("SendMessage", "ctx-down")).await;
    let reply: Value = serde_json::from_str(&text).unwrap();
    let status = &reply["result"]["task"]["status"];
    check_failed_status(status, &text, "ctx-down");

    // GetTask shows the same failure.
    let task_id = reply["result"]["task"]["id"].as_str().unwrap();
    let get = json!({"jsonrpc": "2.0", "id": 2, "method": "GetTask", "params": {"id": task_id}});
    let text = post(&server.base, "/a2a/outage", get).await;
    let task: Value = serde_json::from_str(&text).unwrap();
    check_failed_status(&task["result"]["status"], &text, "ctx-down");

    // SendStreamingMessage: the last update is the failed status.
    let text = post(
        &server.base,
        "/a2a/outage",
        send("SendStreamingMessage", "ctx-down-2"),
    )
    .await;
    let last: Value = text
        .split("\n\n")
        .filter_map(|f| f.strip_prefix("data: "))
        .map(|d| serde_json::from_str(d).unwrap())
        .last()
        .unwrap();
    check_failed_status(
        &last["result"]["statusUpdate"]["status"],
        &text,
        "ctx-down-2",
    );
}

#[tokio::test]
async fn a_model_outage_ends_an_agui_run_with_a_public_run_error() {
    log();
    let server = spawn(state()).await;
    let input = json!({"threadId": "th-down", "runId": "r1", "tools": [], "context": [],
        "state": {}, "forwardedProps": {},
        "messages": [{"id": "u1", "role": "user", "content": "Reset my password"}]});
    let text = post(&server.base, "/agui/outage", input).await;
    let events: Vec<Value> = text
        .split("\n\n")
        .filter_map(|f| f.strip_prefix("data: "))
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    let last = events.last().unwrap();
    assert_eq!(last["type"], "RUN_ERROR", "{text}");
    assert_eq!(last["code"], "model_unavailable", "{text}");
    let error = &last["metadata"]["agentflow"]["error"];
    let id = error["correlation_id"].as_str().unwrap();
    assert!(is_correlation_id(id), "{id}");
    assert_eq!(error["message"], PUBLIC);
    assert_eq!(last["message"], format!("{PUBLIC} (ref {id})"));
    assert_public(&text, id, "th-down");
}

async fn get(base: &str, path: &str) -> String {
    let response = reqwest::Client::new()
        .get(format!("{base}{path}"))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    tokio::time::timeout(Duration::from_secs(60), response.text())
        .await
        .unwrap()
        .unwrap()
}

/// The `data` of every SSE frame named `name` in `text`.
fn frames<'a>(text: &'a str, name: &'a str) -> impl Iterator<Item = Value> + 'a {
    text.split("\n\n").filter_map(move |frame| {
        let mut lines = frame.lines();
        lines.find(|l| *l == format!("event: {name}"))?;
        let data = frame.lines().find_map(|l| l.strip_prefix("data: "))?;
        Some(serde_json::from_str(data).unwrap())
    })
}

#[tokio::test]
async fn a_model_outage_shows_a_background_run_the_public_error_only() {
    log();
    let server = spawn(state()).await;
    let started: Value = serde_json::from_str(
        &post(
            &server.base,
            "/v1/flows/outage/threads/run-down/runs",
            json!({"message": "Reset my password"}),
        )
        .await,
    )
    .unwrap();
    let run = started["run_id"].as_str().unwrap();

    // Waiting: the outcome is the public error.
    let text = get(
        &server.base,
        &format!("/v1/flows/outage/threads/run-down/runs/{run}/wait"),
    )
    .await;
    let outcome: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(outcome["status"], "error", "{text}");
    assert_eq!(outcome["error"]["code"], "model_unavailable", "{text}");
    let id = outcome["error"]["correlation_id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(is_correlation_id(&id), "{id}");
    assert_public(&text, &id, "run-down");

    // Its stream, read after the run ended: the agent's error event and the `done` event
    // carry the public faces; the run's failure has the same correlation id as `wait` gave.
    let text = get(
        &server.base,
        &format!("/v1/flows/outage/threads/run-down/runs/{run}/stream"),
    )
    .await;
    let errors: Vec<Value> = frames(&text, "event")
        .filter_map(|e| e.get("error").cloned())
        .collect();
    assert!(!errors.is_empty(), "no error event: {text}");
    for error in &errors {
        assert_eq!(error["code"], "model_unavailable", "{text}");
        assert_public(&text, error["correlation_id"].as_str().unwrap(), "run-down");
    }
    let done = frames(&text, "done").last().unwrap();
    assert_eq!(done["error"]["correlation_id"], id.as_str(), "{text}");
    assert_public(&text, &id, "run-down");

    // A second reader of the same stream sees the same correlation ids.
    let again = get(
        &server.base,
        &format!("/v1/flows/outage/threads/run-down/runs/{run}/stream"),
    )
    .await;
    let again_errors: Vec<Value> = frames(&again, "event")
        .filter_map(|e| e.get("error").cloned())
        .collect();
    assert_eq!(errors, again_errors);
}

#[tokio::test]
async fn a_model_outage_shows_an_agent_protocol_client_the_public_error_only() {
    log();
    let server = spawn(state()).await;
    let body = json!({"assistant_id": "outage", "stream_mode": ["updates", "messages-tuple"],
        "input": {"messages": [{"role": "user", "content": "Reset my password"}]}});

    let text = post(&server.base, "/v1/threads/ap-down/runs/wait", body.clone()).await;
    let values: Value = serde_json::from_str(&text).unwrap();
    let error = &values["__error__"];
    assert_eq!(error["error"], "model_unavailable", "{text}");
    assert_public(&text, error["correlation_id"].as_str().unwrap(), "ap-down");

    let text = post(&server.base, "/v1/threads/ap-down-2/runs/stream", body).await;
    let error = frames(&text, "error").last().expect("an error event");
    assert_eq!(error["error"], "model_unavailable", "{text}");
    assert_public(
        &text,
        error["correlation_id"].as_str().unwrap(),
        "ap-down-2",
    );
}
