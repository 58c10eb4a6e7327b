//! A thread deletes right after a flood of queued runs on it ended (issue 39): nothing of the
//! ended runs holds the thread (not a lease, not a registry entry, not a run left waiting);
//! while runs of it are truly going the delete is refused with 409 saying how many.
//!
//! The 409 the issue saw after a flood was of runs still going: the client read the first
//! page of the thread's runs (100, oldest first, all ended) and took the thread for idle while
//! a hundred and more still waited on the next pages. [`going`] reads every page.

use serde_json::{json, Value};

use crate::common::{self, spawn};

const FLOOD: usize = 120;

/// Sends `FLOOD` runs at once on one thread with `post`, waits for each to end with `wait`.
async fn flood(base: &str, post: &str, body: Value, wait: impl Fn(&str) -> String) {
    let mut sends = Vec::new();
    for _ in 0..FLOOD {
        let (url, body) = (format!("{base}{post}"), body.clone());
        sends.push(tokio::spawn(async move {
            let response = common::client()
                .post(url)
                .bearer_auth(common::TOKEN)
                .json(&body)
                .send()
                .await
                .unwrap();
            assert!(response.status().is_success(), "{}", response.status());
            response.json::<Value>().await.unwrap()["run_id"]
                .as_str()
                .unwrap()
                .to_owned()
        }));
    }
    let mut ids = Vec::new();
    for send in sends {
        ids.push(send.await.unwrap());
    }
    for id in &ids {
        let waited = common::client()
            .get(format!("{base}{}", wait(id)))
            .bearer_auth(common::TOKEN)
            .send()
            .await
            .unwrap();
        assert_eq!(waited.status(), 200, "run {id}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thread_deletes_right_after_a_flood_of_its_runs_ended() {
    let server = spawn(common::desk_state()).await;
    let base = &server.base;
    flood(
        base,
        "/v1/flows/desk/threads/f1/runs",
        json!({"message": "hello", "multitask_strategy": "enqueue"}),
        |id| format!("/v1/flows/desk/threads/f1/runs/{id}/wait"),
    )
    .await;
    let deleted = common::client()
        .delete(format!("{base}/v1/flows/desk/threads/f1"))
        .bearer_auth(common::TOKEN)
        .send()
        .await
        .unwrap();
    let status = deleted.status();
    assert_eq!(status, 204, "{}", deleted.text().await.unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_protocol_thread_deletes_right_after_a_flood_of_its_runs_ended() {
    let server = spawn(common::desk_state()).await;
    let base = &server.base;
    flood(
        base,
        "/v1/threads/f2/runs",
        json!({
            "assistant_id": "desk",
            "input": {"messages": [{"role": "user", "content": "hello"}]},
            "multitask_strategy": "enqueue",
        }),
        |id| format!("/v1/threads/f2/runs/{id}/join"),
    )
    .await;
    let deleted = common::client()
        .delete(format!("{base}/v1/threads/f2"))
        .bearer_auth(common::TOKEN)
        .send()
        .await
        .unwrap();
    let status = deleted.status();
    assert_eq!(status, 204, "{}", deleted.text().await.unwrap());
}

/// Tenant-less server with the desk and `slow`, whose runs wait for `gate`.
fn gated(gate: std::sync::Arc<tokio::sync::Semaphore>) -> agentweave_server::AppState {
    let slow = agentweave_runtime::FnAgent::new("slow", move |cx, _| {
        let gate = std::sync::Arc::clone(&gate);
        async move {
            gate.acquire().await.unwrap().forget();
            cx.say("done");
            Ok(())
        }
    });
    agentweave_server::AppState::builder(agentweave_runtime::InMemoryStore::new())
        .flow("desk", agentweave_server::demo::desk())
        .flow("slow", agentweave_runtime::FlowAgent::new(slow))
        .auth(agentweave_server::Auth::bearer(common::TOKEN))
        .build()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thread_deletes_right_after_a_held_back_flood_of_its_runs_ended() {
    let gate = std::sync::Arc::new(tokio::sync::Semaphore::new(0));
    let server = spawn(gated(gate.clone())).await;
    let base = &server.base;
    let client = common::client();
    let mut admitted = 0;
    for i in 0..300 {
        let r = client
            .post(format!("{base}/v1/flows/slow/threads/one/runs"))
            .bearer_auth(common::TOKEN)
            .json(&json!({"message": format!("flood {i}"), "multitask_strategy": "enqueue"}))
            .send()
            .await
            .unwrap();
        if r.status() == 202 {
            admitted += 1;
        }
    }
    assert!(admitted > 200, "{admitted}");
    // While they wait (one running, the rest in line): refused, saying why.
    let refused = client
        .delete(format!("{base}/v1/flows/slow/threads/one"))
        .bearer_auth(common::TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 409);
    assert!(refused.headers().contains_key("retry-after"));
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["error"]["code"], "busy", "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains(&format!("{admitted} run(s) waiting or running")),
        "{message}"
    );
    gate.add_permits(10_000);
    while going(base, "/v1/flows/slow/threads/one/runs").await > 0 {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let deleted = client
        .delete(format!("{base}/v1/flows/slow/threads/one"))
        .bearer_auth(common::TOKEN)
        .send()
        .await
        .unwrap();
    let status = deleted.status();
    assert_eq!(status, 204, "{}", deleted.text().await.unwrap());
}

/// How many runs of the list at `path` are pending or running, every page read (a list is
/// cut to 100 runs a page, oldest first: the first page alone can show only ended runs while
/// later ones still wait).
async fn going(base: &str, path: &str) -> usize {
    let mut offset = 0;
    let mut going = 0;
    loop {
        let page: Value = common::client()
            .get(format!("{base}{path}?offset={offset}"))
            .bearer_auth(common::TOKEN)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        going += page["runs"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| matches!(r["status"].as_str(), Some("pending" | "running")))
            .count();
        match page["next_offset"].as_u64() {
            Some(next) => offset = next,
            None => return going,
        }
    }
}
