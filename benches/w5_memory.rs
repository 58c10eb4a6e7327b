//! W5, memory: N concurrent W1 sessions on one tokio runtime, all held mid-run at once, with
//! a counting global allocator. Prints the heap each live session holds, for several N: flat
//! memory per session means the same figure for every N.
//!
//! ```text
//! cargo bench --bench w5_memory
//! ```
//!
//! Each session runs W1 (root -> refund); refund stops at a gate before it answers (the
//! `FnAgent` awaits it in its body, the `ChatModelAgent`'s model awaits it before replying),
//! so every session's tree state, event streams and recorded events are alive at the same
//! time. When all N are at the gate the live heap is read; then the gate opens and every
//! session finishes. Numbers are bytes requested from the allocator (what the program holds,
//! not allocator overhead); the process's peak RSS is printed too.

mod common;
#[path = "common/counting.rs"]
mod counting;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use agentweave::model::{ChatModel, ChatRequest, ModelError, ModelStream, ScriptStep};
use agentweave::prelude::*;
use agentweave::{async_trait, Message};
use common::Kind;
use counting::{LIVE, PEAK};
use tokio::sync::Semaphore;

/// Sessions wait here; counts those that arrived.
#[derive(Clone)]
struct Gate {
    open: Arc<Semaphore>,
    arrived: Arc<AtomicUsize>,
}

impl Gate {
    fn new() -> Self {
        Gate {
            open: Arc::new(Semaphore::new(0)),
            arrived: Arc::new(AtomicUsize::new(0)),
        }
    }

    async fn pass(&self) {
        self.arrived.fetch_add(1, Ordering::SeqCst);
        self.open.acquire().await.expect("gate").forget();
    }
}

/// A model that waits at the gate, then answers as the scripted model does.
struct GatedModel {
    gate: Gate,
    inner: agentweave::model::ScriptedModel,
}

#[async_trait]
impl ChatModel for GatedModel {
    fn model_name(&self) -> &str {
        "gated"
    }
    async fn generate(&self, request: &ChatRequest) -> Result<Message, ModelError> {
        self.gate.pass().await;
        self.inner.generate(request).await
    }
    async fn stream(&self, request: &ChatRequest) -> Result<ModelStream, ModelError> {
        self.gate.pass().await;
        self.inner.stream(request).await
    }
}

fn gated_refund(kind: Kind, gate: &Gate) -> FlowAgent {
    let gate = gate.clone();
    match kind {
        Kind::Fn => FlowAgent::new(FnAgent::new("refund", move |cx, _| {
            let gate = gate.clone();
            async move {
                gate.pass().await;
                cx.say(common::ANSWER);
                Ok(())
            }
        })),
        Kind::Chat => {
            let model = GatedModel {
                gate,
                inner: common::model(ScriptStep::text(common::ANSWER)),
            };
            let agent = ChatModelAgent::builder("refund", model)
                .instruction("You are refund.")
                .build()
                .expect("agent");
            FlowAgent::new(agent)
        }
    }
}

fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Runs `n` concurrent sessions; returns (live bytes per session at the gate, peak bytes per
/// session over the whole run).
fn measure(rt: &tokio::runtime::Runtime, kind: Kind, n: usize) -> (f64, f64) {
    let gate = Gate::new();
    let runner = Runner::new(common::w1_tree_with_refund(kind, gated_refund(kind, &gate)));
    let input: Arc<[agentweave::message::MessageRef]> = common::user_input().into();
    rt.block_on(async {
        // Let the runtime settle, then take the baseline.
        tokio::task::yield_now().await;
        let base = LIVE.load(Ordering::SeqCst);
        PEAK.store(base, Ordering::SeqCst);
        let tasks: Vec<_> = (0..n)
            .map(|_| {
                let runner = runner.clone();
                let input = Arc::clone(&input);
                tokio::spawn(async move { common::run_once(&runner, &input).await })
            })
            .collect();
        while gate.arrived.load(Ordering::SeqCst) < n {
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        }
        let at_gate = LIVE.load(Ordering::SeqCst).saturating_sub(base);
        gate.open.add_permits(n);
        for t in tasks {
            assert_eq!(t.await.expect("session"), 3, "root: 2 events, refund: 1");
        }
        let peak = PEAK.load(Ordering::SeqCst).saturating_sub(base);
        (at_gate as f64 / n as f64, peak as f64 / n as f64)
    })
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    println!("W5 memory: N concurrent W1 sessions held mid-run (refund waiting), heap bytes");
    println!("| agents | N | live heap per session at the gate (B) | peak heap per session (B) |");
    println!("| --- | --- | --- | --- |");
    for kind in Kind::ALL {
        // Warm-up: first-use allocations of the runtime and of lazily built statics.
        measure(&rt, kind, 100);
        for n in [100, 1_000, 10_000] {
            let (live, peak) = measure(&rt, kind, n);
            println!("| {} | {n} | {live:.0} | {peak:.0} |", kind.label());
        }
    }
    if let Some(kib) = peak_rss_kib() {
        println!(
            "process peak RSS: {:.1} MiB (all runs above)",
            kib as f64 / 1024.0
        );
    }
}
