// Its own test binary, not a module of tests/it: it measures the resident memory of the process,
// which other tests of a shared binary would change.
//! The server's resident memory after the floods of issue 39 comes back to within 20% of its
//! level before them (Linux: `/proc/self/statm`, read after `malloc_trim`: what the process
//! retains, not what glibc has yet to give back). Each flood's thread is deleted once its runs
//! ended, so what a round leaves is only what the server keeps by design (bounded). One test
//! in its own binary, so nothing else runs in the process; run it alone:
//! `cargo test -p agentweave-server --test rss_after_floods -- --ignored --nocapture`.

mod common;

use std::sync::Arc;

/// The server's address.
struct Served {
    base: String,
}
use agentweave_runtime::{FlowAgent, FnAgent};
use agentweave_server::{AppState, Auth, Limits};
use serde_json::{json, Value};
use tokio::sync::Semaphore;

/// What the process retains, in bytes: its resident set once the allocator gave back what it
/// can.
fn retained() -> usize {
    // glibc keeps freed memory in its arenas (one per thread that allocated, here the
    // runtime's workers) and returns it to the system only now and then, so a bare reading
    // measures when glibc last trimmed more than what the server holds: the figure varied
    // +5..+15% between runs. `malloc_trim(0)` returns every free page of every arena first.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only walks the allocator's own free lists, under its locks.
    unsafe {
        libc::malloc_trim(0);
    }
    rss()
}

/// Resident set size in bytes.
fn rss() -> usize {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: usize = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

async fn flood(base: &str, gate: &Arc<Semaphore>) {
    let client = common::client();
    let post = |path: String, body: Value| {
        client
            .post(format!("{base}{path}"))
            .bearer_auth(common::TOKEN)
            .json(&body)
            .send()
    };
    // 2,000 Agent Protocol threads with 16 KB of metadata each, then deleted.
    for i in 0..2_000 {
        let r = post(
            "/v1/threads".into(),
            json!({"thread_id": format!("m{i}"), "metadata": {"blob": "x".repeat(16_000)}}),
        )
        .await
        .unwrap();
        assert_eq!(r.status(), 200);
    }
    for i in 0..2_000 {
        let r = client
            .delete(format!("{base}/v1/threads/m{i}"))
            .bearer_auth(common::TOKEN)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 204);
    }
    // 500 runs enqueued on one thread (most refused), then let go; once every admitted run
    // ended, the thread is deleted (204: nothing of the ended runs holds it).
    let mut admitted = Vec::new();
    for i in 0..500 {
        let r = post(
            "/v1/flows/slow/threads/one/runs".into(),
            json!({"message": format!("flood {i}"), "multitask_strategy": "enqueue"}),
        )
        .await
        .unwrap();
        if r.status() == 202 {
            let run: Value = r.json().await.unwrap();
            admitted.push(run["run_id"].as_str().unwrap().to_owned());
        } else {
            assert_eq!(r.status(), 429);
        }
    }
    assert!(admitted.len() > 200, "{} admitted", admitted.len());
    gate.add_permits(10_000);
    for id in &admitted {
        let waited: Value = client
            .get(format!("{base}/v1/flows/slow/threads/one/runs/{id}/wait"))
            .bearer_auth(common::TOKEN)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(waited["status"], "success", "{waited}");
    }
    let deleted = client
        .delete(format!("{base}/v1/flows/slow/threads/one"))
        .bearer_auth(common::TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status(), 204, "{}", deleted.text().await.unwrap());
    // 10 parallel readers asking a long thread's whole history.
    let reads = (0..10).map(|_| post("/v1/threads/h/history".into(), json!({"limit": 100_000})));
    for r in futures::future::join_all(reads).await {
        assert_eq!(r.unwrap().status(), 200);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "measures the process's memory: run alone"]
async fn rss_after_the_floods_is_within_20_percent_of_before() {
    let gate = Arc::new(Semaphore::new(0));
    let slow_gate = Arc::clone(&gate);
    let slow = FnAgent::new("slow", move |cx, _| {
        let gate = Arc::clone(&slow_gate);
        async move {
            gate.acquire().await.unwrap().forget();
            cx.say("done");
            Ok(())
        }
    });
    let state = AppState::builder(agentweave_runtime::InMemoryStore::new())
        .flow("desk", agentweave_server::demo::desk())
        .flow("slow", FlowAgent::new(slow))
        .auth(Auth::bearer(common::TOKEN))
        .limits(Limits::default())
        .build()
        .unwrap();
    // Served directly: the tests' recording proxy keeps every byte sent, which is not the
    // server's memory.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(agentweave_server::serve(listener, state));
    let server = Served { base };
    // A thread of 100 turns for the history readers, and one round of every flood first, so
    // what is allocated once (pools, caches) is in the baseline.
    for i in 0..100 {
        let r = common::post(
            &server.base,
            "/v1/threads/h/runs/wait",
            json!({"assistant_id": "desk", "input": {"messages": [{"role": "user", "content": format!("turn {i}")}]}}),
        )
        .await;
        assert_eq!(r.status(), 200);
    }
    flood(&server.base, &gate).await;
    let before = retained();
    for _ in 0..3 {
        flood(&server.base, &gate).await;
    }
    let after = retained();
    println!(
        "RSS before the floods {:.1} MB, after three more rounds {:.1} MB ({:+.1}%)",
        before as f64 / 1e6,
        after as f64 / 1e6,
        (after as f64 / before as f64 - 1.0) * 100.0
    );
    assert!(
        (after as f64) < before as f64 * 1.2,
        "RSS grew from {before} to {after} bytes"
    );
}
