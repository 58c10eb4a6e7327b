//! One tenant holds streamed turns open on many threads (issue 39: the per-tenant limits held
//! only for background runs; streamed turns took the process's places). Past its
//! `max_running_threads_per_tenant` the flooding tenant gets `429 too_many_runs` with
//! `Retry-After`, the other tenant's streamed turns are served throughout, and the flood's
//! places come back when its streams end. Bounded counts, no timing.

use std::sync::Arc;

use serde_json::{json, Value};
use tokio::sync::Semaphore;

use super::run_flood::{state, FLOODER, OTHER};
use crate::common::{self, spawn};

async fn turn(base: &str, token: &str, flow: &str, thread: &str) -> reqwest::Response {
    common::client()
        .post(format!("{base}/v1/flows/{flow}/threads/{thread}/turns"))
        .bearer_auth(token)
        .json(&json!({"message": "hello"}))
        .send()
        .await
        .unwrap()
}

/// The other tenant's streamed turn on the desk runs to its end.
async fn calm_is_served(base: &str, thread: &str) {
    let response = turn(base, OTHER, "desk", thread).await;
    assert_eq!(response.status(), 200, "the calm tenant was refused");
    let body = response.text().await.unwrap();
    assert!(body.contains("event: done"), "{body}");
}

#[tokio::test]
async fn a_tenant_holding_streams_open_gets_429_and_leaves_the_other_served() {
    let gate = Arc::new(Semaphore::new(0));
    let server = spawn(state(Arc::clone(&gate))).await;
    let base = &server.base;
    // Streams held open (the flow waits at the gate): their response bodies are not read.
    let mut open = Vec::new();
    let mut refused = 0;
    for i in 0..20 {
        let response = turn(base, FLOODER, "slow", &format!("t{i}")).await;
        match response.status().as_u16() {
            200 => open.push(response),
            429 => {
                assert!(response.headers().contains_key("retry-after"));
                let body: Value = response.json().await.unwrap();
                assert_eq!(body["error"]["code"], "too_many_runs", "{body}");
                assert!(
                    body["error"]["message"]
                        .as_str()
                        .unwrap()
                        .contains("max_running_threads_per_tenant"),
                    "{body}"
                );
                refused += 1;
            }
            other => panic!("stream {i}: {other}"),
        }
        if i % 5 == 0 {
            calm_is_served(base, &format!("c{i}")).await;
        }
    }
    assert_eq!((open.len(), refused), (4, 16));
    // The streams end: their places come back, and the tenant may stream again.
    gate.add_permits(open.len());
    for response in open {
        let body = response.text().await.unwrap();
        assert!(body.contains("done at last"), "{body}");
    }
    let again = turn(base, FLOODER, "slow", "after").await;
    assert_eq!(again.status(), 200);
    gate.add_permits(1);
    assert!(again.text().await.unwrap().contains("done at last"));
}
