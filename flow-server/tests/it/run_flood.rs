//! One tenant floods the server with background runs, on one thread and on many (issue 39,
//! point 3); the other tenant is served throughout. The flooding tenant gets `429
//! too_many_runs` with `Retry-After` past its limits, its waiting runs hold no turn place, a
//! cancel of one of them takes effect at once, and every admitted run ends once the flood's
//! runs are let go. Bounded counts, no timing.

use crate::common;

use std::sync::Arc;

use agentweave_runtime::{FlowAgent, FnAgent};
use agentweave_server::{AppState, Auth, Limits, Principal, Scope};
use common::spawn;
use serde_json::{json, Value};
use tokio::sync::Semaphore;

pub(super) const FLOODER: &str = "flooder-token-0123456789abcdef";
pub(super) const OTHER: &str = "other-tenant-token-0123456789ab";

/// Tenant `flood` runs the gated flow `slow`; tenant `calm` the desk (also the server of
/// `turn_flood`, whose streams take the same places).
pub(super) fn state(gate: Arc<Semaphore>) -> AppState {
    let slow = FnAgent::new("slow", move |cx, _| {
        let gate = Arc::clone(&gate);
        async move {
            gate.acquire().await.unwrap().forget();
            cx.say("done at last");
            Ok(())
        }
    });
    AppState::builder(agentweave_runtime::InMemoryStore::new())
        .flow("desk", agentweave_server::demo::desk())
        .flow("slow", FlowAgent::new(slow))
        .auth(Auth::tokens([
            (
                FLOODER,
                Principal::new("fay")
                    .tenant("flood")
                    .scopes([Scope::Chat, Scope::Read]),
            ),
            (
                OTHER,
                Principal::new("otto")
                    .tenant("calm")
                    .scopes([Scope::Chat, Scope::Read]),
            ),
        ]))
        .limits(Limits {
            max_concurrent_turns: 12,
            max_running_threads_per_tenant: 4,
            max_waiting_runs_per_tenant: 8,
            ..Limits::default()
        })
        .build()
        .unwrap()
}

async fn post(base: &str, token: &str, path: &str, body: Value) -> reqwest::Response {
    common::client()
        .post(format!("{base}{path}"))
        .bearer_auth(token)
        .json(&body)
        .send()
        .await
        .unwrap()
}

/// The other tenant runs a background run and waits for it: it succeeds.
async fn calm_is_served(base: &str, thread: &str) {
    let response = post(
        base,
        OTHER,
        &format!("/v1/flows/desk/threads/{thread}/runs"),
        json!({"message": "my kettle arrived broken"}),
    )
    .await;
    assert_eq!(response.status(), 202, "the calm tenant was refused");
    let run: Value = response.json().await.unwrap();
    let waited: Value = common::client()
        .get(format!(
            "{base}/v1/flows/desk/threads/{thread}/runs/{}/wait",
            run["run_id"].as_str().unwrap()
        ))
        .bearer_auth(OTHER)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(waited["status"], "success", "{waited}");
}

#[tokio::test]
async fn a_tenant_flooding_one_thread_and_many_leaves_the_other_served() {
    let gate = Arc::new(Semaphore::new(0));
    let server = spawn(state(Arc::clone(&gate))).await;
    let base = &server.base;
    let (mut admitted, mut refused) = (Vec::new(), 0);
    // 200 runs on one thread, enqueued behind each other.
    for i in 0..200 {
        let response = post(
            base,
            FLOODER,
            "/v1/flows/slow/threads/one/runs",
            json!({"message": format!("flood {i}"), "multitask_strategy": "enqueue"}),
        )
        .await;
        match response.status().as_u16() {
            202 => admitted.push(response.json::<Value>().await.unwrap()),
            429 => {
                assert!(response.headers().contains_key("retry-after"));
                let body: Value = response.json().await.unwrap();
                assert_eq!(body["error"]["code"], "too_many_runs", "{body}");
                refused += 1;
            }
            other => panic!("flood {i}: {other}"),
        }
        if i % 50 == 0 {
            calm_is_served(base, &format!("c{i}")).await;
        }
    }
    // One running and 8 waiting; the rest refused.
    assert_eq!((admitted.len(), refused), (9, 191));
    // 100 more threads, one run each.
    for i in 0..100 {
        let response = post(
            base,
            FLOODER,
            &format!("/v1/flows/slow/threads/t{i}/runs"),
            json!({"message": "flood"}),
        )
        .await;
        match response.status().as_u16() {
            202 => admitted.push(response.json::<Value>().await.unwrap()),
            429 => refused += 1,
            other => panic!("thread t{i}: {other}"),
        }
        if i % 25 == 0 {
            calm_is_served(base, &format!("d{i}")).await;
        }
    }
    assert_eq!(
        (admitted.len(), refused),
        (12, 288),
        "4 threads running at most"
    );
    calm_is_served(base, "after").await;

    // A cancel of a waiting run takes effect at once, and frees its place in line.
    let waiting = admitted[5]["run_id"].as_str().unwrap();
    let cancel = post(
        base,
        FLOODER,
        &format!("/v1/flows/slow/threads/one/runs/{waiting}/cancel"),
        json!({}),
    )
    .await;
    assert_eq!(cancel.status(), 202);
    let waited: Value = common::client()
        .get(format!(
            "{base}/v1/flows/slow/threads/one/runs/{waiting}/wait"
        ))
        .bearer_auth(FLOODER)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(waited["status"], "cancelled", "{waited}");
    assert_eq!(waited["before_start"], true, "{waited}");
    // A safe-point cancel of a waiting run too: it has nothing to stop, so it ends before
    // it starts, with the mode asked (no `immediate` added).
    let patient = admitted[6]["run_id"].as_str().unwrap();
    let cancel = post(
        base,
        FLOODER,
        &format!("/v1/flows/slow/threads/one/runs/{patient}/cancel"),
        json!({"mode": "after_tools"}),
    )
    .await;
    assert_eq!(cancel.status(), 202);
    let waited: Value = common::client()
        .get(format!(
            "{base}/v1/flows/slow/threads/one/runs/{patient}/wait"
        ))
        .bearer_auth(FLOODER)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        (
            &waited["status"],
            &waited["cancel_mode"],
            &waited["at_safe_point"],
            &waited["before_start"]
        ),
        (
            &json!("cancelled"),
            &json!("after_tools"),
            &json!(true),
            &json!(true)
        ),
        "{waited}"
    );
    let again = post(
        base,
        FLOODER,
        "/v1/flows/slow/threads/one/runs",
        json!({"message": "one more", "multitask_strategy": "enqueue"}),
    )
    .await;
    assert_eq!(
        again.status(),
        202,
        "the cancelled run's place in line is free"
    );

    // Let every gated run go: all admitted runs end.
    gate.add_permits(1_000);
    for run in admitted
        .iter()
        .filter(|r| r["run_id"] != waiting && r["run_id"] != patient)
    {
        let thread = run["thread"].as_str().unwrap();
        let waited: Value = common::client()
            .get(format!(
                "{base}/v1/flows/slow/threads/{thread}/runs/{}/wait",
                run["run_id"].as_str().unwrap()
            ))
            .bearer_auth(FLOODER)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(waited["status"], "success", "{waited}");
    }
}
