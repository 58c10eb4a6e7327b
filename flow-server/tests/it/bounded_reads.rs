//! Reads are bounded (issue 39, point 4): Agent Protocol thread `metadata` lives in the store
//! (a second server over the same store reads it; deleting the thread removes it) with a size
//! limit; `history` and the lists answer a page at a time, at most their maximum, and the
//! pages together give every item once.

use crate::common;

use agentweave_server::AppState;
use common::{get, post, spawn};
use serde_json::{json, Value};

fn state(store: &agentweave_runtime::InMemoryStore) -> AppState {
    AppState::builder(store.clone())
        .flow("desk", agentweave_server::demo::desk())
        .auth(agentweave_server::Auth::bearer(common::TOKEN))
        .build()
        .unwrap()
}

#[tokio::test]
async fn thread_metadata_lives_in_the_store_with_a_size_limit() {
    let store = agentweave_runtime::InMemoryStore::new();
    let a = spawn(state(&store)).await;
    let b = spawn(state(&store)).await;
    let metadata = json!({"customer": "c-17", "notes": "x".repeat(1000)});
    let made = post(
        &a.base,
        "/v1/threads",
        json!({"thread_id": "m1", "metadata": metadata}),
    )
    .await;
    assert_eq!(made.status(), 200);
    // Another process over the same store sees it: it is not in A's memory.
    let seen: Value = get(&b.base, "/v1/threads/m1").await.json().await.unwrap();
    assert_eq!(seen["metadata"], metadata);
    // Too big: refused, nothing kept.
    let big = json!({"blob": "x".repeat(flow_server_metadata_limit() + 1)});
    let refused = post(
        &a.base,
        "/v1/threads",
        json!({"thread_id": "m2", "metadata": big}),
    )
    .await;
    assert_eq!(refused.status(), 400);
    assert_eq!(get(&b.base, "/v1/threads/m2").await.status(), 404);
    // Deleted: gone for both.
    let deleted = common::client()
        .delete(format!("{}/v1/threads/m1", a.base))
        .bearer_auth(common::TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status(), 204);
    assert_eq!(get(&b.base, "/v1/threads/m1").await.status(), 404);
}

/// The documented limit (16 KiB).
fn flow_server_metadata_limit() -> usize {
    16 * 1024
}

#[tokio::test]
async fn history_is_paged_whatever_limit_is_asked() {
    let server = spawn(state(&agentweave_runtime::InMemoryStore::new())).await;
    for i in 0..30 {
        let r = post(
            &server.base,
            "/v1/threads/h/runs/wait",
            json!({"assistant_id": "desk", "input": {"messages": [{"role": "user", "content": format!("turn {i}")}]}}),
        )
        .await;
        assert_eq!(r.status(), 200, "turn {i}");
    }
    let page: Vec<Value> = post(
        &server.base,
        "/v1/threads/h/history",
        json!({"limit": 100_000}),
    )
    .await
    .json()
    .await
    .unwrap();
    assert_eq!(page.len(), 20, "the most one page holds");
    // Paging with `before` gives every turn's state once, newest first.
    let mut ids = Vec::new();
    let mut before: Option<String> = None;
    loop {
        let mut body = json!({"limit": 7});
        if let Some(b) = &before {
            body["before"] = json!({"configurable": {"checkpoint_id": b}});
        }
        let page: Vec<Value> = post(&server.base, "/v1/threads/h/history", body)
            .await
            .json()
            .await
            .unwrap();
        if page.is_empty() {
            break;
        }
        assert!(page.len() <= 7);
        for s in &page {
            ids.push(
                s["checkpoint"]["checkpoint_id"]
                    .as_str()
                    .unwrap()
                    .to_owned(),
            );
        }
        before = ids.last().cloned();
    }
    let expected: Vec<String> = (0..30).rev().map(|t| format!("h-t{t}")).collect();
    assert_eq!(ids, expected);
}

#[tokio::test]
async fn thread_and_run_lists_are_paged() {
    let server = spawn(state(&agentweave_runtime::InMemoryStore::new())).await;
    for i in 0..120 {
        common::turn(&server.base, "desk", &format!("t{i}"), "hello").await;
    }
    let first: Value = get(&server.base, "/v1/flows/desk/threads?limit=1000")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(first["threads"].as_array().unwrap().len(), 100);
    assert_eq!(first["next_offset"], 100);
    let rest: Value = get(&server.base, "/v1/flows/desk/threads?offset=100")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(rest["threads"].as_array().unwrap().len(), 20);
    assert_eq!(rest["next_offset"], Value::Null);
    let bad = get(&server.base, "/v1/flows/desk/threads?limit=lots").await;
    assert_eq!(bad.status(), 400);
}

#[tokio::test]
async fn the_timeline_and_the_interrupt_lists_are_paged() {
    let server = spawn(state(&agentweave_runtime::InMemoryStore::new())).await;
    for i in 0..105 {
        common::turn(&server.base, "desk", "long", &format!("hello {i}")).await;
    }
    let first: Value = get(
        &server.base,
        "/v1/flows/desk/threads/long/timeline?limit=1000",
    )
    .await
    .json()
    .await
    .unwrap();
    let records = first["records"].as_array().unwrap();
    assert_eq!(records.len(), 100, "the most one page holds");
    assert_eq!(records[0]["turn"], 0);
    assert_eq!(first["next_offset"], 100);
    let rest: Value = get(
        &server.base,
        "/v1/flows/desk/threads/long/timeline?offset=100",
    )
    .await
    .json()
    .await
    .unwrap();
    let turns: Vec<u64> = rest["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["turn"].as_u64().unwrap())
        .collect();
    assert_eq!(turns, [100, 101, 102, 103, 104]);
    assert_eq!(rest["next_offset"], Value::Null);

    // Three threads wait on a refund's approval: the queue comes a page at a time.
    for t in ["w1", "w2", "w3"] {
        common::turn(&server.base, "desk", t, "I want a refund for order 42").await;
    }
    let mut threads = Vec::new();
    let mut offset = Some(0);
    while let Some(at) = offset {
        let page: Value = get(
            &server.base,
            &format!("/v1/flows/desk/interrupts?limit=2&offset={at}"),
        )
        .await
        .json()
        .await
        .unwrap();
        let items = page["interrupts"].as_array().unwrap();
        assert!(items.len() <= 2, "{page}");
        threads.extend(
            items
                .iter()
                .map(|i| i["thread"].as_str().unwrap().to_owned()),
        );
        offset = page["next_offset"].as_u64();
    }
    assert_eq!(threads, ["w1", "w2", "w3"]);
    let one: Value = get(&server.base, "/v1/flows/desk/threads/w2/interrupts?limit=1")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(one["interrupts"].as_array().unwrap().len(), 1, "{one}");
    assert_eq!(one["next_offset"], Value::Null);
    let bad = get(&server.base, "/v1/flows/desk/interrupts?offset=-1").await;
    assert_eq!(bad.status(), 400);
}
