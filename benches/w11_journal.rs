//! W11: the cost per step of each durability mode (figures in BENCHMARKS.md).
//!
//! ```text
//! cargo bench --bench w11_journal
//! ```
//!
//! W4's chain of 10 `FnAgent`s (each transferring to its child; the last answers) run as a
//! checkpointed run (`RunRequest::checkpoint`, a new run id per iteration) on an
//! `InMemoryStore` and on a `SqliteStore` in a temporary file: without a journal (`exit`:
//! nothing is written between interrupts, and this run has none), and with every step
//! journaled in the `async` and `sync` modes. The cost per step is the difference to `exit`
//! divided by the steps of a run (printed once per store). `sync_x8` runs 8 such runs at once
//! on the one store (one iteration = 8 runs), where a store with group commit makes the runs'
//! steps share commits.
//!
//! `w11_chain_memory_pruned` is the in-memory case in a steady state: after each run its
//! journal is deleted (what `Runner::purge` does with a retention; for `exit` there is none to
//! delete, and the delete is timed in every mode), so the store does not grow by a run's
//! steps at each iteration. In `w11_chain_memory` the store keeps every run's journal, and the
//! memory it takes for them (new pages, about one a run) is part of the figure.

mod common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use agentweave::store::JournalStore;
use agentweave::RunRequest;
use agentweave::{store::CheckpointStore, Durability, Runner};
use common::Kind;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use futures::StreamExt;

const DEPTH: usize = 10;

fn current_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

/// Times `iters` runs of `runner`, each under a new run id.
fn time_runs(
    rt: &tokio::runtime::Runtime,
    runner: &Runner,
    next: &AtomicU64,
    iters: u64,
) -> Duration {
    time_runs_pruning(rt, runner, None, next, iters)
}

/// Times `iters` runs of `runner`, each under a new run id, each followed by the delete of its
/// journal from `prune` if given.
fn time_runs_pruning(
    rt: &tokio::runtime::Runtime,
    runner: &Runner,
    prune: Option<&dyn JournalStore>,
    next: &AtomicU64,
    iters: u64,
) -> Duration {
    let input = common::user_input();
    rt.block_on(async {
        let start = Instant::now();
        for _ in 0..iters {
            let id = format!("run-{}", next.fetch_add(1, Ordering::Relaxed));
            let events = runner
                .run(RunRequest::new(input.iter().cloned()).checkpoint(&id))
                .count()
                .await;
            std::hint::black_box(events);
            if let Some(store) = prune {
                std::hint::black_box(store.delete_journal(&id).await.expect("delete"));
            }
        }
        start.elapsed()
    })
}

/// Times `iters` rounds of `CONCURRENT` runs of `runner` at once, each under a new run id.
fn time_concurrent_runs(
    rt: &tokio::runtime::Runtime,
    runner: &Runner,
    next: &AtomicU64,
    iters: u64,
) -> Duration {
    let input = common::user_input();
    rt.block_on(async {
        let start = Instant::now();
        for _ in 0..iters {
            let runs = (0..CONCURRENT).map(|_| {
                let id = format!("run-{}", next.fetch_add(1, Ordering::Relaxed));
                runner
                    .run(RunRequest::new(input.iter().cloned()).checkpoint(&id))
                    .count()
            });
            std::hint::black_box(futures::future::join_all(runs).await);
        }
        start.elapsed()
    })
}

/// Runs at once in the `sync_x8` case.
const CONCURRENT: usize = 8;

/// Benches a run of the chain in each durability mode on `store` (deleting each run's journal
/// from `prune` if given).
fn bench_modes<S>(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    rt: &tokio::runtime::Runtime,
    store: &S,
    prune: Option<&dyn JournalStore>,
    next: &AtomicU64,
) where
    S: JournalStore + CheckpointStore + Clone,
{
    let tree = common::chain_tree(Kind::Fn, DEPTH);
    for (label, mode) in [
        ("exit", Durability::Exit),
        ("async", Durability::Async),
        ("sync", Durability::Sync),
    ] {
        let runner = Runner::builder(tree.clone())
            .checkpoint_store(store.clone())
            .journal_store(store.clone())
            .durability(mode)
            .build();
        group.bench_function(BenchmarkId::new(label, DEPTH), |b| {
            b.iter_custom(|iters| time_runs_pruning(rt, &runner, prune, next, iters))
        });
    }
}

fn modes<S>(c: &mut Criterion, group_name: &str, rt: &tokio::runtime::Runtime, store: S)
where
    S: JournalStore + CheckpointStore + Clone,
{
    let mut group = c.benchmark_group(group_name);
    let next = AtomicU64::new(0);
    let tree = common::chain_tree(Kind::Fn, DEPTH);
    // The steps of one run, as its journal holds them.
    let probe = Runner::builder(tree.clone())
        .checkpoint_store(store.clone())
        .journal_store(store.clone())
        .durability(Durability::Sync)
        .build();
    time_runs(rt, &probe, &next, 1);
    let steps = rt.block_on(probe.journal("run-0")).expect("journal").len();
    println!("{group_name}: {steps} journal steps per run of the chain of {DEPTH}");
    bench_modes(&mut group, rt, &store, None, &next);
    let runner = Runner::builder(tree.clone())
        .checkpoint_store(store.clone())
        .journal_store(store.clone())
        .durability(Durability::Sync)
        .build();
    group.bench_function(BenchmarkId::new("sync_x8", DEPTH), |b| {
        b.iter_custom(|iters| time_concurrent_runs(rt, &runner, &next, iters))
    });
    group.finish();
}

fn w11_memory(c: &mut Criterion) {
    let rt = current_thread();
    modes(
        c,
        "w11_chain_memory",
        &rt,
        agentweave::store::InMemoryStore::new(),
    );
}

fn w11_memory_pruned(c: &mut Criterion) {
    let rt = current_thread();
    let store = agentweave::store::InMemoryStore::new();
    let mut group = c.benchmark_group("w11_chain_memory_pruned");
    bench_modes(&mut group, &rt, &store, Some(&store), &AtomicU64::new(0));
    group.finish();
}

fn w11_sqlite(c: &mut Criterion) {
    let rt = current_thread();
    let dir = std::env::temp_dir().join(format!("agentflow-w11-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let store = rt
        .block_on(agentweave::store::SqliteStore::open(dir.join("w11.db")))
        .expect("sqlite store");
    modes(c, "w11_chain_sqlite", &rt, store);
    let _ = std::fs::remove_dir_all(&dir);
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    targets = w11_memory, w11_memory_pruned, w11_sqlite
}
criterion_main!(benches);
