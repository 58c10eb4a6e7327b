//! A bench-like driver for profilers: runs one workload many times with nothing else around
//! it, so `valgrind --tool=callgrind` (or `perf`) sees only that workload.
//!
//! ```text
//! cargo bench --bench profile --no-run      # prints the binary's path
//! valgrind --tool=callgrind target/release/deps/profile-HASH w1-fn 20000
//! ```
//!
//! Workloads: `w1-fn`, `w1-chat`, `w2-fn-H`, `w2-chat-H` (H prior messages), `w3-fn`,
//! `w3-chat` (10,000 chunks each), `w4-fn`, `w4-chat` (depth 10). Prints the instructions-free
//! wall time per run as a sanity check; compare instruction counts, not this, under load.

mod common;

use std::time::Instant;

use agentflow::prelude::*;
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
    let (runner, input, stream) = match w {
        "w1" | "w2" => (
            Runner::new(common::w1_tree(kind)),
            common::history(h),
            false,
        ),
        "w3" => (
            Runner::new(common::streamer(kind, 10_000)).streaming(true),
            common::user_input(),
            true,
        ),
        "w4" => (
            Runner::new(common::chain_tree(kind, 10)),
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
