//! The Agent Protocol routes as LangGraph's server answers them, over real HTTP: every stream
//! mode the SDK offers (and subgraphs), an unknown one a 422 that runs nothing; one history
//! state per checkpoint; new input on a thread waiting at an interrupt starts a new run;
//! `interrupt` while the thread waits at an approval; `rollback` deletes the run it rolls back;
//! a run reports its real strategy; `update_state` and `threads/search`; a run's webhook
//! called, or refused when the server sends none.

use crate::common;

use std::collections::BTreeSet;
use std::time::Duration;

use agentweave_runtime::{AgentEvent, FlowAgent, FnAgent, InMemoryStore, Message, MessageStream};
use agentweave_server::{AppState, Auth};
use common::{post, read_sse, spawn, Sse, TOKEN};
use serde_json::{json, Value};

const SECRET: &[u8] = b"langgraph-webhook-secret";

/// `chatty`: application data, then a streamed answer in two chunks, then a whole message.
fn chatty() -> FlowAgent {
    FlowAgent::new(FnAgent::new("chatty", |cx, _| async move {
        cx.emit(AgentEvent::custom(json!({"progress": 50})));
        cx.send_stream(MessageStream::from_messages([
            Message::assistant("Hel"),
            Message::assistant("lo!"),
        ]));
        cx.say("Anything else?");
        Ok(())
    }))
}

fn state(secret: bool) -> AppState {
    let builder = AppState::builder(InMemoryStore::new())
        .flow("desk", agentweave_server::demo::desk())
        .flow("chatty", chatty())
        .auth(Auth::bearer(TOKEN))
        .outbound(common::loopback_allowed())
        .turn_routing(agentweave_runtime::TurnRouting::Root);
    let builder = if secret {
        builder.webhook_secret(SECRET)
    } else {
        builder
    };
    builder.build().unwrap()
}

fn input(text: &str) -> Value {
    json!({"messages": [{"role": "user", "content": text}]})
}

async fn stream(base: &str, thread: &str, body: Value) -> Vec<Sse> {
    read_sse(post(base, &format!("/v1/threads/{thread}/runs/stream"), body).await).await
}

fn names(events: &[Sse]) -> Vec<&str> {
    events.iter().map(|e| e.name.as_str()).collect()
}

fn of<'a>(events: &'a [Sse], name: &str) -> Vec<&'a Value> {
    events
        .iter()
        .filter(|e| e.name == name)
        .map(|e| &e.data)
        .collect()
}

