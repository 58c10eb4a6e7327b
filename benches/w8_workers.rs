//! W8: resumes per second with 1, 2 and 4 worker processes sharing one store (SQLite, and
//! PostgreSQL when `AGENTFLOW_PG_URL` names a server).
//!
//! For each store and worker count, this process saves `W8_RESUMES` (default 2,000) pending
//! checkpoints, starts the workers (this binary again, as `W8_ROLE=worker`), opens a start
//! barrier, and measures the time until every worker has drained the store: each worker
//! claims a batch of `W8_BATCH` (default 32) pending checkpoints no other worker holds
//! (`Checkpoints::claim`) and resumes each (`ResumeRequest::claimed`: decode, run,
//! complete), until nothing is left. With `W8_CLAIM=list`, each worker instead lists pending
//! checkpoints and races the others to resume each (`checkpoints().pending` and `resume`, the
//! loop before batch claims), skipping those another worker holds. Prints
//! `store workers resumes seconds resumes/s`.
//!
//! ```text
//! cargo bench --bench w8_workers
//! W8_CLAIM=list cargo bench --features postgres --bench w8_workers
//! ```

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::Arc;
use std::time::{Duration, Instant};

use agentweave::store::CheckpointStore;
use agentweave::{store::CheckpointError, FlowAgent, FnAgent, Message, Runner};
use agentweave::{ResumeRequest, RunRequest};
use futures::StreamExt;

fn desk() -> FlowAgent {
    FlowAgent::new(
        FnAgent::new("refund", |cx, _| async move {
            cx.interrupt(serde_json::json!("approve?"));
            Ok(())
        })
        .on_resume(|cx, _, _| async move {
            cx.say("refunded");
            Ok(())
        }),
    )
}

async fn open(backend: &str) -> Arc<dyn CheckpointStore> {
    let (kind, at) = backend.split_once(':').unwrap();
    match kind {
        #[cfg(feature = "sqlite")]
        "sqlite" => Arc::new(agentweave::store::SqliteStore::open(at).await.unwrap()),
        #[cfg(feature = "postgres")]
        "postgres" => Arc::new(agentweave::store::PostgresStore::connect(at).await.unwrap()),
        other => panic!("store {other} is not built in; enable its feature"),
    }
}

async fn worker(backend: &str, go: &Path) {
    let runner = Runner::builder(desk())
        .shared_checkpoint_store(open(backend).await)
        .build();
    while !go.exists() {
        std::thread::sleep(Duration::from_micros(200));
    }
    if std::env::var("W8_CLAIM").as_deref() != Ok("list") {
        let batch = std::env::var("W8_BATCH")
            .ok()
            .and_then(|n| n.parse().ok())
            .unwrap_or(32);
        loop {
            let held = runner.checkpoints().claim(batch).await.unwrap();
            if held.is_empty() {
                return;
            }
            for claim in held {
                let events = runner
                    .resume(ResumeRequest::claimed(claim, []))
                    .await
                    .unwrap();
                let events: Vec<_> = events.collect().await;
                assert!(events.iter().all(|e| e.error.is_none()));
            }
        }
    }
    loop {
        let pending = runner.checkpoints().pending(64).await.unwrap();
        if pending.is_empty() {
            return;
        }
        for p in pending {
            match runner.resume(ResumeRequest::new(&p.id, [])).await {
                Ok(events) => {
                    let events: Vec<_> = events.collect().await;
                    assert!(events.iter().all(|e| e.error.is_none()));
                }
                Err(CheckpointError::Claimed { .. } | CheckpointError::AlreadyResumed { .. }) => {}
                Err(e) => panic!("{e}"),
            }
        }
    }
}

async fn measure(backend: &str, workers: usize, resumes: usize, work: &Path) -> f64 {
    let runner = Runner::builder(desk())
        .shared_checkpoint_store(open(backend).await)
        .build();
    // One round per store and worker count: its ids and its start barrier are its own (a
    // barrier shared by two stores would let the second store's workers start early).
    let kind = backend.split(':').next().unwrap();
    let round = format!("{}-{kind}-{workers}", std::process::id());
    for k in 0..resumes {
        let _: Vec<_> = runner
            .run(RunRequest::new([Message::user("refund")]).checkpoint(format!("w8-{round}-{k}")))
            .collect()
            .await;
    }
    let go = work.join(format!("go-{round}"));
    let children: Vec<Child> = (0..workers)
        .map(|_| {
            Command::new(std::env::current_exe().unwrap())
                .env("W8_ROLE", "worker")
                .env("W8_BACKEND", backend)
                .env("W8_GO", &go)
                .spawn()
                .unwrap()
        })
        .collect();
    // Let the workers connect before the clock starts.
    std::thread::sleep(Duration::from_millis(500));
    let start = Instant::now();
    std::fs::write(&go, b"").unwrap();
    for mut child in children {
        assert!(child.wait().unwrap().success());
    }
    let seconds = start.elapsed().as_secs_f64();
    assert!(runner.checkpoints().pending(1).await.unwrap().is_empty());
    let claim = match std::env::var("W8_CLAIM").as_deref() {
        Ok("list") => "list",
        _ => "batch",
    };
    println!(
        "{:<9} {claim:<5} {workers} {resumes} {seconds:.3} {:.0}",
        backend.split(':').next().unwrap(),
        resumes as f64 / seconds
    );
    seconds
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    if std::env::var("W8_ROLE").as_deref() == Ok("worker") {
        let backend = std::env::var("W8_BACKEND").unwrap();
        let go = PathBuf::from(std::env::var("W8_GO").unwrap());
        rt.block_on(worker(&backend, &go));
        return;
    }
    // `cargo bench` passes `--bench`; `cargo test --benches` does not: then only a smoke run.
    let benching = std::env::args().any(|a| a == "--bench");
    let resumes: usize = std::env::var("W8_RESUMES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(if benching { 2000 } else { 20 });
    let work = std::env::temp_dir().join(format!("agentflow-w8-{}", std::process::id()));
    std::fs::create_dir_all(&work).unwrap();
    let mut backends: Vec<String> = Vec::new();
    if cfg!(feature = "sqlite") {
        backends.push(format!("sqlite:{}", work.join("w8.db").display()));
    }
    if cfg!(feature = "postgres") {
        if let Ok(url) = std::env::var("AGENTFLOW_PG_URL") {
            backends.push(format!("postgres:{url}"));
        }
    }
    // `W8_STORES=postgres` or `W8_WORKERS=1,4` measure a part only.
    if let Ok(only) = std::env::var("W8_STORES") {
        backends.retain(|b| only.split(',').any(|s| b.starts_with(&format!("{s}:"))));
    }
    let counts: Vec<usize> = std::env::var("W8_WORKERS")
        .ok()
        .map(|w| w.split(',').filter_map(|n| n.parse().ok()).collect())
        .unwrap_or_else(|| vec![1, 2, 4]);
    println!("store     claim workers resumes seconds resumes/s");
    for backend in &backends {
        for &workers in &counts {
            rt.block_on(measure(backend, workers, resumes, &work));
        }
    }
    let _ = std::fs::remove_dir_all(&work);
}
