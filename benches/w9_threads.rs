//! W9: the latency of one turn of a thread against the thread's length ("Performance
//! budget" and figures in BENCHMARKS.md).
//!
//! ```text
//! cargo bench --bench w9_threads
//! ```
//!
//! A thread of L earlier messages (L/2 turns, each a user message and the bot's answer) is
//! kept in an `InMemoryStore`; each timed turn loads the thread's head, builds the bot's input
//! from the earlier turns its context policy looks at, runs the bot, and encodes the turn's
//! record. The record is not kept (the store below drops appends after encoding them), so the
//! thread keeps its length L across iterations. With the default policy the bot sees the whole
//! thread, so a turn costs time linear in L; with `ContextPolicy::LastTurns(3)` it sees (and
//! reads from the store) two earlier turns, so a turn costs the same for every L.
//!
//! The same turns on a `SqliteStore` (group `w9_turn_sqlite`) and, with the `postgres` feature
//! and `AGENTFLOW_PG_URL` set, on a `PostgresStore` (group `w9_turn_postgres`): there the
//! thread's lease is taken and given back in the database on every turn (two write
//! transactions), and the window is read with SQL.

use std::ops::Range;
use std::time::{Duration, Instant};

use agentweave::store::{RecordEnd, RecordStart, ThreadHead, ThreadRecord, ThreadStore};
use agentweave::TurnRequest;
use agentweave::{
    async_trait, history::ContextPolicy, store::InMemoryStore, store::ThreadError, FlowAgent,
    FnAgent, Message, RunPath, Runner,
};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};

/// A store whose appends are encoded (as a store must) and then dropped.
struct FixedLength<S>(S);

#[async_trait]
impl<S: ThreadStore> ThreadStore for FixedLength<S> {
    async fn head(&self, id: &str) -> Result<Option<ThreadHead>, ThreadError> {
        self.0.head(id).await
    }
    async fn read(&self, id: &str, turns: Range<u64>) -> Result<Vec<ThreadRecord>, ThreadError> {
        self.0.read(id, turns).await
    }
    async fn append(
        &self,
        _id: &str,
        expected_version: u64,
        record: ThreadRecord,
    ) -> Result<u64, ThreadError> {
        std::hint::black_box(record.encode());
        Ok(expected_version + 1)
    }
    async fn list(&self) -> Result<Vec<String>, ThreadError> {
        self.0.list().await
    }
    async fn delete(&self, id: &str) -> Result<bool, ThreadError> {
        self.0.delete(id).await
    }
    async fn lease_thread(
        &self,
        id: &str,
        owner: &str,
        lease: Duration,
    ) -> Result<(), ThreadError> {
        self.0.lease_thread(id, owner, lease).await
    }
    async fn renew_thread_lease(
        &self,
        id: &str,
        owner: &str,
        lease: Duration,
    ) -> Result<(), ThreadError> {
        self.0.renew_thread_lease(id, owner, lease).await
    }
    async fn release_thread_lease(&self, id: &str, owner: &str) -> Result<(), ThreadError> {
        self.0.release_thread_lease(id, owner).await
    }
}

/// `store` holding the thread `t` with `messages` earlier messages.
async fn thread_of<S: ThreadStore>(store: S, messages: u64) -> S {
    for turn in 0..messages / 2 {
        let record = ThreadRecord {
            seq: turn,
            turn,
            at_ms: 0,
            start: RecordStart::Turn {
                input: vec![Message::user(format!("question {turn}"))],
            },
            started_at: RunPath::root("bot"),
            events: vec![agentweave::event::RecordedEvent {
                agent_name: "bot".into(),
                run_path: RunPath::root("bot"),
                message: Some(Message::assistant(format!("answer {turn}"))),
                action: None,
            }],
            end: RecordEnd::Completed {
                answered_by: "bot".into(),
            },
            by: None,
            values: None,
            run_id: None,
            sealed: None,
        };
        store.append("t", turn, record).await.expect("append");
    }
    store
}

fn w9_turn_latency(c: &mut Criterion) {
    turn_latency(c, "w9_turn", |_| InMemoryStore::new());
}

/// W9 on a SQLite file per thread length (in the system's temporary directory).
fn w9_turn_latency_sqlite(c: &mut Criterion) {
    let dir = std::env::temp_dir().join(format!("agentflow-w9-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let open = |at: std::path::PathBuf| {
        rt.block_on(agentweave::store::SqliteStore::open(at))
            .expect("sqlite store")
    };
    turn_latency(c, "w9_turn_sqlite", |length| {
        open(dir.join(format!("thread-{length}.db")))
    });
    std::fs::remove_dir_all(&dir).ok();
}

/// W9 on a fresh PostgreSQL database per thread length, on the server of `AGENTFLOW_PG_URL`
/// (`.ci/postgres.sh` starts one); skipped with a note without it.
#[cfg(feature = "postgres")]
fn w9_turn_latency_postgres(c: &mut Criterion) {
    if std::env::var_os(agentweave_runtime::testing::POSTGRES_URL_ENV).is_none() {
        eprintln!("w9_turn_postgres skipped: set AGENTFLOW_PG_URL to a PostgreSQL server's URL");
        return;
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    turn_latency(c, "w9_turn_postgres", |length| {
        rt.block_on(async {
            let url = agentweave_runtime::testing::fresh_postgres_database(&format!("w9_{length}"))
                .await
                .expect("AGENTFLOW_PG_URL is set");
            agentweave::store::PostgresStore::connect(&url)
                .await
                .expect("postgres store")
        })
    });
}

#[cfg(not(feature = "postgres"))]
fn w9_turn_latency_postgres(_: &mut Criterion) {}

/// The W9 group `name` on the stores `store(L)` makes (one per thread length L).
fn turn_latency<S: ThreadStore + Clone + 'static>(
    c: &mut Criterion,
    name: &str,
    mut store: impl FnMut(u64) -> S,
) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let mut group = c.benchmark_group(name);
    for length in [100u64, 1_000, 10_000] {
        let filled = rt.block_on(thread_of(store(length), length));
        for (label, policy) in [
            ("whole_thread", ContextPolicy::Rewrite),
            ("last_3_turns", ContextPolicy::LastTurns(3)),
        ] {
            let bot = FnAgent::new("bot", |cx, input| async move {
                cx.say(format!("you sent {} messages", input.messages.len()));
                Ok(())
            });
            let runner = Runner::builder(FlowAgent::new(bot).context(policy.clone()))
                .thread_store(FixedLength(filled.clone()))
                .build();
            group.bench_with_input(BenchmarkId::new(label, length), &length, |b, _| {
                b.iter_custom(|iters| {
                    rt.block_on(async {
                        let start = Instant::now();
                        for _ in 0..iters {
                            let turn = runner
                                .turn(TurnRequest::new("t", Message::user("and now?")))
                                .await
                                .expect("turn");
                            std::hint::black_box(turn.finish().await);
                        }
                        start.elapsed()
                    })
                })
            });
        }
    }
    group.finish();
}

criterion_group!(
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    targets = w9_turn_latency, w9_turn_latency_sqlite, w9_turn_latency_postgres
);
criterion_main!(benches);