#[tokio::test]
async fn every_stream_mode_sends_its_events() {
    let server = spawn(state(false)).await;
    let base = &server.base;
    let all = json!([
        "values",
        "updates",
        "messages",
        "messages-tuple",
        "events",
        "debug",
        "custom",
        "tasks",
        "checkpoints"
    ]);
    let events = stream(
        base,
        "modes",
        json!({"assistant_id": "chatty", "input": input("hi"), "stream_mode": all}),
    )
    .await;
    let seen: BTreeSet<&str> = names(&events).into_iter().collect();
    for name in [
        "metadata",
        "values",
        "updates",
        "messages/metadata",
        "messages/partial",
        "messages/complete",
        "messages",
        "events",
        "debug",
        "custom",
        "tasks",
        "checkpoints",
        "end",
    ] {
        assert!(seen.contains(name), "no '{name}' event in {seen:?}");
    }
    assert_eq!(events.first().unwrap().name, "metadata");
    assert_eq!(events.last().unwrap().name, "end");
    // messages: the partial message grows chunk by chunk, then is complete; metadata once
    // per message.
    let partial: Vec<&str> = of(&events, "messages/partial")
        .iter()
        .map(|d| d[0]["content"].as_str().unwrap())
        .collect();
    assert_eq!(partial, ["Hel", "Hello!"]);
    let complete: Vec<&str> = of(&events, "messages/complete")
        .iter()
        .map(|d| d[0]["content"].as_str().unwrap())
        .collect();
    assert_eq!(complete, ["Hello!", "Anything else?"]);
    let announced = of(&events, "messages/metadata");
    assert_eq!(announced.len(), 2, "{announced:?}");
    let first_id = of(&events, "messages/complete")[0][0]["id"].clone();
    assert!(announced[0].get(first_id.as_str().unwrap()).is_some());
    // messages-tuple: [message, metadata] pairs.
    let tuple = of(&events, "messages");
    assert!(tuple
        .iter()
        .all(|t| t[1]["langgraph_node"] == "chatty" && t[0]["content"].is_string()));
    // custom: the agent's data as it gave it.
    assert_eq!(of(&events, "custom"), [&json!({"progress": 50})]);
    // tasks: the agent's start once, then its results.
    let tasks = of(&events, "tasks");
    assert_eq!(tasks[0]["name"], "chatty");
    assert_eq!(tasks[0]["triggers"], json!(["start:chatty"]));
    assert_eq!(
        tasks.iter().filter(|t| t.get("triggers").is_some()).count(),
        1
    );
    assert!(tasks.iter().skip(1).all(|t| t.get("result").is_some()));
    // events: LangChain's event dicts, a chain around model events.
    let kinds: Vec<&str> = of(&events, "events")
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    assert_eq!(kinds.first(), Some(&"on_chain_start"));
    assert!(kinds.contains(&"on_chat_model_stream"), "{kinds:?}");
    assert!(kinds.contains(&"on_chat_model_end"), "{kinds:?}");
    assert_eq!(kinds.last(), Some(&"on_chain_end"));
    // debug: task, task results, and the checkpoint last.
    let debug = of(&events, "debug");
    assert_eq!(debug[0]["type"], "task");
    assert_eq!(debug.last().unwrap()["type"], "checkpoint");
    assert!(debug
        .iter()
        .all(|d| d["step"].is_u64() && d["timestamp"].is_string()));
    // checkpoints: the state at the end, with its config.
    let checkpoint = of(&events, "checkpoints")[0];
    assert_eq!(checkpoint["config"]["configurable"]["thread_id"], "modes");
    assert_eq!(
        checkpoint["values"]["messages"].as_array().unwrap().len(),
        3
    );
}

#[tokio::test]
async fn subgraphs_name_the_events_of_agents_below_the_root() {
    let server = spawn(state(false)).await;
    let events = stream(
        &server.base,
        "sub",
        json!({"assistant_id": "desk", "input": input("I want a refund"),
               "stream_mode": ["updates"], "stream_subgraphs": true}),
    )
    .await;
    let seen: BTreeSet<&str> = names(&events).into_iter().collect();
    assert!(seen.contains("updates"), "the root's updates: {seen:?}");
    assert!(
        seen.contains("updates|refund"),
        "the refund agent's: {seen:?}"
    );
    // Without subgraphs, every update has the plain name.
    let plain = stream(
        &server.base,
        "plain",
        json!({"assistant_id": "desk", "input": input("I want a refund"), "stream_mode": "updates"}),
    )
    .await;
    assert!(
        names(&plain).iter().all(|n| !n.contains('|')),
        "{:?}",
        names(&plain)
    );
}

#[tokio::test]
async fn an_unknown_stream_mode_is_422_and_runs_nothing() {
    let server = spawn(state(false)).await;
    for mode in [json!("telepathy"), json!(["values", "nope"])] {
        let response = post(
            &server.base,
            "/v1/threads/unknown-mode/runs/stream",
            json!({"assistant_id": "desk", "input": input("hi"), "stream_mode": mode}),
        )
        .await;
        assert_eq!(response.status(), 422);
        let body: Value = response.json().await.unwrap();
        let message = body["error"]["message"].as_str().unwrap();
        assert!(message.contains("messages-tuple"), "{message}");
    }
    let thread = common::get(&server.base, "/v1/threads/unknown-mode").await;
    assert_eq!(thread.status(), 404, "no run touched the thread");
}

