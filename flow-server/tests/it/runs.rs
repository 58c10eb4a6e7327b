//! Runs over HTTP against a real server on a loopback port: background runs answer their id
//! at once; any client attaches over SSE, and one that disconnects at every event and
//! reconnects with `Last-Event-ID` gets each event exactly once, in order; cancel modes and
//! resume; `on_disconnect`; double texting with two clients; bad input as clear JSON errors.
//!
//! No timing: the gated flow's tool stops at a gate the test opens, and says when it is there.

use crate::common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use agentweave_runtime::async_trait;
use agentweave_runtime::model::{ChatRequest, ModelError};
use agentweave_runtime::{
    tool_fn, ChatModel, ChatModelAgent, FlowAgent, InMemoryStore, Message, Role, ToolCall,
};
use agentweave_server::{AppState, Auth};
use common::{error_code, spawn, TOKEN};
use eventsource_stream::Eventsource;
use futures::StreamExt;
use serde_json::{json, Value};
use tokio::sync::{mpsc, Semaphore};

struct Gates {
    said: mpsc::UnboundedSender<&'static str>,
    closed: AtomicBool,
    open: Semaphore,
    ledger: Mutex<Vec<String>>,
}

/// Calls `lookup` once per user message, then answers with its result.
struct LookupModel;

#[async_trait]
impl ChatModel for LookupModel {
    fn model_name(&self) -> &str {
        "lookup"
    }

    async fn generate(&self, request: &ChatRequest) -> Result<Message, ModelError> {
        let last_user = request
            .messages
            .iter()
            .rposition(|m| m.role == Role::User)
            .unwrap_or(0);
        let q = request.messages[last_user].content.clone();
        Ok(
            match request.messages[last_user..]
                .iter()
                .find(|m| m.role == Role::Tool)
            {
                None => Message::assistant_tool_calls(
                    "",
                    vec![ToolCall::new(
                        format!("call-{last_user}"),
                        "lookup",
                        json!({ "q": q }).to_string(),
                    )],
                ),
                Some(found) => Message::assistant(format!("answer: {}", found.content)),
            },
        )
    }
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Lookup {
    q: String,
}

/// A server with the flow `gated` (its tool waits at the gate while it is closed) and the
/// demo `desk`; tenants come from `x-tenant`.
fn gated_state() -> (AppState, Arc<Gates>, mpsc::UnboundedReceiver<&'static str>) {
    gated_state_with(Auth::bearer(TOKEN))
}

/// [`gated_state`] with `auth`.
fn gated_state_with(auth: Auth) -> (AppState, Arc<Gates>, mpsc::UnboundedReceiver<&'static str>) {
    let (said, heard) = mpsc::unbounded_channel();
    let gates = Arc::new(Gates {
        said,
        closed: AtomicBool::new(false),
        open: Semaphore::new(0),
        ledger: Mutex::new(Vec::new()),
    });
    let tool_gates = Arc::clone(&gates);
    let lookup = tool_fn("lookup", "Looks a question up.", move |args: Lookup| {
        let gates = Arc::clone(&tool_gates);
        async move {
            gates
                .ledger
                .lock()
                .unwrap()
                .push(format!("start {}", args.q));
            if gates.closed.load(Ordering::SeqCst) {
                let _ = gates.said.send("tool running");
                gates.open.acquire().await.unwrap().forget();
            }
            gates.ledger.lock().unwrap().push(format!("end {}", args.q));
            Ok::<_, std::convert::Infallible>(format!("found {}", args.q))
        }
    });
    let agent = ChatModelAgent::builder("clerk", LookupModel)
        .tool(lookup)
        .build()
        .unwrap();
    let state = AppState::builder(InMemoryStore::new())
        .flow("gated", FlowAgent::new(agent))
        .flow("desk", agentweave_server::demo::desk())
        .auth(auth)
        .tenant(|parts| {
            Some(
                parts
                    .headers
                    .get("x-tenant")
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("acme")
                    .to_owned(),
            )
        })
        .build()
        .unwrap();
    (state, gates, heard)
}

fn request(method: reqwest::Method, url: String, tenant: &str) -> reqwest::RequestBuilder {
    reqwest::Client::new()
        .request(method, url)
        .bearer_auth(TOKEN)
        .header("x-tenant", tenant)
}

async fn post(base: &str, path: &str, body: Value) -> reqwest::Response {
    request(reqwest::Method::POST, format!("{base}{path}"), "acme")
        .json(&body)
        .send()
        .await
        .unwrap()
}

async fn get_json(base: &str, path: &str) -> Value {
    let response = request(reqwest::Method::GET, format!("{base}{path}"), "acme")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200, "GET {path}");
    response.json().await.unwrap()
}

