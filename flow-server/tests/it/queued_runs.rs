//! Queued runs, from any process: their events are kept in the run queue, so a process that
//! does not run a queued run streams it (from the start or after `Last-Event-ID`, each event
//! once, in order, while it runs and after it ended, until its events are trimmed); a cancel
//! goes through the queue (a waiting run at once, a running one by its worker); the process
//! that ends a run sends its webhook; a worker claims only runs of the flows it serves.
//!
//! Here the "processes" are server states in one test process sharing one queue and one store;
//! `run_queue.rs` has the same with real processes on one SQLite file (and PostgreSQL).

use crate::common;

use std::sync::Arc;

use agentweave_runtime::store::{InMemoryRunQueue, RunQueue};
use agentweave_server::{AppState, Auth, QueueOptions};
use axum::http::HeaderMap;
use common::*;
use eventsource_stream::Eventsource;
use futures::StreamExt;
use serde_json::{json, Value};
use tokio::sync::mpsc;

const SECRET: &[u8] = b"queued-webhook-secret";

/// `GET url` as tenant `tenant`, read as JSON.
async fn get_json(url: &str, tenant: &str) -> Value {
    client()
        .get(url)
        .bearer_auth(TOKEN)
        .header("x-tenant", tenant)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// A server over `store` and `queue` serving `flows` (each the demo desk) with `workers`
/// workers; the tenant is the `x-tenant` header's.
fn state(
    store: &agentweave_runtime::InMemoryStore,
    queue: &InMemoryRunQueue,
    flows: &[&str],
    workers: usize,
    retention: std::time::Duration,
) -> AppState {
    let mut options = QueueOptions::default();
    options.workers = workers;
    options.event_retention = retention;
    let mut builder = AppState::builder(store.clone())
        .auth(Auth::bearer(TOKEN))
        .webhook_secret(SECRET)
        // The test's receivers listen on loopback: let it through, as an operator would.
        .outbound(common::loopback_allowed())
        .turn_routing(agentweave_runtime::TurnRouting::Root)
        .tenant(|parts| {
            parts
                .headers
                .get("x-tenant")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        });
    for flow in flows {
        builder = builder.flow(*flow, agentweave_server::demo::desk());
    }
    builder
        .run_queue_with(queue.clone(), options)
        .build()
        .unwrap()
}

const HOUR: std::time::Duration = std::time::Duration::from_secs(3600);

/// One SSE event with its id.
#[derive(Debug, Clone, PartialEq)]
struct Event {
    id: String,
    name: String,
    data: Value,
}

/// GETs `path` as SSE (after `last` if given); the response.
async fn attach(base: &str, path: &str, last: Option<&str>, tenant: &str) -> reqwest::Response {
    let mut request = client()
        .get(format!("{base}{path}"))
        .bearer_auth(TOKEN)
        .header("x-tenant", tenant);
    if let Some(last) = last {
        request = request.header("last-event-id", last);
    }
    request.send().await.unwrap()
}

/// Reads SSE events with their ids, at most `max`.
async fn events(response: reqwest::Response, max: usize) -> Vec<Event> {
    assert_eq!(response.status(), 200);
    let mut stream = response.bytes_stream().eventsource();
    let mut out = Vec::new();
    while out.len() < max {
        let Some(event) = stream.next().await else {
            break;
        };
        let event = event.unwrap();
        out.push(Event {
            id: event.id,
            name: event.event,
            data: serde_json::from_str(&event.data).unwrap(),
        });
    }
    out
}

async fn post_as(base: &str, path: &str, body: Value, tenant: &str) -> reqwest::Response {
    client()
        .post(format!("{base}{path}"))
        .bearer_auth(TOKEN)
        .header("x-tenant", tenant)
        .json(&body)
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn a_queued_run_streams_from_any_process_each_event_once_in_order() {
    let store = agentweave_runtime::InMemoryStore::new();
    let queue = InMemoryRunQueue::new();
    // A runs the queue's runs; B has no workers: what it streams comes from the queue.
    let a = spawn(state(&store, &queue, &["desk"], 2, HOUR)).await;
    let b = spawn(state(&store, &queue, &["desk"], 0, HOUR)).await;
    let runs = "/v1/flows/desk/threads/s1/runs";
    let made: Value = post_as(
        &b.base,
        runs,
        json!({"message": "my kettle arrived broken"}),
        "acme",
    )
    .await
    .json()
    .await
    .unwrap();
    let id = made["run_id"].as_str().unwrap().to_owned();
    let stream = format!("{runs}/{id}/stream");
    // Attached from the start on B while A runs it: every event up to `done`.
    let full = events(attach(&b.base, &stream, None, "acme").await, usize::MAX).await;
    let last = full.last().unwrap();
    assert_eq!(last.name, "done", "{full:#?}");
    assert_eq!(last.data["status"], "success");
    assert!(last.data["worker"].is_string());
    assert_eq!(full[0].name, "turn");
    assert_eq!(full[0].data["thread"], "s1");
    assert!(full.iter().any(|e| e.name == "chunk"));
    let ids: Vec<String> = (1..=full.len()).map(|n| n.to_string()).collect();
    assert_eq!(
        full.iter().map(|e| e.id.clone()).collect::<Vec<_>>(),
        ids,
        "ids 1, 2, ... in order"
    );
    // After the run ended, from A and from B: after every id, exactly the rest, in order.
    for (k, base) in [&a.base, &b.base]
        .into_iter()
        .cycle()
        .take(full.len())
        .enumerate()
    {
        let rest = events(
            attach(base, &stream, Some(&k.to_string()), "acme").await,
            usize::MAX,
        )
        .await;
        assert_eq!(rest, full[k..].to_vec(), "after {k}");
    }
    // Reconnecting at every event (one event per connection) reads the same run.
    let mut pieced = Vec::new();
    let mut at = "0".to_owned();
    while pieced.last().map(|e: &Event| e.name.as_str()) != Some("done") {
        let one = events(attach(&a.base, &stream, Some(&at), "acme").await, 1).await;
        at = one[0].id.clone();
        pieced.extend(one);
    }
    assert_eq!(pieced, full);

    // Bad input: an id the run never gave, another tenant's or thread's run, a bogus id.
    let (status, code, message) = error_code(
        attach(
            &b.base,
            &stream,
            Some(&(full.len() + 1).to_string()),
            "acme",
        )
        .await,
    )
    .await;
    assert_eq!((status, code.as_str()), (400, "unknown_event"), "{message}");
    assert!(message.contains(&format!("its last event so far is {}", full.len())));
    let (status, code, _) = error_code(attach(&b.base, &stream, Some("x"), "acme").await).await;
    assert_eq!((status, code.as_str()), (400, "unknown_event"));
    let (status, code, _) = error_code(attach(&b.base, &stream, None, "globex").await).await;
    assert_eq!((status, code.as_str()), (404, "unknown_run"));
    let elsewhere = format!("/v1/flows/desk/threads/other/runs/{id}/stream");
    assert_eq!(
        error_code(attach(&b.base, &elsewhere, None, "acme").await)
            .await
            .0,
        404
    );
    // Another tenant cannot cancel it either; nothing changed.
    let (status, _, _) =
        error_code(post_as(&b.base, &format!("{runs}/{id}/cancel"), json!({}), "globex").await)
            .await;
    assert_eq!(status, 404);
    // Cancel of the finished run: a clear error, its outcome kept.
    let (status, code, message) =
        error_code(post_as(&b.base, &format!("{runs}/{id}/cancel"), json!({}), "acme").await).await;
    assert_eq!((status, code.as_str()), (409, "run_ended"), "{message}");
    assert!(message.contains("has ended"), "{message}");
    let row: Value = get_json(&format!("{}{runs}/{id}", b.base), "acme").await;
    assert_eq!(row["status"], "success");
}

#[tokio::test]
async fn a_queued_runs_events_expire_after_the_retention() {
    let store = agentweave_runtime::InMemoryStore::new();
    let queue = InMemoryRunQueue::new();
    let a = spawn(state(
        &store,
        &queue,
        &["desk"],
        1,
        std::time::Duration::ZERO,
    ))
    .await;
    let runs = "/v1/flows/desk/threads/s2/runs";
    let made: Value = post_as(&a.base, runs, json!({"message": "Hi"}), "acme")
        .await
        .json()
        .await
        .unwrap();
    let id = made["run_id"].as_str().unwrap();
    let outcome: Value = get_json(&format!("{}{runs}/{id}/wait", a.base), "acme").await;
    assert_eq!(outcome["status"], "success");
    // With a retention of zero, the next trim removes them: then attaching is refused.
    loop {
        let response = attach(&a.base, &format!("{runs}/{id}/stream"), None, "acme").await;
        if response.status() == 410 {
            let (_, code, message) = error_code(response).await;
            assert_eq!(code, "event_expired");
            assert!(message.contains("event_retention"), "{message}");
            break;
        }
        assert_eq!(response.status(), 200);
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    // The run's status and outcome stay.
    let row: Value = get_json(&format!("{}{runs}/{id}", a.base), "acme").await;
    assert_eq!(row["status"], "success");
}

/// A receiver of webhooks: (headers, body) of each request.
async fn receiver() -> (String, mpsc::UnboundedReceiver<(HeaderMap, Vec<u8>)>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let tx = Arc::new(tx);
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |headers: HeaderMap, body: axum::body::Bytes| {
            let tx = tx.clone();
            async move {
                let _ = tx.send((headers, body.to_vec()));
                axum::http::StatusCode::OK
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}/hook"), rx)
}

/// The body of a webhook request, its signature checked.
fn signed_body(headers: &HeaderMap, body: &[u8]) -> Value {
    let timestamp: u64 = headers["x-agentflow-timestamp"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(
        headers["x-agentflow-signature"].to_str().unwrap(),
        agentweave_server::webhooks::signature(SECRET, timestamp, body),
        "signed with the server's secret over TIMESTAMP.BODY"
    );
    serde_json::from_slice(body).unwrap()
}

#[tokio::test]
async fn a_queued_runs_end_is_posted_signed_by_the_process_that_ended_it() {
    let store = agentweave_runtime::InMemoryStore::new();
    let queue = InMemoryRunQueue::new();
    let _a = spawn(state(&store, &queue, &["desk"], 1, HOUR)).await;
    let b = spawn(state(&store, &queue, &["desk"], 0, HOUR)).await;
    let (url, mut hits) = receiver().await;
    let runs = "/v1/flows/desk/threads/w1/runs";
    let made = post_as(
        &b.base,
        runs,
        json!({"message": "my kettle arrived broken", "webhook": url}),
        "acme",
    )
    .await;
    assert_eq!(made.status(), 202);
    let made: Value = made.json().await.unwrap();
    let (headers, body) = hits.recv().await.unwrap();
    let body = signed_body(&headers, &body);
    assert_eq!(body["run_id"], made["run_id"]);
    assert_eq!(body["status"], "success");
    assert_eq!(body["thread"], "w1");
    assert!(body["output"].as_str().unwrap().contains("#1001"));
    // Sent by the worker's process (A), which ran it.
    assert!(body["worker"].is_string());

    // A webhook URL that is not http(s): refused, nothing queued.
    let (status, _, message) = error_code(
        post_as(
            &b.base,
            runs,
            json!({"message": "Hi", "webhook": "file:///etc/passwd"}),
            "acme",
        )
        .await,
    )
    .await;
    assert_eq!(status, 400, "{message}");
    let listed: Value = get_json(&format!("{}{runs}", b.base), "acme").await;
    assert_eq!(listed["runs"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn a_waiting_queued_run_is_cancelled_at_once_and_never_runs() {
    let store = agentweave_runtime::InMemoryStore::new();
    let queue = InMemoryRunQueue::new();
    // No process runs anything: the run waits.
    let b = spawn(state(&store, &queue, &["desk"], 0, HOUR)).await;
    let (url, mut hits) = receiver().await;
    let runs = "/v1/flows/desk/threads/c1/runs";
    let made: Value = post_as(
        &b.base,
        runs,
        json!({"message": "Hi", "webhook": url}),
        "acme",
    )
    .await
    .json()
    .await
    .unwrap();
    let id = made["run_id"].as_str().unwrap().to_owned();
    // A mode that does not exist: refused, nothing recorded.
    let (status, _, _) = error_code(
        post_as(
            &b.base,
            &format!("{runs}/{id}/cancel"),
            json!({"mode": "sideways"}),
            "acme",
        )
        .await,
    )
    .await;
    assert_eq!(status, 400);
    let cancelled = post_as(
        &b.base,
        &format!("{runs}/{id}/cancel"),
        json!({"mode": "after_tools"}),
        "acme",
    )
    .await;
    assert_eq!(cancelled.status(), 202);
    let cancelled: Value = cancelled.json().await.unwrap();
    assert_eq!(cancelled["status"], "cancelled");
    let stream = events(
        attach(&b.base, &format!("{runs}/{id}/stream"), None, "acme").await,
        usize::MAX,
    )
    .await;
    assert_eq!(stream.len(), 1);
    assert_eq!(
        (stream[0].id.as_str(), stream[0].name.as_str()),
        ("1", "done")
    );
    assert_eq!(stream[0].data["status"], "cancelled");
    let (headers, body) = hits.recv().await.unwrap();
    let body = signed_body(&headers, &body);
    assert_eq!(body["status"], "cancelled");
    assert_eq!(body["run_id"], id.as_str());
    // A worker appears: the cancelled run never runs, the thread has no turn.
    let _a = spawn(state(&store, &queue, &["desk"], 1, HOUR)).await;
    let next: Value = post_as(
        &b.base,
        runs,
        json!({"message": "Hi", "multitask_strategy": "enqueue"}),
        "acme",
    )
    .await
    .json()
    .await
    .unwrap();
    let outcome: Value = client()
        .get(format!(
            "{}{runs}/{}/wait",
            b.base,
            next["run_id"].as_str().unwrap()
        ))
        .bearer_auth(TOKEN)
        .header("x-tenant", "acme")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(outcome["status"], "success");
    let thread: Value = get_json(&format!("{}/v1/flows/desk/threads/c1", b.base), "acme").await;
    assert_eq!(thread["turns"], 1, "only the second run ran: {thread}");
    let row: Value = get_json(&format!("{}{runs}/{id}", b.base), "acme").await;
    assert_eq!(
        (row["status"].as_str(), row["attempt"].as_u64()),
        (Some("cancelled"), Some(0))
    );
}

#[tokio::test]
async fn a_worker_claims_only_runs_of_the_flows_it_serves() {
    let store = agentweave_runtime::InMemoryStore::new();
    let queue = InMemoryRunQueue::new();
    // The API process serves both flows and runs nothing; one worker process serves only
    // `desk`, another only `help`.
    let api = spawn(state(&store, &queue, &["desk", "help"], 0, HOUR)).await;
    let desk_only = state(&store, &queue, &["desk"], 2, HOUR);
    let help_only = state(&store, &queue, &["help"], 2, HOUR);
    let (stop_desk, desk_stopped) = tokio::sync::oneshot::channel::<()>();
    let (stop_help, help_stopped) = tokio::sync::oneshot::channel::<()>();
    let desk_workers = tokio::spawn(agentweave_server::run_workers(desk_only, async {
        let _ = desk_stopped.await;
    }));
    let help_workers = tokio::spawn(agentweave_server::run_workers(help_only, async {
        let _ = help_stopped.await;
    }));
    let mut made = Vec::new();
    for i in 0..6 {
        let flow = if i % 2 == 0 { "desk" } else { "help" };
        let run: Value = post_as(
            &api.base,
            &format!("/v1/flows/{flow}/threads/f{i}/runs"),
            json!({"message": "Hi"}),
            "acme",
        )
        .await
        .json()
        .await
        .unwrap();
        made.push((flow, i, run["run_id"].as_str().unwrap().to_owned()));
    }
    let mut workers: std::collections::HashMap<&str, std::collections::HashSet<String>> =
        Default::default();
    for (flow, i, id) in &made {
        let outcome: Value = client()
            .get(format!(
                "{}/v1/flows/{flow}/threads/f{i}/runs/{id}/wait",
                api.base
            ))
            .bearer_auth(TOKEN)
            .header("x-tenant", "acme")
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(outcome["status"], "success", "{outcome}");
        workers
            .entry(flow)
            .or_default()
            .insert(outcome["worker"].as_str().unwrap().to_owned());
    }
    // Each flow's runs ran in the one process that serves it, never in the other.
    assert_eq!(workers["desk"].len(), 1);
    assert_eq!(workers["help"].len(), 1);
    assert!(workers["desk"].is_disjoint(&workers["help"]));
    let _ = stop_desk.send(());
    let _ = stop_help.send(());
    desk_workers.await.unwrap();
    help_workers.await.unwrap();
}

/// One tenant fills its share of the queue (no worker runs anything here): its next run is
/// `429 too_many_runs` with `Retry-After`, another tenant still queues, and once the queue
/// has room again (a queued run cancelled) the first tenant queues again.
#[tokio::test]
async fn a_tenant_past_its_queued_runs_gets_429_and_another_still_queues() {
    let store = agentweave_runtime::InMemoryStore::new();
    let queue = InMemoryRunQueue::new();
    let mut options = QueueOptions::default();
    options.workers = 0;
    let server = spawn(
        AppState::builder(store.clone())
            .auth(Auth::bearer(TOKEN))
            .flow("desk", agentweave_server::demo::desk())
            .tenant(|parts| {
                parts
                    .headers
                    .get("x-tenant")
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned)
            })
            .limits(agentweave_server::Limits {
                max_queued_runs_per_tenant: 5,
                ..agentweave_server::Limits::default()
            })
            .run_queue_with(queue.clone(), options)
            .build()
            .unwrap(),
    )
    .await;
    let mut made = Vec::new();
    for i in 0..5 {
        let r = post_as(
            &server.base,
            &format!("/v1/flows/desk/threads/q{i}/runs"),
            json!({"message": "hi"}),
            "flood",
        )
        .await;
        assert_eq!(r.status(), 202);
        made.push(r.json::<Value>().await.unwrap());
    }
    for i in 5..50 {
        let r = post_as(
            &server.base,
            &format!("/v1/flows/desk/threads/q{i}/runs"),
            json!({"message": "hi", "multitask_strategy": "enqueue"}),
            "flood",
        )
        .await;
        assert_eq!(r.status(), 429, "run {i}");
        assert!(r.headers().contains_key("retry-after"));
    }
    assert_eq!(
        queue.unfinished_with_prefix("desk.flood.").await.unwrap(),
        5
    );
    let calm = post_as(
        &server.base,
        "/v1/flows/desk/threads/c1/runs",
        json!({"message": "hi"}),
        "calm",
    )
    .await;
    assert_eq!(calm.status(), 202, "another tenant still queues");
    let cancel = post_as(
        &server.base,
        &format!(
            "/v1/flows/desk/threads/q0/runs/{}/cancel",
            made[0]["run_id"].as_str().unwrap()
        ),
        json!({}),
        "flood",
    )
    .await;
    assert!(cancel.status().is_success(), "{}", cancel.status());
    let again = post_as(
        &server.base,
        "/v1/flows/desk/threads/q0/runs",
        json!({"message": "hi again"}),
        "flood",
    )
    .await;
    assert_eq!(again.status(), 202, "room again after the cancel");
}

/// A server enqueueing through `queue` (its own handle on a queue another server shares), no
/// workers, at most 5 queued runs per tenant; the tenant is the `x-tenant` header's.
fn capped(queue: impl RunQueue) -> AppState {
    let mut options = QueueOptions::default();
    options.workers = 0;
    AppState::builder(agentweave_runtime::InMemoryStore::new())
        .auth(Auth::bearer(TOKEN))
        .flow("desk", agentweave_server::demo::desk())
        .tenant(|parts| {
            parts
                .headers
                .get("x-tenant")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        })
        .limits(agentweave_server::Limits {
            max_queued_runs_per_tenant: 5,
            ..agentweave_server::Limits::default()
        })
        .run_queue_with(queue, options)
        .build()
        .unwrap()
}

/// Two servers, each with its own handle on one queue, take 30 runs of one tenant at the
/// same moment, round after round: exactly 5 are queued each round (the tenant's cap, kept in
/// one step of the store), every other gets `429 too_many_runs` with `Retry-After`, and
/// another tenant's run, sent in the same race, is queued.
async fn two_servers_race_past_the_cap(a: AppState, b: AppState, queue: &dyn RunQueue) {
    const CAP: usize = 5;
    let servers = [spawn(a).await, spawn(b).await];
    let bases: Vec<String> = servers.iter().map(|s| s.base.clone()).collect();
    for round in 0..4 {
        let mut sends = Vec::new();
        for i in 0..30 {
            let base = bases[i % 2].clone();
            sends.push(tokio::spawn(async move {
                let r = post_as(
                    &base,
                    &format!("/v1/flows/desk/threads/r{round}-{}/runs", i % 3),
                    json!({"message": "hi", "multitask_strategy": "enqueue"}),
                    "flood",
                )
                .await;
                let status = r.status().as_u16();
                let retry = r.headers().contains_key("retry-after");
                (status, retry, r.json::<Value>().await.unwrap())
            }));
        }
        let calm = post_as(
            &bases[1],
            &format!("/v1/flows/desk/threads/c{round}/runs"),
            json!({"message": "hi"}),
            "calm",
        )
        .await;
        assert_eq!(calm.status(), 202, "another tenant still queues");
        let mut queued = Vec::new();
        for send in sends {
            match send.await.unwrap() {
                (202, _, row) => queued.push(row["run_id"].as_str().unwrap().to_owned()),
                (429, true, body) => assert_eq!(body["error"]["code"], "too_many_runs", "{body}"),
                other => panic!("round {round}: {other:?}"),
            }
        }
        assert_eq!(queued.len(), CAP, "round {round}: {queued:?}");
        assert_eq!(
            queue.unfinished_with_prefix("desk.flood.").await.unwrap(),
            CAP
        );
        // Room again for the next round: the queued runs are cancelled (they never run).
        for id in &queued {
            queue
                .cancel(id, json!({}), json!({"status": "cancelled"}))
                .await
                .unwrap();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_servers_on_one_queue_keep_a_tenants_cap_exactly() {
    let queue = InMemoryRunQueue::new();
    two_servers_race_past_the_cap(capped(queue.clone()), capped(queue.clone()), &queue).await;
}

#[cfg(feature = "sqlite")]
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_servers_on_one_sqlite_file_keep_a_tenants_cap_exactly() {
    use agentweave_runtime::store::SqliteRunQueue;
    let dir = std::env::temp_dir().join(format!("af-queue-cap-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let path = dir.join("queue.db");
    let (a, b) = (
        SqliteRunQueue::open(&path).await.unwrap(),
        SqliteRunQueue::open(&path).await.unwrap(),
    );
    let reader = SqliteRunQueue::open(&path).await.unwrap();
    two_servers_race_past_the_cap(capped(a), capped(b), &reader).await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_servers_on_one_postgres_database_keep_a_tenants_cap_exactly() {
    use agentweave_runtime::store::PostgresRunQueue;
    let Some(url) = agentweave_runtime::testing::fresh_postgres_database("server_queue_cap").await
    else {
        return;
    };
    let (a, b) = (
        PostgresRunQueue::connect(&url).await.unwrap(),
        PostgresRunQueue::connect(&url).await.unwrap(),
    );
    let reader = PostgresRunQueue::connect(&url).await.unwrap();
    two_servers_race_past_the_cap(capped(a), capped(b), &reader).await;
}