#[tokio::test]
async fn history_has_a_state_per_checkpoint_and_new_input_at_an_interrupt_starts_a_run() {
    let server = spawn(state(false)).await;
    let base = &server.base;
    let wait = |thread: &'static str, body: Value| async move {
        post(base, &format!("/v1/threads/{thread}/runs/wait"), body).await
    };
    let asked = wait(
        "h1",
        json!({"assistant_id": "desk", "input": input("I want a refund")}),
    )
    .await;
    let asked: Value = asked.json().await.unwrap();
    assert!(asked["__interrupt__"].is_array(), "{asked}");
    let resumed = wait("h1", json!({"command": {"resume": {"approve": true}}})).await;
    assert_eq!(resumed.status(), 200);
    let history: Vec<Value> = post(base, "/v1/threads/h1/history", json!({}))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(
        history.len(),
        2,
        "the interrupt's checkpoint and the resume's"
    );
    // Newest first: the resume's state, then the interrupted one (which waited).
    assert_eq!(history[0]["interrupts"], json!([]));
    assert_eq!(history[1]["interrupts"].as_array().unwrap().len(), 1);
    assert_eq!(history[1]["next"], json!(["refund"]));
    assert_eq!(
        history[0]["parent_checkpoint"]["checkpoint_id"],
        history[1]["checkpoint"]["checkpoint_id"]
    );
    assert!(
        history[0]["values"]["messages"].as_array().unwrap().len()
            > history[1]["values"]["messages"].as_array().unwrap().len()
    );

    // New input on a thread waiting at an interrupt: a new run, not a 409.
    let waiting = wait(
        "h2",
        json!({"assistant_id": "desk", "input": input("I want a refund")}),
    )
    .await;
    assert_eq!(waiting.status(), 200);
    let fresh = wait("h2", json!({"input": input("hello instead")})).await;
    assert_eq!(fresh.status(), 200, "{}", fresh.text().await.unwrap());
    let state: Value = common::get(base, "/v1/threads/h2/state")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(state["interrupts"], json!([]), "the interrupt was dropped");
    let last = state["values"]["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(
        last["content"],
        "Hello! I can help with refunds and complaints."
    );

    // `interrupt` while the thread waits at the refund's approval: the new run runs.
    let waiting = wait(
        "h3",
        json!({"assistant_id": "desk", "input": input("I want a refund")}),
    )
    .await;
    assert_eq!(waiting.status(), 200);
    let run: Value = post(
        base,
        "/v1/threads/h3/runs",
        json!({"input": input("hello"), "multitask_strategy": "interrupt"}),
    )
    .await
    .json()
    .await
    .unwrap();
    assert_eq!(run["multitask_strategy"], "interrupt", "{run}");
    let id = run["run_id"].as_str().unwrap();
    let joined = common::get(base, &format!("/v1/threads/h3/runs/{id}/join")).await;
    assert_eq!(joined.status(), 200);
    let got: Value = common::get(base, &format!("/v1/threads/h3/runs/{id}"))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(got["status"], "success", "{got}");
    assert_eq!(got["multitask_strategy"], "interrupt");
}

/// Waits on its never-ending work.
fn slow() -> FlowAgent {
    FlowAgent::new(FnAgent::new("slow", |cx, _| async move {
        cx.say("working");
        std::future::pending::<()>().await;
        Ok(())
    }))
}

