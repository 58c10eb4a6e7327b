//! The resume claim across OS processes, on every durable backend: the test binary runs
//! itself again as worker processes (`worker_entry`, selected by environment variables).
//!
//! - `*_race`: 50 trials; in each, 4 processes resume one checkpoint at the same moment:
//!   exactly one runs the approved tool, every other is refused with a typed error.
//! - `*_takeover`: a worker is killed with SIGKILL inside the tool while it holds the claim;
//!   before the lease ends nobody else can resume, after it another worker takes over and the
//!   tool sees the same idempotency key.
//! - `*_drain`: 4 processes drain 1,000 pending approvals: every one runs exactly once.
//!
//! PostgreSQL tests need `AGENTFLOW_PG_URL` (see `.ci/postgres.sh`).

mod support;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::Child;
use std::sync::Arc;
use std::time::Duration;

use flow_runtime::{
    tool_fn_with_context, ChatModelAgent, CheckpointError, CheckpointStore, FileStore, FlowAgent,
    Message, Runner, ScriptStep, ScriptedModel, Session, StoreError, ToolContext,
};
use futures::StreamExt;
use serde_json::json;
use support::processes::{append, barrier, lines, spawn_worker, worker_orders, Orders};

const TRIALS: usize = 50;
const WORKERS: usize = 4;
const APPROVALS: usize = 1000;

/// Where a backend lives: `file:DIR`, `sqlite:PATH` or `postgres:URL`.
async fn open(backend: &str) -> Arc<dyn CheckpointStore> {
    let (kind, at) = backend.split_once(':').expect("KIND:WHERE");
    match kind {
        "file" => Arc::new(FileStore::new(at).unwrap()),
        #[cfg(feature = "sqlite")]
        "sqlite" => Arc::new(flow_runtime::store::SqliteStore::open(at).await.unwrap()),
        #[cfg(feature = "postgres")]
        "postgres" => Arc::new(
            flow_runtime::store::PostgresStore::connect(at)
                .await
                .unwrap(),
        ),
        other => panic!("unknown backend {other}"),
    }
}

/// The desk: its `refund` tool interrupts for approval; approved, it logs its idempotency key
/// to `ran.log` (and, with `hang`, then waits forever: the worker will be killed there).
fn desk(work: PathBuf, hang: bool) -> FlowAgent {
    let refund = tool_fn_with_context(
        "refund",
        "Refunds after approval.",
        move |cx: ToolContext, _args: serde_json::Value| {
            let work = work.clone();
            async move {
                if cx.resume_data().is_none() {
                    return Err(cx.interrupt(json!("approve?")));
                }
                append(&work.join("ran.log"), &cx.idempotency_key());
                if hang {
                    futures::future::pending::<()>().await;
                }
                Ok("paid".to_string())
            }
        },
    );
    let model = ScriptedModel::rules()
        .when(
            |r: &flow_runtime::ChatRequest| r.messages.last().is_some_and(|m| m.content == "paid"),
            ScriptStep::text("refunded"),
        )
        .otherwise(ScriptStep::tool_call("refund", json!({})));
    FlowAgent::new(
        ChatModelAgent::builder("desk", model)
            .tool(refund)
            .build()
            .unwrap(),
    )
}

fn runner(store: Arc<dyn CheckpointStore>, work: &Path, hang: bool, lease: Duration) -> Runner {
    Runner::new(desk(work.to_path_buf(), hang))
        .shared_checkpoint_store(store)
        .lease(lease)
}

fn approve() -> HashMap<String, serde_json::Value> {
    HashMap::from([("desk".to_owned(), json!("yes"))])
}

/// Resumes `id` to its end; `Ok(true)` if this worker ran it, `Ok(false)` if it was refused
/// because another has it or had it.
async fn resume(runner: &Runner, id: &str) -> Result<bool, CheckpointError> {
    match runner.resume(id, approve()).await {
        Ok(events) => {
            let events: Vec<_> = events.collect().await;
            if let Some(e) = events.iter().find_map(|e| e.error.as_ref()) {
                panic!("resumed run of {id} failed: {e}");
            }
            Ok(true)
        }
        Err(CheckpointError::Claimed { .. } | CheckpointError::AlreadyResumed { .. }) => Ok(false),
        Err(e) => Err(e),
    }
}

/// Runs only as a worker process of the tests below.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn worker_entry() {
    let Some(Orders {
        role,
        backend,
        work,
        me,
    }) = worker_orders()
    else {
        return;
    };
    let store = open(&backend).await;
    let log = work.join(format!("worker-{me}.log"));
    match role.as_str() {
        "race" => {
            let runner = runner(store, &work, false, Duration::from_secs(300));
            for trial in 0..TRIALS {
                barrier(&work, &format!("go-{trial}"), me, WORKERS);
                let id = format!("race-{trial}");
                match resume(&runner, &id).await {
                    Ok(true) => append(&log, &format!("won {id}")),
                    Ok(false) => append(&log, &format!("refused {id}")),
                    Err(e) => append(&log, &format!("error {id}: {e}")),
                }
            }
        }
        "hold" => {
            let runner = runner(store, &work, true, Duration::from_secs(3));
            resume(&runner, "held").await.unwrap();
            unreachable!("the tool hangs until this process is killed");
        }
        "drain" => {
            let runner = runner(store, &work, false, Duration::from_secs(300));
            loop {
                let pending = runner.pending_interrupts(32).await.unwrap();
                if pending.is_empty() {
                    break;
                }
                for p in pending {
                    match resume(&runner, &p.id).await {
                        Ok(true) => append(&log, &format!("won {}", p.id)),
                        Ok(false) => {}
                        Err(e) => append(&log, &format!("error {}: {e}", p.id)),
                    }
                }
            }
        }
        other => panic!("unknown role {other}"),
    }
    std::process::exit(0);
}

