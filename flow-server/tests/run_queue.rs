// Its own test binary, not a module of tests/it: a kill harness: it starts `agentweave-server-demo`
// processes and SIGKILLs one mid-way, with trial counts CI sets for this binary alone.
//! Many servers, one queue: background runs wait in the store's run queue and any server
//! process runs them.
//!
//! - In one process (an in-memory queue): `POST .../runs` answers a queued run at once;
//!   status, wait and list read the queue; a busy thread is refused or queued behind, as the
//!   strategy says.
//! - The kill test: two `agentweave-server-demo` processes on one store (SQLite file, and PostgreSQL
//!   with the `postgres` feature); runs queued through HTTP to both; one process SIGKILLed
//!   mid-way. Every run ends once, successfully; the ledger its tool writes holds each payment
//!   once; no payment ran in two live processes at once. `AGENTFLOW_QUEUE_KILL_RUNS` sets the
//!   runs per trial (default 100), `AGENTFLOW_QUEUE_KILL_TRIALS` the trials (default 1).

// The process helpers serve the SQLite and PostgreSQL tests only.
#![cfg_attr(not(any(feature = "sqlite", feature = "postgres")), allow(dead_code))]

mod common;

use std::collections::{HashMap, HashSet};
use std::process::Stdio;
use std::time::Duration;

use agentweave_runtime::store::InMemoryRunQueue;
use agentweave_server::AppState;
use common::*;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

fn queued_desk() -> AppState {
    AppState::builder(agentweave_runtime::InMemoryStore::new())
        .flow("desk", agentweave_server::demo::desk())
        .auth(agentweave_server::Auth::bearer(TOKEN))
        .turn_routing(agentweave_runtime::TurnRouting::Root)
        .run_queue(InMemoryRunQueue::new())
        .build()
        .unwrap()
}

#[tokio::test]
async fn background_runs_wait_in_the_queue_and_any_worker_runs_them() {
    let server = spawn(queued_desk()).await;
    let base = &server.base;
    let runs = "/v1/flows/desk/threads/q1/runs";
    let first = post(base, runs, json!({"message": "Hi"})).await;
    assert_eq!(first.status(), 202);
    let first: Value = first.json().await.unwrap();
    assert_eq!(first["queued"], true);
    let id = first["run_id"].as_str().unwrap().to_owned();
    // Queued behind the first (same thread), in order.
    let second: Value = post(
        base,
        runs,
        json!({"message": "I want a refund for order 42", "multitask_strategy": "enqueue"}),
    )
    .await
    .json()
    .await
    .unwrap();
    let id2 = second["run_id"].as_str().unwrap().to_owned();

    let done: Value = get(base, &format!("{runs}/{id}/wait"))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(done["status"], "success");
    assert_eq!(
        done["output"],
        "Hello! I can help with refunds and complaints."
    );
    let done2: Value = get(base, &format!("{runs}/{id2}/wait"))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(done2["status"], "interrupted");
    assert_eq!(done2["interrupts"][0]["id"], "triage/refund");

    let status: Value = get(base, &format!("{runs}/{id}"))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(status["status"], "success");
    assert_eq!(status["attempt"], 1);
    let listed: Value = get(base, runs).await.json().await.unwrap();
    let ids: Vec<&str> = listed["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["run_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, vec![id.as_str(), id2.as_str()]);
    // The thread's turns ran in order: the second turn is the refund.
    let thread: Value = get(base, "/v1/flows/desk/threads/q1")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(thread["turns"], 2);
}