#[tokio::test]
async fn rollback_deletes_the_run_it_rolls_back_and_runs_report_their_strategy() {
    let state = AppState::builder(InMemoryStore::new())
        .flow("slow", slow())
        .auth(Auth::bearer(TOKEN))
        .build()
        .unwrap();
    let server = spawn(state).await;
    let base = &server.base;
    let first: Value = post(
        base,
        "/v1/threads/rb/runs",
        json!({"assistant_id": "slow", "input": input("one"), "multitask_strategy": "enqueue"}),
    )
    .await
    .json()
    .await
    .unwrap();
    let first_id = first["run_id"].as_str().unwrap().to_owned();
    for _ in 0..500 {
        let run: Value = common::get(base, &format!("/v1/threads/rb/runs/{first_id}"))
            .await
            .json()
            .await
            .unwrap();
        if run["status"] == "running" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let got: Value = common::get(base, &format!("/v1/threads/rb/runs/{first_id}"))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(got["multitask_strategy"], "enqueue", "{got}");
    let second: Value = post(
        base,
        "/v1/threads/rb/runs",
        json!({"input": input("two"), "multitask_strategy": "rollback"}),
    )
    .await
    .json()
    .await
    .unwrap();
    assert_eq!(second["multitask_strategy"], "rollback");
    let gone = common::get(base, &format!("/v1/threads/rb/runs/{first_id}")).await;
    assert_eq!(gone.status(), 404, "the rolled-back run is deleted");
    let runs: Vec<Value> = common::get(base, "/v1/threads/rb/runs")
        .await
        .json()
        .await
        .unwrap();
    let ids: Vec<&str> = runs.iter().map(|r| r["run_id"].as_str().unwrap()).collect();
    assert_eq!(ids, [second["run_id"].as_str().unwrap()]);
    assert_eq!(runs[0]["multitask_strategy"], "rollback");
    let second_id = second["run_id"].as_str().unwrap();
    let cancel = post(
        base,
        &format!("/v1/threads/rb/runs/{second_id}/cancel?action=rollback&wait=true"),
        json!({}),
    )
    .await;
    assert_eq!(cancel.status(), 200);
}

#[tokio::test]
async fn update_state_and_search_threads() {
    let server = spawn(state(false)).await;
    let base = &server.base;
    post(
        base,
        "/v1/threads",
        json!({"thread_id": "s1", "metadata": {"user": "ada"}}),
    )
    .await;
    let asked = post(
        base,
        "/v1/threads/s1/runs/wait",
        json!({"assistant_id": "desk", "input": input("I want a refund")}),
    )
    .await;
    assert_eq!(asked.status(), 200);
    post(
        base,
        "/v1/threads/s2/runs/wait",
        json!({"assistant_id": "desk", "input": input("hello")}),
    )
    .await;
    // s1 waits at its approval: an update of its values is refused until it is answered.
    let early = post(
        base,
        "/v1/threads/s1/state",
        json!({"values": {"topic": "refunds"}}),
    )
    .await;
    assert_eq!(early.status(), 409, "{}", early.text().await.unwrap());
    let updated: Value = post(
        base,
        "/v1/threads/s2/state",
        json!({"values": {"topic": "greetings"}}),
    )
    .await
    .json()
    .await
    .unwrap();
    assert_eq!(updated["checkpoint"]["thread_id"], "s2", "{updated}");
    let state: Value = common::get(base, "/v1/threads/s2/state")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(state["values"]["topic"], "greetings");
    assert_eq!(
        state["checkpoint"]["checkpoint_id"],
        updated["checkpoint"]["checkpoint_id"]
    );
    for (body, what) in [
        (
            json!({"values": {"messages": [{"role": "user", "content": "x"}]}}),
            "messages",
        ),
        (
            json!({"values": {"topic": "x"}, "as_node": "triage"}),
            "as_node",
        ),
        (json!({"values": [1, 2]}), "values"),
    ] {
        let refused = post(base, "/v1/threads/s2/state", body).await;
        assert_eq!(refused.status(), 422, "{what}");
        let text = refused.text().await.unwrap();
        assert!(text.contains(what), "{text}");
    }
    // Search: by metadata, by status, by values.
    let ids = |found: Vec<Value>| -> Vec<String> {
        found
            .iter()
            .map(|t| t["thread_id"].as_str().unwrap().to_owned())
            .collect()
    };
    let search = |body: Value| async move {
        let found: Vec<Value> = post(base, "/v1/threads/search", body)
            .await
            .json()
            .await
            .unwrap();
        found
    };
    assert_eq!(
        ids(search(json!({"metadata": {"user": "ada"}})).await),
        ["s1"]
    );
    assert_eq!(ids(search(json!({"status": "interrupted"})).await), ["s1"]);
    assert_eq!(
        ids(search(json!({"values": {"topic": "greetings"}})).await),
        ["s2"]
    );
    let all = ids(search(json!({"limit": 10})).await);
    assert_eq!(all.len(), 2, "{all:?}");
    let bad = post(base, "/v1/threads/search", json!({"status": "sleepy"})).await;
    assert_eq!(bad.status(), 422);
}

#[tokio::test]
async fn a_runs_webhook_is_called_or_refused() {
    // Without a webhook secret the server sends none: the run is refused, nothing runs.
    let plain = spawn(state(false)).await;
    let refused = post(
        &plain.base,
        "/v1/threads/w0/runs",
        json!({"assistant_id": "desk", "input": input("hello"), "webhook": "https://example.com/hook"}),
    )
    .await;
    assert_eq!(refused.status(), 400);
    assert!(refused.text().await.unwrap().contains("no webhook secret"));
    let untouched = common::get(&plain.base, "/v1/threads/w0").await;
    assert_eq!(untouched.status(), 404);

    let server = spawn(state(true)).await;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
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
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let run: Value = post(
        &server.base,
        "/v1/threads/w1/runs",
        json!({"assistant_id": "desk", "input": input("hello"),
               "webhook": format!("http://127.1:{port}/hook")}),
    )
    .await
    .json()
    .await
    .unwrap();
    let (headers, body) = tokio::time::timeout(Duration::from_secs(30), rx.recv())
        .await
        .expect("the webhook is called")
        .unwrap();
    let called: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(called["run_id"], run["run_id"]);
    assert_eq!(called["thread_id"], "w1");
    assert_eq!(called["status"], "success", "{called}");
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

#[tokio::test]
async fn assistants_graph_and_schemas_and_a_thread_copy() {
    let server = spawn(state(false)).await;
    let base = &server.base;
    let graph: Value = common::get(base, "/v1/assistants/desk/graph")
        .await
        .json()
        .await
        .unwrap();
    let nodes: Vec<&str> = graph["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        nodes,
        ["__start__", "triage", "refund", "complaint", "__end__"]
    );
    let edges = graph["edges"].as_array().unwrap();
    let has = |s: &str, t: &str| edges.iter().any(|e| e["source"] == s && e["target"] == t);
    assert!(has("__start__", "triage") && has("triage", "refund") && has("refund", "triage"));
    let schemas: Value = common::get(base, "/v1/assistants/desk/schemas")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(schemas["graph_id"], "desk");
    assert_eq!(schemas["input_schema"]["required"], json!(["messages"]));
    let missing = common::get(base, "/v1/assistants/nobody/graph").await;
    assert_eq!(missing.status(), 404);

    post(
        base,
        "/v1/threads",
        json!({"thread_id": "orig", "metadata": {"user": "ada"}}),
    )
    .await;
    let done = post(
        base,
        "/v1/threads/orig/runs/wait",
        json!({"assistant_id": "desk", "input": input("hello")}),
    )
    .await;
    assert_eq!(done.status(), 200);
    let copy: Value = post(base, "/v1/threads/orig/copy", json!({}))
        .await
        .json()
        .await
        .unwrap();
    let id = copy["thread_id"].as_str().unwrap();
    assert_ne!(id, "orig");
    assert_eq!(copy["metadata"], json!({"user": "ada"}));
    let original: Value = common::get(base, "/v1/threads/orig/state")
        .await
        .json()
        .await
        .unwrap();
    let copied: Value = common::get(base, &format!("/v1/threads/{id}/state"))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(copied["values"]["messages"].as_array().unwrap().len(), 2);
    assert_eq!(
        copied["values"]["messages"][1]["content"],
        original["values"]["messages"][1]["content"]
    );
    // The copy goes its own way.
    let next = post(
        base,
        &format!("/v1/threads/{id}/runs/wait"),
        json!({"input": input("hello again")}),
    )
    .await;
    assert_eq!(next.status(), 200);
    let original: Value = common::get(base, "/v1/threads/orig/state")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(original["values"]["messages"].as_array().unwrap().len(), 2);
}