/// Starts a background run; gives its id.
async fn start(base: &str, flow: &str, thread: &str, body: Value) -> String {
    let response = post(
        base,
        &format!("/v1/flows/{flow}/threads/{thread}/runs"),
        body,
    )
    .await;
    assert_eq!(response.status(), 202);
    let body: Value = response.json().await.unwrap();
    body["run_id"].as_str().unwrap().to_owned()
}

/// One SSE event as (id, name, data).
type Frame = (u64, String, Value);

/// Opens a run's stream after `last` and reads at most `take` events.
async fn attach(
    base: &str,
    path: &str,
    last: Option<u64>,
    take: Option<usize>,
) -> Result<Vec<Frame>, reqwest::Response> {
    let mut req = request(reqwest::Method::GET, format!("{base}{path}"), "acme");
    if let Some(last) = last {
        req = req.header("last-event-id", last.to_string());
    }
    let response = req.send().await.unwrap();
    if response.status() != 200 {
        return Err(response);
    }
    let mut events = response.bytes_stream().eventsource();
    let mut out = Vec::new();
    while let Some(event) = events.next().await {
        let event = event.unwrap();
        out.push((
            event.id.parse().unwrap(),
            event.event,
            serde_json::from_str(&event.data).unwrap(),
        ));
        if take == Some(out.len()) {
            break;
        }
    }
    Ok(out)
}

/// The frames without what differs between two runs of the same message (ids, threads).
fn comparable(frames: &[Frame]) -> Vec<(String, Value)> {
    frames
        .iter()
        .map(|(_, name, data)| {
            let mut data = data.clone();
            if let Some(o) = data.as_object_mut() {
                o.remove("run_id");
                o.remove("thread");
            }
            (name.clone(), data)
        })
        .collect()
}

#[tokio::test]
async fn a_background_run_answers_its_id_at_once_and_any_client_reads_it() {
    let (state, _gates, _heard) = gated_state();
    let server = spawn(state).await;
    let base = &server.base;
    let run = start(
        base,
        "desk",
        "t1",
        json!({ "message": "my kettle arrived broken" }),
    )
    .await;
    let outcome = get_json(base, &format!("/v1/flows/desk/threads/t1/runs/{run}/wait")).await;
    assert_eq!(outcome["status"], "success", "{outcome}");
    assert_eq!(outcome["run_id"], run.as_str());

    let frames = attach(
        base,
        &format!("/v1/flows/desk/threads/t1/runs/{run}/stream"),
        None,
        None,
    )
    .await
    .unwrap();
    assert_eq!(frames[0].1, "turn");
    assert_eq!(frames.last().unwrap().1, "done");
    assert_eq!(frames.last().unwrap().2, outcome);
    for (k, frame) in frames.iter().enumerate() {
        assert_eq!(frame.0, k as u64 + 1);
    }
    let runs = get_json(base, "/v1/flows/desk/threads/t1/runs").await;
    assert_eq!(runs["runs"].as_array().unwrap().len(), 1);
    assert_eq!(runs["runs"][0]["status"], "success");
    // The thread has the turn.
    let thread = get_json(base, "/v1/flows/desk/threads/t1").await;
    assert_eq!(thread["turns"], 1);
}