fn spawn(role: &str, backend: &str, work: &Path, me: usize) -> Child {
    spawn_worker("worker_entry", role, backend, work, me)
}

fn wait_all(children: Vec<Child>) {
    for mut child in children {
        let status = child.wait().unwrap();
        assert!(status.success(), "a worker failed: {status}");
    }
}

async fn interrupt(runner: &Runner, id: &str) {
    let events: Vec<_> = runner
        .run_checkpointed(id, Session::new(), [Arc::new(Message::user("refund me"))])
        .collect()
        .await;
    assert!(events.last().unwrap().is_interrupt(), "{id} did not stop");
}

fn worker_lines(work: &Path) -> Vec<String> {
    (0..WORKERS)
        .flat_map(|w| lines(&work.join(format!("worker-{w}.log"))))
        .collect()
}

async fn race(backend: &str, work: &Path) {
    let store = open(backend).await;
    let runner = runner(Arc::clone(&store), work, false, Duration::from_secs(300));
    for trial in 0..TRIALS {
        interrupt(&runner, &format!("race-{trial}")).await;
    }
    let workers: Vec<Child> = (0..WORKERS)
        .map(|w| spawn("race", backend, work, w))
        .collect();
    wait_all(workers);
    let outcomes = worker_lines(work);
    let errors: Vec<&String> = outcomes.iter().filter(|l| l.starts_with("error")).collect();
    assert!(errors.is_empty(), "{errors:?}");
    for trial in 0..TRIALS {
        let won = outcomes
            .iter()
            .filter(|l| **l == format!("won race-{trial}"))
            .count();
        let refused = outcomes
            .iter()
            .filter(|l| **l == format!("refused race-{trial}"))
            .count();
        assert_eq!((won, refused), (1, WORKERS - 1), "trial {trial}");
    }
    // The tool ran once per trial, each time with its own key.
    let ran = lines(&work.join("ran.log"));
    assert_eq!(ran.len(), TRIALS);
    assert_eq!(ran.iter().collect::<HashSet<_>>().len(), TRIALS);
}

async fn takeover(backend: &str, work: &Path) {
    let store = open(backend).await;
    let lease = Duration::from_secs(3);
    let runner = runner(Arc::clone(&store), work, false, lease);
    interrupt(&runner, "held").await;
    let mut holder = spawn("hold", backend, work, 0);
    // The holder is inside the tool: it holds the claim.
    while lines(&work.join("ran.log")).is_empty() {
        std::thread::sleep(Duration::from_millis(5));
    }
    holder.kill().unwrap(); // SIGKILL
    holder.wait().unwrap();
    // Its lease still runs: nobody else may resume.
    match runner.resume("held", approve()).await {
        Err(CheckpointError::Claimed { .. }) => {}
        other => panic!("expected Claimed, got {:?}", other.map(|_| ())),
    }
    // After the lease, another worker takes over.
    let mut taken = false;
    for _ in 0..200 {
        tokio::time::sleep(Duration::from_millis(50)).await;
        if resume(&runner, "held").await.unwrap() {
            taken = true;
            break;
        }
    }
    assert!(taken, "the dead worker's claim was never taken over");
    let ran = lines(&work.join("ran.log"));
    assert_eq!(ran.len(), 2, "the call in flight ran again (at-least-once)");
    assert_eq!(ran[0], ran[1], "with the same idempotency key");
    let history = store.history("held").await.unwrap();
    assert_eq!(history.len(), 2);
    assert!(matches!(
        store.claim("held", lease).await,
        Err(StoreError::AlreadyResumed { .. })
    ));
}

async fn drain(backend: &str, work: &Path) {
    let store = open(backend).await;
    let runner = runner(Arc::clone(&store), work, false, Duration::from_secs(300));
    for k in 0..APPROVALS {
        interrupt(&runner, &format!("approval-{k}")).await;
    }
    assert_eq!(
        runner.pending_interrupts(usize::MAX).await.unwrap().len(),
        APPROVALS
    );
    let workers: Vec<Child> = (0..WORKERS)
        .map(|w| spawn("drain", backend, work, w))
        .collect();
    wait_all(workers);
    let outcomes = worker_lines(work);
    let errors: Vec<&String> = outcomes.iter().filter(|l| l.starts_with("error")).collect();
    assert!(errors.is_empty(), "{errors:?}");
    let won: HashSet<&String> = outcomes.iter().collect();
    assert_eq!(outcomes.len(), APPROVALS, "none run twice");
    assert_eq!(won.len(), APPROVALS, "none lost");
    let ran = lines(&work.join("ran.log"));
    assert_eq!(ran.len(), APPROVALS);
    assert_eq!(ran.iter().collect::<HashSet<_>>().len(), APPROVALS);
    assert!(runner.pending_interrupts(10).await.unwrap().is_empty());
    // More than one worker took part.
    let busy = (0..WORKERS)
        .filter(|w| !lines(&work.join(format!("worker-{w}.log"))).is_empty())
        .count();
    assert!(busy > 1, "only {busy} worker drained");
}

support::processes::on_every_store!("procs": race, takeover, drain);