#[tokio::test]
async fn queued_runs_refuse_bad_input() {
    let server = spawn(queued_desk()).await;
    let base = &server.base;
    let runs = "/v1/flows/desk/threads/q2/runs";
    // Strategies a queue cannot follow, and names that do not exist.
    for strategy in ["interrupt", "rollback", "sideways"] {
        let refused = post(
            base,
            runs,
            json!({"message": "Hi", "multitask_strategy": strategy}),
        )
        .await;
        assert_eq!(error_code(refused).await.0, 400, "{strategy}");
    }
    // Another thread's (or an unknown) run is unknown here.
    let made: Value = post(base, runs, json!({"message": "Hi"}))
        .await
        .json()
        .await
        .unwrap();
    let id = made["run_id"].as_str().unwrap();
    let elsewhere = get(base, &format!("/v1/flows/desk/threads/other/runs/{id}")).await;
    assert_eq!(error_code(elsewhere).await.0, 404);
    let bogus = get(base, &format!("{runs}/..%2Fescape")).await;
    assert_eq!(error_code(bogus).await.0, 404);
    let _ = get(base, &format!("{runs}/{id}/wait")).await;
    // With `reject` (the default), a thread with a queued run refuses the next one: on a
    // process with no workers, the first run stays queued.
    let mut options = agentweave_server::QueueOptions::default();
    options.workers = 0;
    let idle = spawn(
        AppState::builder(agentweave_runtime::InMemoryStore::new())
            .flow("desk", agentweave_server::demo::desk())
            .auth(agentweave_server::Auth::bearer(TOKEN))
            .run_queue_with(InMemoryRunQueue::new(), options)
            .build()
            .unwrap(),
    )
    .await;
    let first = post(
        &idle.base,
        "/v1/flows/desk/threads/q3/runs",
        json!({"message": "Hi"}),
    )
    .await;
    assert_eq!(first.status(), 202);
    let busy = post(
        &idle.base,
        "/v1/flows/desk/threads/q3/runs",
        json!({"message": "Hi"}),
    )
    .await;
    let (status, code, message) = error_code(busy).await;
    assert_eq!((status, code.as_str()), (409, "busy"));
    assert!(message.contains("thread 'q3'"), "{message}");
}

/// Starts `agentweave-server-demo` with `args` and the queue on; returns it and its base URL.
async fn server_process(args: &[String], ledger: &str, lease_ms: u64) -> (Child, String) {
    server_process_with(args, ledger, lease_ms, 4).await
}

async fn server_process_with(
    args: &[String],
    ledger: &str,
    lease_ms: u64,
    workers: usize,
) -> (Child, String) {
    server_process_paying(args, ledger, lease_ms, workers, 20).await
}

/// [`server_process_with`] whose `pay` tool takes `pay_ms` to pay.
async fn server_process_paying(
    args: &[String],
    ledger: &str,
    lease_ms: u64,
    workers: usize,
    pay_ms: u64,
) -> (Child, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_flow-server-demo"))
        .args(args)
        .env("AGENTFLOW_TOKEN", TOKEN)
        .env("AGENTFLOW_QUEUE", "1")
        .env("AGENTFLOW_LEDGER", ledger)
        .env("AGENTFLOW_LEASE_MS", lease_ms.to_string())
        .env("AGENTFLOW_PAY_DELAY_MS", pay_ms.to_string())
        .env("AGENTFLOW_QUEUE_WORKERS", workers.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the demo server starts");
    let stdout = child.stdout.take().unwrap();
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line).await.unwrap();
    let url = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("unexpected first line: {line:?}"))
        .trim_end_matches('/')
        .to_owned();
    (child, url)
}

