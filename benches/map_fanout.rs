//! The `map` workflow's throughput: one map over 10,000 items (figures in BENCHMARKS.md,
//! "Fan-out").
//!
//! ```text
//! cargo bench --bench map_fanout
//! ```
//!
//! Each item runs a `FnAgent` that answers its item (no model: the figure is the framework's
//! cost per item, the branch's run path, its event, its result slot and the join in order),
//! at concurrency 1, 8 and 64, on a multi-thread runtime of two workers. `journaled` runs the
//! same map as a checkpointed run on an `InMemoryStore` with every step journaled
//! (`Durability::Sync`): each branch's answer is a journal step, as recovery needs it. One
//! iteration is one whole map of 10,000 items; items per second is 10,000 divided by it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use agentweave::store::InMemoryStore;
use agentweave::workflow::{Map, MapItems};
use agentweave::{Durability, FlowAgent, FnAgent, RunRequest, Runner};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use futures::StreamExt;

const ITEMS: usize = 10_000;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

/// The map of `ITEMS` items at `concurrency`, each answered by an echoing `FnAgent`.
fn map(concurrency: usize) -> FlowAgent {
    let echo = FlowAgent::new(FnAgent::new("echo", |cx, input| async move {
        let item = input.messages.last().map(|m| m.content.clone());
        cx.say(item.unwrap_or_default());
        Ok(())
    }));
    Map::new("fan", MapItems::list(0..ITEMS as u64))
        .concurrency(concurrency)
        .with_sub_agents([echo])
        .expect("a map of one agent")
}

/// Times `iters` maps run by `runner` (checkpointed under fresh ids when `checkpointed`),
/// checking the last one's event count once.
fn time_maps(
    rt: &tokio::runtime::Runtime,
    runner: &Runner,
    checkpointed: bool,
    next: &AtomicU64,
    iters: u64,
) -> Duration {
    rt.block_on(async {
        let start = Instant::now();
        for _ in 0..iters {
            let mut request = RunRequest::new([agentweave::Message::user("go")]);
            if checkpointed {
                let id = format!("map-{}", next.fetch_add(1, Ordering::Relaxed));
                request = request.checkpoint(&id);
            }
            let events = runner.run(request).count().await;
            // One answer per item and the map's own output, at least.
            assert!(
                events > ITEMS,
                "a map of {ITEMS} items made {events} events"
            );
        }
        start.elapsed()
    })
}

fn fanout(c: &mut Criterion) {
    let rt = runtime();
    let next = AtomicU64::new(0);
    let mut group = c.benchmark_group("map_fanout");
    group.sample_size(10);
    group.throughput(criterion::Throughput::Elements(ITEMS as u64));
    for concurrency in [1, 8, 64] {
        let runner = Runner::new(map(concurrency));
        group.bench_function(BenchmarkId::new("in_memory", concurrency), |b| {
            b.iter_custom(|iters| time_maps(&rt, &runner, false, &next, iters))
        });
    }
    let store = InMemoryStore::new();
    let runner = Runner::builder(map(8))
        .checkpoint_store(store.clone())
        .journal_store(store)
        .durability(Durability::Sync)
        .build();
    group.bench_function(BenchmarkId::new("journaled", 8), |b| {
        b.iter_custom(|iters| time_maps(&rt, &runner, true, &next, iters))
    });
    group.finish();
}

criterion_group!(benches, fanout);
criterion_main!(benches);
