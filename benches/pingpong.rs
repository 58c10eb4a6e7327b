//! A transfer loop: `ping` and `pong` hand the run to each other N times (the transfer limit
//! raised to N), then the last one interrupts and the run is checkpointed. Prints, for each N,
//! the wall time, the peak heap (a counting global allocator: bytes requested, not RSS) and
//! the checkpoint's size. Linear costs give the same time, memory and bytes per hop at every N.
//!
//! ```text
//! cargo bench --bench pingpong                    # 10,000, 50,000 and 100,000 hops
//! cargo bench --bench pingpong -- 2000 5000 10000 # hop counts of your choice
//! ```

#[path = "common/counting.rs"]
mod counting;

use std::sync::atomic::Ordering;
use std::time::Instant;

use agentweave::RunRequest;
use agentweave::{
    run::RunLimits, set_sub_agents, store::CheckpointStore, store::InMemoryStore, FlowAgent,
    FnAgent, Message, Runner,
};
use counting::{LIVE, PEAK};
use futures::StreamExt;

/// `name` transfers to `to` until its run path holds `hops + 1` agents, then interrupts.
fn player(name: &'static str, to: &'static str, hops: usize) -> FlowAgent {
    FlowAgent::new(FnAgent::new(name, move |cx, _| async move {
        if cx.run_path().len() > hops {
            cx.interrupt(serde_json::json!({"hops": hops}));
        } else {
            cx.transfer(to);
        }
        Ok(())
    }))
}

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.replace('_', "").parse().ok())
        .collect();
    let counts = if args.is_empty() {
        vec![10_000, 50_000, 100_000]
    } else {
        args
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    println!("| hops | seconds | peak heap MB | heap bytes per hop | checkpoint MB | checkpoint bytes per hop |");
    println!("| ---: | ---: | ---: | ---: | ---: | ---: |");
    for hops in counts {
        let tree = set_sub_agents(player("ping", "pong", hops), [player("pong", "ping", hops)])
            .expect("tree");
        let store = InMemoryStore::new();
        let runner = Runner::builder(tree)
            .limits(
                RunLimits::default()
                    .max_transfers(hops)
                    .max_events(4 * hops),
            )
            .checkpoint_store(store.clone())
            .build();
        let base = LIVE.load(Ordering::Relaxed);
        PEAK.store(base, Ordering::Relaxed);
        let start = Instant::now();
        let events = rt.block_on(async {
            runner
                .run(RunRequest::new([Message::user("serve")]).checkpoint("pingpong"))
                .count()
                .await
        });
        let seconds = start.elapsed().as_secs_f64();
        let peak = PEAK.load(Ordering::Relaxed) - base;
        let bytes = rt
            .block_on(store.get("pingpong"))
            .expect("store")
            .expect("a checkpoint")
            .len();
        assert_eq!(events, 2 * hops + 1, "two events a hop, then the interrupt");
        println!(
            "| {hops} | {seconds:.2} | {:.1} | {} | {:.1} | {} |",
            peak as f64 / 1e6,
            peak / hops,
            bytes as f64 / 1e6,
            bytes / hops
        );
    }
}