fn env_count(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

const THREADS: usize = 10;

/// One trial of the kill test on the store `args` names, its ledger in `dir`.
async fn kill_one_server_mid_way(args: &[String], dir: &std::path::Path) {
    let runs = env_count("AGENTFLOW_QUEUE_KILL_RUNS", 100);
    let ledger = dir.join("ledger");
    let ledger_path = ledger.display().to_string();
    let (mut a_proc, a) = server_process(args, &ledger_path, 1500).await;
    let (mut b_proc, b) = server_process(args, &ledger_path, 1500).await;
    let killed = a_proc.id().unwrap();

    // Queue every run through HTTP, half on each server; each thread's runs wait in order.
    let mut queued: Vec<(String, String, String)> = Vec::new();
    for i in 0..runs {
        let thread = format!("t{}", i % THREADS);
        let payment = format!("P{i:04}");
        let server = if i % 2 == 0 { &a } else { &b };
        let made = post(
            server,
            &format!("/v1/flows/pay/threads/{thread}/runs"),
            json!({"message": format!("pay {payment}"), "multitask_strategy": "enqueue"}),
        )
        .await;
        assert_eq!(made.status(), 202);
        let made: Value = made.json().await.unwrap();
        queued.push((thread, made["run_id"].as_str().unwrap().to_owned(), payment));
    }

    // Mid-way (a third of the runs done, read from B), A dies without a word.
    loop {
        let mut done = 0;
        for t in 0..THREADS {
            let listed: Value = get(&b, &format!("/v1/flows/pay/threads/t{t}/runs"))
                .await
                .json()
                .await
                .unwrap();
            done += listed["runs"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|r| !matches!(r["status"].as_str(), Some("pending" | "running")))
                .count();
        }
        if done >= runs / 3 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    a_proc.start_kill().unwrap();
    a_proc.wait().await.unwrap();

    // B finishes every run, A's included, and answers for all of them.
    let mut by_worker: HashMap<String, usize> = HashMap::new();
    let mut taken_over = 0;
    for (thread, id, payment) in &queued {
        let outcome: Value = get(
            &b,
            &format!("/v1/flows/pay/threads/{thread}/runs/{id}/wait"),
        )
        .await
        .json()
        .await
        .unwrap();
        assert_eq!(outcome["status"], "success", "{payment}: {outcome}");
        let row: Value = get(&b, &format!("/v1/flows/pay/threads/{thread}/runs/{id}"))
            .await
            .json()
            .await
            .unwrap();
        *by_worker
            .entry(row["worker"].as_str().unwrap_or("?").to_owned())
            .or_default() += 1;
        if row["attempt"].as_u64().unwrap() > 1 {
            taken_over += 1;
            assert!(
                outcome["recovery"].is_string(),
                "a taken-over run says how: {outcome}"
            );
            // Its events, stored by both workers, read from B: numbered 1, 2, ... without a
            // gap or a repeat across the takeover, ending with the outcome B's worker stored.
            use futures::StreamExt;
            let events: Vec<IdEvent> = sse_events(
                attach(
                    &b,
                    &format!("/v1/flows/pay/threads/{thread}/runs/{id}/stream"),
                    None,
                )
                .await,
            )
            .collect()
            .await;
            let ids: Vec<String> = (1..=events.len()).map(|n| n.to_string()).collect();
            assert_eq!(events.iter().map(|e| e.id.clone()).collect::<Vec<_>>(), ids);
            let last = events.last().unwrap();
            assert_eq!((last.name.as_str(), &last.data), ("done", &outcome));
        }
    }
    eprintln!("runs by worker: {by_worker:?}; taken over from the killed server: {taken_over}");
    assert_eq!(by_worker.values().sum::<usize>(), runs);

    // The ledger holds each payment exactly once.
    let text = std::fs::read_to_string(&ledger).unwrap();
    let mut paid: HashMap<&str, usize> = HashMap::new();
    for line in text.lines() {
        let payment = line.split(' ').nth(1).unwrap();
        *paid.entry(payment).or_default() += 1;
    }
    for (_, _, payment) in &queued {
        assert_eq!(paid.get(payment.as_str()), Some(&1), "{payment} paid once");
    }
    assert_eq!(paid.len(), runs);

    // No payment ran in two live processes at once: a payment starts again only after its
    // last start ended, or when that start was the killed process's.
    let trace = std::fs::read_to_string(format!("{ledger_path}.trace")).unwrap();
    let mut open: HashMap<&str, HashSet<u32>> = HashMap::new();
    for line in trace.lines() {
        let parts: Vec<&str> = line.split(' ').collect();
        let (what, key, pid) = (parts[0], parts[1], parts[3].parse::<u32>().unwrap());
        let running = open.entry(key).or_default();
        match what {
            "start" => {
                assert!(
                    running.iter().all(|p| *p == killed),
                    "{key} started in {pid} while running in {running:?}"
                );
                running.insert(pid);
            }
            _ => {
                running.remove(&pid);
            }
        }
    }

    drop(b_proc.stdin.take());
    assert!(b_proc.wait().await.unwrap().success());
}

/// A `--worker` process runs the runs an API process (with no workers of its own) queues, and
/// serves nothing but its health; closing its standard input stops it gracefully.
#[cfg(feature = "sqlite")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_process_runs_what_an_api_process_queues() {
    let dir = std::env::temp_dir().join(format!("agentflow-queue-worker-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let db = dir.join("store.db").display().to_string();
    let ledger = dir.join("ledger").display().to_string();
    let (mut api_proc, api) =
        server_process_with(&["--sqlite".into(), db.clone()], &ledger, 5000, 0).await;
    let (mut worker_proc, worker) = server_process_with(
        &["--worker".into(), "--sqlite".into(), db],
        &ledger,
        5000,
        2,
    )
    .await;
    // The worker serves its health and nothing else.
    assert_eq!(get(&worker, "/v1/health").await.status(), 200);
    assert_eq!(get(&worker, "/v1/flows").await.status(), 404);
    let mut ids = Vec::new();
    for i in 0..5 {
        let made: Value = post(
            &api,
            &format!("/v1/flows/pay/threads/w{i}/runs"),
            json!({"message": format!("pay W{i}")}),
        )
        .await
        .json()
        .await
        .unwrap();
        ids.push(made["run_id"].as_str().unwrap().to_owned());
    }
    let mut workers = HashSet::new();
    for (i, id) in ids.iter().enumerate() {
        let outcome: Value = get(&api, &format!("/v1/flows/pay/threads/w{i}/runs/{id}/wait"))
            .await
            .json()
            .await
            .unwrap();
        assert_eq!(outcome["status"], "success");
        assert_eq!(outcome["output"], "paid");
        workers.insert(outcome["worker"].as_str().unwrap().to_owned());
    }
    // All ran in the one worker process (the API process has no workers).
    assert_eq!(workers.len(), 1);
    assert!(workers
        .iter()
        .next()
        .unwrap()
        .starts_with(&format!("pid{}-", worker_proc.id().unwrap())));
    drop(worker_proc.stdin.take());
    assert!(worker_proc.wait().await.unwrap().success());
    drop(api_proc.stdin.take());
    assert!(api_proc.wait().await.unwrap().success());
    let _ = std::fs::remove_dir_all(&dir);
}

#[cfg(feature = "sqlite")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_servers_on_one_sqlite_file_run_every_queued_run_once_when_one_is_killed() {
    for trial in 0..env_count("AGENTFLOW_QUEUE_KILL_TRIALS", 1) {
        let dir = std::env::temp_dir().join(format!(
            "agentflow-queue-kill-{}-{trial}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let db = dir.join("store.db").display().to_string();
        kill_one_server_mid_way(&["--sqlite".to_owned(), db], &dir).await;
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_servers_on_one_postgres_database_run_every_queued_run_once_when_one_is_killed() {
    for trial in 0..env_count("AGENTFLOW_QUEUE_KILL_TRIALS", 1) {
        let Some(url) = agentweave_runtime::testing::fresh_postgres_database("queue_kill").await
        else {
            return;
        };
        let dir = std::env::temp_dir().join(format!(
            "agentflow-queue-kill-pg-{}-{trial}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        kill_one_server_mid_way(&["--postgres".to_owned(), url], &dir).await;
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// One SSE event with its id.
#[derive(Debug, Clone, PartialEq)]
struct IdEvent {
    id: String,
    name: String,
    data: Value,
}

/// GETs `path` as SSE from `base`, after `last` if given.
async fn attach(base: &str, path: &str, last: Option<&str>) -> reqwest::Response {
    let mut request = client().get(format!("{base}{path}")).bearer_auth(TOKEN);
    if let Some(last) = last {
        request = request.header("last-event-id", last);
    }
    request.send().await.unwrap()
}

/// The SSE events of `response` as a stream.
fn sse_events(response: reqwest::Response) -> impl futures::Stream<Item = IdEvent> + Unpin {
    use eventsource_stream::Eventsource;
    use futures::StreamExt;
    assert_eq!(response.status(), 200);
    Box::pin(response.bytes_stream().eventsource().map(|e| {
        let e = e.unwrap();
        IdEvent {
            id: e.id,
            name: e.event,
            data: serde_json::from_str(&e.data).unwrap(),
        }
    }))
}

/// Two processes on one store: A runs the queued runs, B (no workers) takes the requests.
/// B streams A's run from the queue, cancels a waiting run at once (it never runs) and the
/// running one (A's worker stops it mid-tool); every event once, in order, from any id.
async fn cancel_and_attach_from_another_process(args: &[String], dir: &std::path::Path) {
    use futures::StreamExt;
    let ledger = dir.join("ledger").display().to_string();
    // The payment takes a minute: only a cancel ends the run sooner.
    let (a_proc, _a) = server_process_paying(args, &ledger, 5000, 2, 60_000).await;
    let (b_proc, b) = server_process_paying(args, &ledger, 5000, 0, 60_000).await;
    let runs = "/v1/flows/pay/threads/c/runs";
    let first: Value = post(&b, runs, json!({"message": "pay C1"}))
        .await
        .json()
        .await
        .unwrap();
    let second: Value = post(
        &b,
        runs,
        json!({"message": "pay C2", "multitask_strategy": "enqueue"}),
    )
    .await
    .json()
    .await
    .unwrap();
    let (id1, id2) = (
        first["run_id"].as_str().unwrap().to_owned(),
        second["run_id"].as_str().unwrap().to_owned(),
    );
    let stream1 = format!("{runs}/{id1}/stream");
    // B streams the run A runs, from the queue.
    let mut live = sse_events(attach(&b, &stream1, None).await);
    let mut seen = Vec::new();
    let started = live.next().await.unwrap();
    assert_eq!(started.name, "turn", "{started:?}");
    assert_eq!(started.id, "1");
    seen.push(started);
    // The payment is under way in A.
    loop {
        let trace = std::fs::read_to_string(format!("{ledger}.trace")).unwrap_or_default();
        if trace.contains(" C1 ") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // The waiting run: cancelled at once from B.
    let cancelled = post(&b, &format!("{runs}/{id2}/cancel"), json!({})).await;
    assert_eq!(cancelled.status(), 202);
    let cancelled: Value = cancelled.json().await.unwrap();
    assert_eq!(cancelled["status"], "cancelled");
    let row: Value = get(&b, &format!("{runs}/{id2}"))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(
        (row["status"].as_str(), row["attempt"].as_u64()),
        (Some("cancelled"), Some(0))
    );
    // The running run: B records the cancel; A's worker applies it.
    let cancelling = post(
        &b,
        &format!("{runs}/{id1}/cancel"),
        json!({"mode": "immediate"}),
    )
    .await;
    assert_eq!(cancelling.status(), 202);
    let cancelling: Value = cancelling.json().await.unwrap();
    assert_eq!(cancelling["status"], "cancelling");
    while let Some(event) = live.next().await {
        seen.push(event);
    }
    let done = seen.last().unwrap();
    assert_eq!(done.name, "done", "{seen:#?}");
    assert_eq!(done.data["status"], "cancelled", "{done:?}");
    let ids: Vec<String> = (1..=seen.len()).map(|n| n.to_string()).collect();
    assert_eq!(seen.iter().map(|e| e.id.clone()).collect::<Vec<_>>(), ids);
    let outcome: Value = get(&b, &format!("{runs}/{id1}/wait"))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(outcome["status"], "cancelled");
    // From every id, exactly the rest.
    for k in 0..seen.len() {
        let rest: Vec<IdEvent> = sse_events(attach(&b, &stream1, Some(&k.to_string())).await)
            .collect()
            .await;
        assert_eq!(rest, seen[k..].to_vec(), "after {k}");
    }
    // Bad input: an id never given, a cancel of a finished run; nothing changes.
    let unknown = attach(&b, &stream1, Some(&(seen.len() + 1).to_string())).await;
    assert_eq!(error_code(unknown).await.1, "unknown_event");
    for id in [&id1, &id2] {
        let (status, code, _) =
            error_code(post(&b, &format!("{runs}/{id}/cancel"), json!({})).await).await;
        assert_eq!((status, code.as_str()), (409, "run_ended"));
    }
    // Neither payment was made; the waiting one never started.
    let paid = std::fs::read_to_string(&ledger).unwrap_or_default();
    assert!(!paid.contains("C1") && !paid.contains("C2"), "{paid}");
    let trace = std::fs::read_to_string(format!("{ledger}.trace")).unwrap();
    assert!(!trace.contains(" C2 "), "{trace}");
    for mut process in [a_proc, b_proc] {
        drop(process.stdin.take());
        assert!(process.wait().await.unwrap().success());
    }
}

#[cfg(feature = "sqlite")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queued_run_is_streamed_and_cancelled_from_another_process_on_one_sqlite_file() {
    let dir = std::env::temp_dir().join(format!("agentflow-queue-cancel-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let db = dir.join("store.db").display().to_string();
    cancel_and_attach_from_another_process(&["--sqlite".to_owned(), db], &dir).await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queued_run_is_streamed_and_cancelled_from_another_process_on_one_postgres_database() {
    let Some(url) = agentweave_runtime::testing::fresh_postgres_database("queue_cancel").await
    else {
        return;
    };
    let dir =
        std::env::temp_dir().join(format!("agentflow-queue-cancel-pg-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    cancel_and_attach_from_another_process(&["--postgres".to_owned(), url], &dir).await;
    let _ = std::fs::remove_dir_all(&dir);
}
