//! W12: storage per thread over a long conversation, and the time to recover a long turn
//! (figures in BENCHMARKS.md).
//!
//! ```text
//! cargo bench --bench w12_storage
//! ```
//!
//! - **Storage.** One thread of 1,000 turns (`W12_TURNS` to change it) of a code agent that
//!   answers two messages a turn, journaled in `Sync` on a `FileStore` in a temporary
//!   directory: the bytes of the thread's records and of its journals are printed every quarter
//!   of the run, without a retention and with `Retention::keep_turns(10)` applied every 10
//!   turns. Printed, not timed (criterion times one more turn on the long thread).
//! - **Recovery.** A turn of 100 journaled steps (a model that calls a tool 50 times, then
//!   answers) whose worker died after its last step, recovered by another runner on the same
//!   store (`Runner::recover`, read to its end): the time of the recovery (replaying 100
//!   steps), on an `InMemoryStore` and on a `SqliteStore`.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use agentweave::store::JournalStore;
use agentweave::TurnRequest;
use agentweave::{
    model::ChatRequest, model::ScriptStep, model::ScriptedModel, run::Retention,
    store::CheckpointStore, store::FileStore, store::ThreadStore, tool::tool_fn, ChatModelAgent,
    Durability, FlowAgent, FnAgent, Message, Role, Runner,
};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use futures::StreamExt;

fn current_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

fn temp_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("agentflow-w12-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// The bytes of the files under `dir`.
fn bytes_under(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => bytes_under(&e.path()),
            Ok(m) => m.len(),
            Err(_) => 0,
        })
        .sum()
}

/// Two messages a turn.
fn bot() -> FlowAgent {
    FlowAgent::new(FnAgent::new("bot", |cx, input| async move {
        cx.say(format!("heard {} messages", input.messages.len()));
        cx.say("anything else?");
        Ok(())
    }))
}

fn turns() -> u64 {
    std::env::var("W12_TURNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000)
}

async fn say(runner: &Runner, thread: &str, n: u64) {
    let turn = runner
        .turn(TurnRequest::new(
            thread,
            Message::user(format!("message {n}")),
        ))
        .await
        .expect("turn");
    turn.finish().await;
}

fn w12_storage(c: &mut Criterion) {
    let rt = current_thread();
    let turns = turns();
    let mut group = c.benchmark_group("w12_storage");
    for (label, retention) in [("no_retention", None), ("keep_10", Some(10))] {
        let dir = temp_dir(label);
        let store = FileStore::new(&dir).expect("file store");
        let runner = Runner::builder(bot())
            .stores(store.clone())
            .journal_store(store.clone())
            .durability(Durability::Sync)
            .build();
        rt.block_on(async {
            for n in 0..turns {
                say(&runner, "long", n).await;
                if let Some(k) = retention {
                    if (n + 1) % 10 == 0 {
                        runner.purge(Retention::keep_turns(k)).await.expect("purge");
                    }
                }
                if (n + 1) % (turns / 4).max(1) == 0 {
                    let records = bytes_under(&dir.join("threads"));
                    let journals = bytes_under(&dir.join("journals"));
                    println!(
                        "w12 storage {label}: after {} turns: records {records} B \
                         ({} B/turn), journals {journals} B",
                        n + 1,
                        records / (n + 1)
                    );
                }
            }
        });
        let next = AtomicU64::new(turns);
        group.bench_function(BenchmarkId::new("turn_on_long_thread", label), |b| {
            b.iter_custom(|iters| {
                rt.block_on(async {
                    let start = Instant::now();
                    for _ in 0..iters {
                        say(&runner, "long", next.fetch_add(1, Ordering::Relaxed)).await;
                    }
                    start.elapsed()
                })
            })
        });
        let _ = std::fs::remove_dir_all(&dir);
    }
    group.finish();
}

/// How many tool calls the long turn makes (two journal steps each).
const CALLS: usize = 50;

/// A model that calls `step` until it has `CALLS` results, then answers.
fn long_turn() -> FlowAgent {
    let step = tool_fn("step", "One step.", |_: serde_json::Value| async move {
        Ok::<_, String>("done".to_owned())
    });
    let enough =
        |r: &ChatRequest| r.messages.iter().filter(|m| m.role == Role::Tool).count() >= CALLS;
    let model = ScriptedModel::rules()
        .when(enough, ScriptStep::text("all steps done"))
        .otherwise(ScriptStep::tool_call("step", serde_json::json!({})));
    let agent = ChatModelAgent::builder("worker", model)
        .tool(step)
        .max_iterations(CALLS + 5)
        .build()
        .expect("agent");
    FlowAgent::new(agent)
}

const LEASE: Duration = Duration::from_millis(5);

fn runner_on<S>(store: &S) -> Runner
where
    S: ThreadStore + CheckpointStore + JournalStore + Clone,
{
    Runner::builder(long_turn())
        .stores(store.clone())
        .journal_store(store.clone())
        .durability(Durability::Sync)
        .lease(LEASE)
        .build()
}

/// Leaves thread `thread` with a turn of 100 journaled steps whose worker died after them.
async fn dead_turn<S>(store: &S, thread: &str) -> usize
where
    S: ThreadStore + CheckpointStore + JournalStore + Clone,
{
    let runner = runner_on(store);
    let mut turn = runner
        .turn(TurnRequest::new(thread, Message::user("work")))
        .await
        .expect("turn");
    let mut seen = 0;
    // Every event but the answer: 100 steps journaled.
    while seen < 2 * CALLS {
        turn.next().await.expect("an event");
        seen += 1;
    }
    std::mem::forget(turn);
    tokio::time::sleep(LEASE * 2).await;
    seen
}

fn recovery<S>(c: &mut Criterion, label: &str, rt: &tokio::runtime::Runtime, store: S)
where
    S: ThreadStore + CheckpointStore + JournalStore + Clone,
{
    let next = AtomicU64::new(0);
    let steps = rt.block_on(dead_turn(&store, "probe"));
    let recovered = rt.block_on(async {
        let turn = runner_on(&store).recover("probe").await.expect("recover");
        turn.expect("a dead turn").count().await
    });
    println!(
        "w12 recovery {label}: a turn of {steps} journaled steps, {recovered} events recovered"
    );
    c.benchmark_group("w12_recovery").bench_function(
        BenchmarkId::new("recover_100_steps", label),
        |b| {
            b.iter_custom(|iters| {
                rt.block_on(async {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        let thread = format!("t{}", next.fetch_add(1, Ordering::Relaxed));
                        dead_turn(&store, &thread).await;
                        let other = runner_on(&store);
                        let start = Instant::now();
                        let turn = other.recover(&thread).await.expect("recover");
                        let events = turn.expect("a dead turn").count().await;
                        total += start.elapsed();
                        std::hint::black_box(events);
                    }
                    total
                })
            })
        },
    );
}

fn w12_recovery(c: &mut Criterion) {
    let rt = current_thread();
    recovery(c, "memory", &rt, agentweave::store::InMemoryStore::new());
    let dir = temp_dir("sqlite");
    let store = rt
        .block_on(agentweave::store::SqliteStore::open(dir.join("w12.db")))
        .expect("sqlite store");
    recovery(c, "sqlite", &rt, store);
    let _ = std::fs::remove_dir_all(&dir);
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    targets = w12_storage, w12_recovery
}
criterion_main!(benches);