#[tokio::test]
async fn reconnecting_at_every_event_with_last_event_id_gets_each_event_once_in_order() {
    let (state, _gates, _heard) = gated_state();
    let server = spawn(state).await;
    let base = &server.base;
    let message = json!({ "message": "my kettle arrived broken" });

    let calm = start(base, "desk", "calm", message.clone()).await;
    let undisturbed = attach(
        base,
        &format!("/v1/flows/desk/threads/calm/runs/{calm}/stream"),
        None,
        None,
    )
    .await
    .unwrap();

    let jumpy = start(base, "desk", "jumpy", message).await;
    let path = format!("/v1/flows/desk/threads/jumpy/runs/{jumpy}/stream");
    let mut seen: Vec<Frame> = Vec::new();
    let mut reconnects = 0;
    loop {
        let last = seen.last().map(|f| f.0);
        let got = attach(base, &path, last, Some(1)).await.unwrap();
        reconnects += 1;
        assert_eq!(got.len(), 1, "one event per connection");
        let done = got[0].1 == "done";
        seen.extend(got);
        if done {
            break;
        }
    }
    assert_eq!(reconnects, undisturbed.len());
    let ids: Vec<u64> = seen.iter().map(|f| f.0).collect();
    assert_eq!(ids, (1..=undisturbed.len() as u64).collect::<Vec<_>>());
    assert_eq!(comparable(&seen), comparable(&undisturbed));
    // After the last event: nothing more, the stream ends.
    let after = attach(base, &path, Some(seen.len() as u64), None)
        .await
        .unwrap();
    assert!(after.is_empty());
}

