//! Criterion benches of the workloads W1–W5 (BENCHMARKS.md: their "Performance budget", the
//! figures and how they compare with the anchors).
//!
//! ```text
//! cargo bench --bench workloads                 # everything
//! cargo bench --bench workloads -- w1_transfer  # one group
//! ```
//!
//! Each timed batch runs inside one `block_on` of a current-thread tokio runtime, so a figure
//! is the cost of a run, not of entering the runtime. W5 uses a multi-thread runtime.

mod common;

use std::time::{Duration, Instant};

use agentweave::prelude::*;
use common::Kind;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};

fn current_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

/// Times `iters` sequential runs of `runner` on `input`.
fn time_runs(
    rt: &tokio::runtime::Runtime,
    runner: &Runner,
    input: &[agentweave::message::MessageRef],
    iters: u64,
) -> Duration {
    rt.block_on(async {
        let start = Instant::now();
        for _ in 0..iters {
            std::hint::black_box(common::run_once(runner, input).await);
        }
        start.elapsed()
    })
}

/// W1: one transfer, root -> refund.
fn w1_transfer(c: &mut Criterion) {
    let rt = current_thread();
    let mut group = c.benchmark_group("w1_transfer");
    let input = common::user_input();
    for kind in Kind::ALL {
        let runner = Runner::new(common::w1_tree(kind));
        rt.block_on(common::verify(&runner, &input, "refund"));
        group.bench_function(kind.label(), |b| {
            b.iter_custom(|iters| time_runs(&rt, &runner, &input, iters))
        });
    }
    // The same tree declared with `#[agent]` fns and `flow!`.
    let runner = Runner::new(common::dsl::w1_tree());
    rt.block_on(common::verify(&runner, &input, "refund"));
    group.bench_function("dsl", |b| {
        b.iter_custom(|iters| time_runs(&rt, &runner, &input, iters))
    });
    group.finish();
}

/// W2: W1 with H prior messages in the input.
fn w2_history(c: &mut Criterion) {
    let rt = current_thread();
    let mut group = c.benchmark_group("w2_history");
    for kind in Kind::ALL {
        let runner = Runner::new(common::w1_tree(kind));
        for h in [10, 100, 1000] {
            let input = common::history(h);
            rt.block_on(common::verify(&runner, &input, "refund"));
            group.bench_with_input(BenchmarkId::new(kind.label(), h), &input, |b, input| {
                b.iter_custom(|iters| time_runs(&rt, &runner, input, iters))
            });
        }
    }
    group.finish();
}

/// W3: one agent streaming 10,000 chunks to the caller; the session forks the stream.
fn w3_stream(c: &mut Criterion) {
    const N: usize = 10_000;
    let rt = current_thread();
    let mut group = c.benchmark_group("w3_stream");
    group.throughput(Throughput::Elements(N as u64));
    let input = common::user_input();
    for kind in Kind::ALL {
        let runner = Runner::builder(common::streamer(kind, N))
            .streaming(true)
            .build();
        let got = rt.block_on(common::stream_once(&runner, &input));
        assert_eq!(got, N, "the caller must receive every chunk");
        group.bench_function(kind.label(), |b| {
            b.iter_custom(|iters| {
                rt.block_on(async {
                    let start = Instant::now();
                    for _ in 0..iters {
                        std::hint::black_box(common::stream_once(&runner, &input).await);
                    }
                    start.elapsed()
                })
            })
        });
    }
    group.finish();
}

/// W4: a chain of 10 agents, each transferring to its child; the last answers.
fn w4_chain(c: &mut Criterion) {
    const DEPTH: usize = 10;
    let rt = current_thread();
    let mut group = c.benchmark_group("w4_chain");
    let input = common::user_input();
    for kind in Kind::ALL {
        let runner = Runner::new(common::chain_tree(kind, DEPTH));
        rt.block_on(common::verify(
            &runner,
            &input,
            &format!("agent{}", DEPTH - 1),
        ));
        group.bench_function(BenchmarkId::new(kind.label(), DEPTH), |b| {
            b.iter_custom(|iters| time_runs(&rt, &runner, &input, iters))
        });
    }
    group.finish();
}

/// W5: 10,000 concurrent W1 sessions on one multi-thread tokio runtime (sessions/s).
/// Memory per session is measured by the `w5_memory` bench.
fn w5_concurrent(c: &mut Criterion) {
    const SESSIONS: usize = 10_000;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let mut group = c.benchmark_group("w5_concurrent");
    group.throughput(Throughput::Elements(SESSIONS as u64));
    group.sample_size(10);
    let input: std::sync::Arc<[agentweave::message::MessageRef]> = common::user_input().into();
    for kind in Kind::ALL {
        let runner = Runner::new(common::w1_tree(kind));
        group.bench_function(BenchmarkId::new(kind.label(), SESSIONS), |b| {
            b.iter_custom(|iters| {
                rt.block_on(async {
                    let start = Instant::now();
                    for _ in 0..iters {
                        let tasks: Vec<_> = (0..SESSIONS)
                            .map(|_| {
                                let runner = runner.clone();
                                let input = std::sync::Arc::clone(&input);
                                tokio::spawn(async move { common::run_once(&runner, &input).await })
                            })
                            .collect();
                        for t in tasks {
                            assert!(t.await.expect("session task") > 0);
                        }
                    }
                    start.elapsed()
                })
            })
        });
    }
    group.finish();
}

criterion_group!(
    benches,
    w1_transfer,
    w2_history,
    w3_stream,
    w4_chain,
    w5_concurrent
);
criterion_main!(benches);
