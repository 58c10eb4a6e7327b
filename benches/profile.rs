//! A bench-like driver for profilers: runs one workload many times with nothing else around
//! it, so `valgrind --tool=callgrind` (or `perf`) sees only that workload.
//!
//! ```text
//! cargo bench --bench profile --no-run      # prints the binary's path
//! valgrind --tool=callgrind target/release/deps/profile-HASH w1-fn 20000
//! ```
//!
//! Workloads: `w1-fn`, `w1-chat`, `w1-dsl` (W1 of `#[agent]` fns in a `flow!`), `w2-fn-H`, `w2-chat-H` (H prior messages), `w3-fn`,
//! `w3-chat` (10,000 chunks each), `w4-fn`, `w4-chat` (depth 10), `w4b-fn`, `w4b-chat` (W4 with
//! budgets it stays within), and W11's checkpointed
//! chain of 10 `FnAgent`s on an `InMemoryStore` journaling in each mode: `w11-exit`,
//! `w11-async`, `w11-sync` (a new run id per run, as the W11 bench; `w11-MODE-pruned` deletes
//! each run's journal after it, as `w11_chain_memory_pruned` does); on a `SqliteStore` in a
//! temporary file, `w11sqlite-sync` (runs one after another) and `w11sqlite-x8` (rounds of 8
//! runs at once; `runs` counts rounds), e.g. under `strace -f -c -e trace=fsync,fdatasync` to
//! count the synced commits. Prints the instructions-free
//! wall time per run as a sanity check; compare instruction counts, not this, under load.

mod common;

use std::time::Instant;

use agentweave::prelude::*;
use agentweave::RunRequest;
use agentweave::{store::InMemoryStore, Durability};
use common::Kind;

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let workload = args.first().map(String::as_str).unwrap_or("w1-fn");
    let runs: usize = args.get(1).and_then(|n| n.parse().ok()).unwrap_or(10_000);
    let mut parts = workload.split('-');
    let (w, kind) = (parts.next().unwrap_or("w1"), parts.next().unwrap_or("fn"));
    let kind = if kind == "chat" { Kind::Chat } else { Kind::Fn };
    let h: usize = parts.next().and_then(|h| h.parse().ok()).unwrap_or(0);

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    if w == "w11" {
        return w11(&rt, workload, mode_named(workload), runs);
    }
    if w == "w11sqlite" {
        return w11_sqlite(&rt, workload, runs);
    }
    let (runner, input, stream) = match w {
        "w1" if workload == "w1-dsl" => (
            Runner::new(common::dsl::w1_tree()),
            common::user_input(),
            false,
        ),
        "w1" | "w2" => (
            Runner::new(common::w1_tree(kind)),
            common::history(h),
            false,
        ),
        "w3" => (
            Runner::builder(common::streamer(kind, 10_000))
                .streaming(true)
                .build(),
            common::user_input(),
            true,
        ),
        "w4" => (
            Runner::new(common::chain_tree(kind, 10)),
            common::user_input(),
            false,
        ),
        // W4 with budgets that every run stays within: what checking and charging them costs.
        "w4b" => (
            Runner::builder(common::chain_tree(kind, 10))
                .budgets(agentweave::budget::Budgets::new(
                    agentweave::budget::BudgetLimits::default()
                        .max_model_calls(1_000)
                        .max_tool_calls(1_000)
                        .max_total_tokens(1_000_000),
                ))
                .build(),
            common::user_input(),
            false,
        ),
        other => panic!("unknown workload {other}"),
    };
    let start = Instant::now();
    let total = rt.block_on(async {
        let mut total = 0;
        for _ in 0..runs {
            total += if stream {
                common::stream_once(&runner, &input).await
            } else {
                common::run_once(&runner, &input).await
            };
        }
        total
    });
    let per_run = start.elapsed() / runs as u32;
    println!("{workload}: {runs} runs, {total} events/chunks, {per_run:?} per run");
}

/// The durability mode named by a `w11-MODE` workload.
fn mode_named(workload: &str) -> Durability {
    match workload.split('-').nth(1).unwrap_or("exit") {
        "async" => Durability::Async,
        "sync" => Durability::Sync,
        _ => Durability::Exit,
    }
}

/// W11's case: `runs` checkpointed runs of the chain of 10, journaled in `mode` in memory.
fn w11(rt: &tokio::runtime::Runtime, workload: &str, mode: Durability, runs: usize) {
    use agentweave::store::JournalStore;
    use futures::StreamExt;
    let store = InMemoryStore::new();
    let runner = Runner::builder(common::chain_tree(Kind::Fn, 10))
        .checkpoint_store(store.clone())
        .journal_store(store.clone())
        .durability(mode)
        .build();
    let prune = workload.ends_with("-pruned");
    let input = common::user_input();
    let start = Instant::now();
    let total = rt.block_on(async {
        let mut total = 0;
        for i in 0..runs {
            let id = format!("run-{i}");
            total += runner
                .run(RunRequest::new(input.iter().cloned()).checkpoint(&id))
                .count()
                .await;
            if prune {
                store.delete_journal(&id).await.expect("delete");
            }
        }
        total
    });
    let per_run = start.elapsed() / runs as u32;
    println!("{workload}: {runs} runs, {total} events, {per_run:?} per run");
}

/// W11's `Sync` case on SQLite: `runs` runs one after another (`w11sqlite-sync`) or `runs`
/// rounds of 8 runs at once (`w11sqlite-x8`).
fn w11_sqlite(rt: &tokio::runtime::Runtime, workload: &str, runs: usize) {
    use futures::StreamExt;
    let dir = std::env::temp_dir().join(format!("agentflow-profile-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let store = rt
        .block_on(agentweave::store::SqliteStore::open(dir.join("w11.db")))
        .expect("sqlite store");
    let runner = Runner::builder(common::chain_tree(Kind::Fn, 10))
        .checkpoint_store(store.clone())
        .journal_store(store)
        .durability(Durability::Sync)
        .build();
    let at_once = if workload.ends_with("x8") { 8 } else { 1 };
    let input = common::user_input();
    let start = Instant::now();
    let total = rt.block_on(async {
        let mut total = 0;
        for i in 0..runs {
            let round = (0..at_once).map(|k| {
                runner
                    .run(RunRequest::new(input.iter().cloned()).checkpoint(format!("run-{i}-{k}")))
                    .count()
            });
            total += futures::future::join_all(round)
                .await
                .into_iter()
                .sum::<usize>();
        }
        total
    });
    let per_run = start.elapsed() / runs as u32;
    println!("{workload}: {runs} rounds of {at_once}, {total} events, {per_run:?} per round");
    let _ = std::fs::remove_dir_all(&dir);
}