#[tokio::test]
async fn cancel_after_tools_over_http_keeps_the_tool_result_and_resume_finishes_the_turn() {
    let (state, gates, mut heard) = gated_state();
    gates.closed.store(true, Ordering::SeqCst);
    let server = spawn(state).await;
    let base = &server.base;
    let run = start(base, "gated", "t", json!({ "message": "kettle" })).await;
    assert_eq!(heard.recv().await, Some("tool running"));
    let cancel = post(
        base,
        &format!("/v1/flows/gated/threads/t/runs/{run}/cancel"),
        json!({ "mode": "after_tools" }),
    )
    .await;
    assert_eq!(cancel.status(), 202);
    gates.closed.store(false, Ordering::SeqCst);
    gates.open.add_permits(1);
    let outcome = get_json(base, &format!("/v1/flows/gated/threads/t/runs/{run}/wait")).await;
    assert_eq!(outcome["status"], "cancelled", "{outcome}");
    assert_eq!(outcome["cancel_mode"], "after_tools");
    assert_eq!(outcome["at_safe_point"], true);
    assert_eq!(
        *gates.ledger.lock().unwrap(),
        ["start kettle", "end kettle"]
    );

    // A finished run cannot be cancelled.
    let again = post(
        base,
        &format!("/v1/flows/gated/threads/t/runs/{run}/cancel"),
        json!({}),
    )
    .await;
    let (status, code, message) = error_code(again).await;
    assert_eq!((status, code.as_str()), (409, "run_ended"), "{message}");

    let resumed = post(
        base,
        &format!("/v1/flows/gated/threads/t/runs/{run}/resume"),
        json!({}),
    )
    .await;
    assert_eq!(resumed.status(), 202);
    let next: Value = resumed.json().await.unwrap();
    let next = next["run_id"].as_str().unwrap();
    let outcome = get_json(base, &format!("/v1/flows/gated/threads/t/runs/{next}/wait")).await;
    assert_eq!(outcome["status"], "success", "{outcome}");
    assert_eq!(outcome["output"], "answer: found kettle");
    assert_eq!(
        *gates.ledger.lock().unwrap(),
        ["start kettle", "end kettle"]
    );
    let runs = get_json(base, "/v1/flows/gated/threads/t/runs").await;
    let statuses: Vec<&str> = runs["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["cancelled", "success"]);
}

#[tokio::test]
async fn a_streamed_run_with_on_disconnect_cancel_stops_when_its_client_goes() {
    let (state, gates, mut heard) = gated_state();
    gates.closed.store(true, Ordering::SeqCst);
    let server = spawn(state).await;
    let base = &server.base;
    let response = post(
        base,
        "/v1/flows/gated/threads/t/runs",
        json!({ "message": "kettle", "stream": true, "on_disconnect": "cancel" }),
    )
    .await;
    assert_eq!(response.status(), 200);
    let mut events = response.bytes_stream().eventsource();
    let first = events.next().await.unwrap().unwrap();
    assert_eq!(first.event, "turn");
    let run: Value = serde_json::from_str(&first.data).unwrap();
    let run = run["run_id"].as_str().unwrap().to_owned();
    assert_eq!(heard.recv().await, Some("tool running"));
    drop(events);
    let outcome = get_json(base, &format!("/v1/flows/gated/threads/t/runs/{run}/wait")).await;
    assert_eq!(outcome["status"], "cancelled", "{outcome}");
    assert_eq!(outcome["at_safe_point"], false);
    assert_eq!(*gates.ledger.lock().unwrap(), ["start kettle"]);

    // With on_disconnect continue (the default of a background run), it would go on: a
    // streamed run that asks for it does.
    let response = post(
        base,
        "/v1/flows/gated/threads/t2/runs",
        json!({ "message": "toaster", "stream": true, "on_disconnect": "continue" }),
    )
    .await;
    let mut events = response.bytes_stream().eventsource();
    let first = events.next().await.unwrap().unwrap();
    let run: Value = serde_json::from_str(&first.data).unwrap();
    let run = run["run_id"].as_str().unwrap().to_owned();
    assert_eq!(heard.recv().await, Some("tool running"));
    drop(events);
    gates.closed.store(false, Ordering::SeqCst);
    gates.open.add_permits(1);
    let outcome = get_json(base, &format!("/v1/flows/gated/threads/t2/runs/{run}/wait")).await;
    assert_eq!(outcome["status"], "success", "{outcome}");
}

#[tokio::test]
async fn two_clients_double_texting_over_http() {
    let (state, gates, mut heard) = gated_state();
    gates.closed.store(true, Ordering::SeqCst);
    let server = spawn(state).await;
    let base = server.base.clone();
    let first = start(&base, "gated", "t", json!({ "message": "kettle" })).await;
    assert_eq!(heard.recv().await, Some("tool running"));

    // reject (the default): 409 busy with Retry-After, nothing runs.
    let refused = post(
        &base,
        "/v1/flows/gated/threads/t/runs",
        json!({ "message": "toaster" }),
    )
    .await;
    assert_eq!(refused.headers()["retry-after"], "1");
    let (status, code, _) = error_code(refused).await;
    assert_eq!((status, code.as_str()), (409, "busy"));

    // enqueue, from another client: runs after the first.
    let second = {
        let base = base.clone();
        tokio::spawn(async move {
            start(
                &base,
                "gated",
                "t",
                json!({ "message": "toaster", "multitask_strategy": "enqueue" }),
            )
            .await
        })
    }
    .await
    .unwrap();
    let pending = get_json(&base, &format!("/v1/flows/gated/threads/t/runs/{second}")).await;
    assert_eq!(pending["status"], "pending");
    gates.closed.store(false, Ordering::SeqCst);
    gates.open.add_permits(1);
    for run in [&first, &second] {
        let outcome = get_json(&base, &format!("/v1/flows/gated/threads/t/runs/{run}/wait")).await;
        assert_eq!(outcome["status"], "success", "{outcome}");
    }
    assert_eq!(
        *gates.ledger.lock().unwrap(),
        ["start kettle", "end kettle", "start toaster", "end toaster"]
    );
    let thread = get_json(&base, "/v1/flows/gated/threads/t").await;
    let said: Vec<&str> = thread["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["message"]["content"].as_str().unwrap())
        .filter(|c| !c.is_empty())
        .collect();
    assert_eq!(
        said,
        [
            "kettle",
            "found kettle",
            "answer: found kettle",
            "toaster",
            "found toaster",
            "answer: found toaster"
        ]
    );
}

#[tokio::test]
async fn bad_input_gets_a_clear_json_error_and_runs_nothing() {
    let (state, gates, _heard) = gated_state();
    let server = spawn(state).await;
    let base = &server.base;
    let runs = "/v1/flows/gated/threads/t/runs";

    let (status, code, message) = error_code(
        post(
            base,
            runs,
            json!({ "message": "hi", "multitask_strategy": "later" }),
        )
        .await,
    )
    .await;
    assert_eq!((status, code.as_str()), (400, "bad_request"));
    assert!(message.contains("'later' is not a double-texting strategy"));

    let (status, _, message) = error_code(
        post(
            base,
            runs,
            json!({ "message": "hi", "resume": {"x": true} }),
        )
        .await,
    )
    .await;
    assert_eq!(status, 400);
    assert!(message.contains("either `message`"));
    assert!(gates.ledger.lock().unwrap().is_empty());

    let run = start(base, "gated", "t", json!({ "message": "kettle" })).await;
    get_json(base, &format!("{runs}/{run}/wait")).await;

    let (status, code, message) = error_code(
        post(
            base,
            &format!("{runs}/{run}/cancel"),
            json!({ "mode": "sometime" }),
        )
        .await,
    )
    .await;
    assert_eq!((status, code.as_str()), (400, "bad_request"));
    assert!(message.contains("'sometime' is not a cancel mode"));

    let (status, code, _) = error_code(
        post(
            base,
            &format!("{runs}/{run}/cancel"),
            json!({ "mode": "immediate" }),
        )
        .await,
    )
    .await;
    assert_eq!((status, code.as_str()), (409, "run_ended"));

    let stream = format!("{runs}/{run}/stream");
    let (status, code, message) =
        error_code(attach(base, &stream, Some(999), None).await.unwrap_err()).await;
    assert_eq!((status, code.as_str()), (400, "unknown_event"), "{message}");
    let bad = request(reqwest::Method::GET, format!("{base}{stream}"), "acme")
        .header("last-event-id", "abc")
        .send()
        .await
        .unwrap();
    assert_eq!(error_code(bad).await.1, "unknown_event");

    // Another tenant does not see the run, nor another thread.
    let foreign = request(
        reqwest::Method::GET,
        format!("{base}{runs}/{run}/wait"),
        "globex",
    )
    .send()
    .await
    .unwrap();
    assert_eq!(error_code(foreign).await.1, "unknown_run");
    let (status, code, _) = error_code(
        request(
            reqwest::Method::GET,
            format!("{base}/v1/flows/gated/threads/other/runs/{run}"),
            "acme",
        )
        .send()
        .await
        .unwrap(),
    )
    .await;
    assert_eq!((status, code.as_str()), (404, "unknown_run"));
    let (status, code, _) = error_code(
        request(
            reqwest::Method::GET,
            format!("{base}{runs}/no-such-run/stream"),
            "acme",
        )
        .send()
        .await
        .unwrap(),
    )
    .await;
    assert_eq!((status, code.as_str()), (404, "unknown_run"));
}

#[tokio::test]
async fn steer_over_http_joins_the_running_turn_after_its_tool_call() {
    let (state, gates, mut heard) = gated_state();
    gates.closed.store(true, Ordering::SeqCst);
    let server = spawn(state).await;
    let base = &server.base;
    let run = start(base, "gated", "t", json!({ "message": "kettle" })).await;
    assert_eq!(heard.recv().await, Some("tool running"));
    let steer = post(
        base,
        &format!("/v1/flows/gated/threads/t/runs/{run}/steer"),
        json!({ "message": "mug" }),
    )
    .await;
    assert_eq!(steer.status(), 202);
    let body: Value = steer.json().await.unwrap();
    assert_eq!(body, json!({ "run_id": run, "steered": true }));
    gates.closed.store(false, Ordering::SeqCst);
    gates.open.add_permits(1);
    let outcome = get_json(base, &format!("/v1/flows/gated/threads/t/runs/{run}/wait")).await;
    assert_eq!(outcome["status"], "success", "{outcome}");
    // The model, asked again after the kettle's lookup, saw the steer last and looked it up.
    assert_eq!(outcome["output"], "answer: found mug");
    assert_eq!(
        *gates.ledger.lock().unwrap(),
        ["start kettle", "end kettle", "start mug", "end mug"]
    );

    // An ended run takes no steer; a body without a message and an unknown run are refused.
    let late = post(
        base,
        &format!("/v1/flows/gated/threads/t/runs/{run}/steer"),
        json!({ "message": "too late" }),
    )
    .await;
    let (status, code, message) = error_code(late).await;
    assert_eq!((status, code.as_str()), (409, "run_ended"), "{message}");
    assert!(message.contains("has already ended (success)"), "{message}");
    let empty = post(
        base,
        &format!("/v1/flows/gated/threads/t/runs/{run}/steer"),
        json!({}),
    )
    .await;
    assert_eq!(empty.status(), 400);
    let unknown = post(
        base,
        "/v1/flows/gated/threads/t/runs/nope/steer",
        json!({ "message": "x" }),
    )
    .await;
    assert_eq!(unknown.status(), 404);
}

#[tokio::test]
async fn the_owner_continues_a_stopped_run_with_chat_alone() {
    use agentweave_server::{Principal, Scope};
    const OWEN: &str = "owen-chat-reader-token-0123456789";
    let (state, gates, mut heard) = gated_state_with(Auth::tokens([(
        OWEN,
        Principal::new("owen")
            .tenant("acme")
            .scopes([Scope::Chat, Scope::Read]),
    )]));
    gates.closed.store(true, Ordering::SeqCst);
    let server = spawn(state).await;
    let base = &server.base;
    let http = reqwest::Client::new();
    let call = |method: reqwest::Method, path: String| {
        http.request(method, format!("{base}{path}"))
            .bearer_auth(OWEN)
            .header("x-tenant", "acme")
    };
    let started: Value = call(
        reqwest::Method::POST,
        "/v1/flows/gated/threads/t/runs".into(),
    )
    .json(&json!({ "message": "kettle" }))
    .send()
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    let run = started["run_id"].as_str().unwrap().to_owned();
    assert_eq!(heard.recv().await, Some("tool running"));
    let cancel = call(
        reqwest::Method::POST,
        format!("/v1/flows/gated/threads/t/runs/{run}/cancel"),
    )
    .json(&json!({ "mode": "after_tools" }))
    .send()
    .await
    .unwrap();
    assert_eq!(cancel.status(), 202);
    gates.closed.store(false, Ordering::SeqCst);
    gates.open.add_permits(1);
    let waited = |run: String| {
        call(
            reqwest::Method::GET,
            format!("/v1/flows/gated/threads/t/runs/{run}/wait"),
        )
        .send()
    };
    let outcome: Value = waited(run.clone()).await.unwrap().json().await.unwrap();
    assert_eq!(outcome["at_safe_point"], true, "{outcome}");

    // Continuing the stop answers nobody's question: no `approve` needed.
    let resumed = call(
        reqwest::Method::POST,
        format!("/v1/flows/gated/threads/t/runs/{run}/resume"),
    )
    .json(&json!({}))
    .send()
    .await
    .unwrap();
    assert_eq!(resumed.status(), 202, "{}", resumed.text().await.unwrap());
    let next: Value = resumed.json().await.unwrap();
    let outcome: Value = waited(next["run_id"].as_str().unwrap().to_owned())
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(outcome["status"], "success", "{outcome}");
}
