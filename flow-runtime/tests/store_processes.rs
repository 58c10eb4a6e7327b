// Its own test binary, not a module of tests/it: a kill harness: it starts copies of this test
// binary as workers and SIGKILLs them mid-way (`--exact` entries by name).
//! The resume claim across OS processes, on every durable backend: the test binary runs
//! itself again as worker processes (`worker_entry`, selected by environment variables).
//!
//! - `*_race`: 50 trials; in each, 4 processes resume one checkpoint at the same moment:
//!   exactly one runs the approved tool, every other is refused with a typed error.
//! - `*_takeover`: a worker is killed with SIGKILL inside the tool while it holds the claim;
//!   before the lease ends nobody else can resume, after it another worker takes over and the
//!   tool sees the same idempotency key.
//! - `*_drain`: 4 processes drain 1,000 pending approvals: every one runs exactly once.
//! - `*_fresh_open`: 8 processes open one store that does not exist yet at the same moment
//!   (creating the file or database schema): every one opens it and saves a checkpoint.
//! - `sqlite_open_waits_for_the_wal_switch`: 8 processes open a SQLite file while another
//!   connection writes to it: each waits for the lock to switch the file to WAL.
//!
//! PostgreSQL tests need `AGENTFLOW_PG_URL` (see `.ci/postgres.sh`).

mod support;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use agentweave_runtime::{
    tool_fn_with_context, ChatModelAgent, CheckpointError, CheckpointStore, FlowAgent, Message,
    Runner, SaveMode, ScriptStep, ScriptedModel, StoreError, ToolContext,
};
use agentweave_runtime::{ResumeRequest, RunRequest};
use futures::StreamExt;
use serde_json::json;
use support::processes::{append, barrier, lines, worker_orders, NamedStore, Orders, Workers};

const TRIALS: usize = 50;
const WORKERS: usize = 4;
const APPROVALS: usize = 1000;
/// The processes that open one new store at the same moment.
const OPENERS: usize = 8;

/// The checkpoint store `backend` names (see [`NamedStore`]).
async fn open(backend: &str) -> Arc<dyn CheckpointStore> {
    NamedStore::open(backend).await.checkpoints()
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
            |r: &agentweave_runtime::ChatRequest| {
                r.messages.last().is_some_and(|m| m.content == "paid")
            },
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
    Runner::builder(desk(work.to_path_buf(), hang))
        .shared_checkpoint_store(store)
        .lease(lease)
        .build()
}

fn approve() -> HashMap<String, serde_json::Value> {
    HashMap::from([("desk".to_owned(), json!("yes"))])
}

/// Resumes `id` to its end; `Ok(true)` if this worker ran it, `Ok(false)` if it was refused
/// because another has it or had it.
async fn resume(runner: &Runner, id: &str) -> Result<bool, CheckpointError> {
    match runner.resume(ResumeRequest::new(id, approve())).await {
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
    if role == "open" {
        // All at once, on a store nobody has opened yet.
        barrier(&work, "open", me, OPENERS);
        append(&work.join("opening.log"), &me.to_string());
        let store = open(&backend).await;
        let id = format!("opened-{me}");
        store
            .save(&id, id.as_bytes().to_vec(), SaveMode::Create)
            .await
            .unwrap();
        std::process::exit(0);
    }
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
                let pending = runner.checkpoints().pending(32).await.unwrap();
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

fn start(role: &str, backend: &str, work: &Path, n: usize) -> Workers {
    Workers::start("worker_entry", role, backend, work, n)
}

async fn interrupt(runner: &Runner, id: &str) {
    let events: Vec<_> = runner
        .run(RunRequest::new([Message::user("refund me")]).checkpoint(id))
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
    start("race", backend, work, WORKERS).finish();
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
    let mut holder = start("hold", backend, work, 1);
    // The holder is inside the tool: it holds the claim.
    holder.wait_until(|| !lines(&work.join("ran.log")).is_empty());
    // SIGKILL. Its lease still runs: nobody else may resume.
    holder.kill(0);
    match runner.resume(ResumeRequest::new("held", approve())).await {
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
        runner
            .checkpoints()
            .pending(usize::MAX)
            .await
            .unwrap()
            .len(),
        APPROVALS
    );
    start("drain", backend, work, WORKERS).finish();
    let outcomes = worker_lines(work);
    let errors: Vec<&String> = outcomes.iter().filter(|l| l.starts_with("error")).collect();
    assert!(errors.is_empty(), "{errors:?}");
    let won: HashSet<&String> = outcomes.iter().collect();
    assert_eq!(outcomes.len(), APPROVALS, "none run twice");
    assert_eq!(won.len(), APPROVALS, "none lost");
    let ran = lines(&work.join("ran.log"));
    assert_eq!(ran.len(), APPROVALS);
    assert_eq!(ran.iter().collect::<HashSet<_>>().len(), APPROVALS);
    assert!(runner.checkpoints().pending(10).await.unwrap().is_empty());
    // More than one worker took part.
    let busy = (0..WORKERS)
        .filter(|w| !lines(&work.join(format!("worker-{w}.log"))).is_empty())
        .count();
    assert!(busy > 1, "only {busy} worker drained");
}

async fn fresh_open(backend: &str, work: &Path) {
    start("open", backend, work, OPENERS).finish();
    let store = open(backend).await;
    for w in 0..OPENERS {
        let id = format!("opened-{w}");
        let history = store.history(&id).await.unwrap();
        assert_eq!(history.len(), 1, "{id}");
    }
}

/// A SQLite file switches to WAL mode when a store first opens it, which needs an exclusive
/// lock SQLite's busy timeout does not wait for when another connection writes (it would
/// risk a deadlock): 8 processes open a file while another connection holds a write
/// transaction on it in its old journal mode, and each waits for it instead of failing with
/// "database is locked".
#[cfg(feature = "sqlite")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_open_waits_for_the_wal_switch() {
    support::processes::on_fresh_store(
        "procs",
        "wal",
        support::processes::StoreKind::Sqlite,
        |backend, work| async move { openers_wait_for_a_writer(&backend, &work).await },
    )
    .await;
}

/// The scenario of [`sqlite_open_waits_for_the_wal_switch`] on `backend`, a SQLite file not
/// created yet.
#[cfg(feature = "sqlite")]
async fn openers_wait_for_a_writer(backend: &str, work: &Path) {
    use sqlx::sqlite::{SqliteConnectOptions, SqliteConnection};
    use sqlx::{Connection, Executor};

    let path = backend.strip_prefix("sqlite:").expect("a SQLite backend");
    let mut writer = SqliteConnection::connect_with(
        &SqliteConnectOptions::new()
            .filename(path)
            .create_if_missing(true),
    )
    .await
    .unwrap();
    writer.execute("CREATE TABLE legacy (x)").await.unwrap();
    let mut write = writer.begin_with("BEGIN IMMEDIATE").await.unwrap();
    write
        .execute("INSERT INTO legacy VALUES (1)")
        .await
        .unwrap();
    let mut openers = start("open", backend, work, OPENERS);
    openers.wait_until(|| lines(&work.join("opening.log")).len() == OPENERS);
    // Every opener meets the write lock (none can switch the file to WAL under it).
    std::thread::sleep(Duration::from_millis(300));
    openers.check();
    write.commit().await.unwrap();
    openers.finish();
    let store = open(backend).await;
    for w in 0..OPENERS {
        assert_eq!(
            store.history(&format!("opened-{w}")).await.unwrap().len(),
            1
        );
    }
}

support::processes::on_every_store!("procs": race, takeover, drain, fresh_open);
