//! First-event latency of a streamed turn through agentweave-server on Temporal (BENCHMARKS.md): a
//! server (in this process) runs a one-agent flow on a Temporal worker (a thread of this
//! process) against the dev server at `AGENTFLOW_TEMPORAL_ADDRESS`; each sample is a new
//! thread's turn over HTTP, timed from the request to the first frame of the model's streamed
//! reply (`chunk`) and to the first event, and to the turn's end. `SAMPLES` sets the count
//! (default 50). Prints the machine's load before and after.
//!
//! `cargo bench -p agentweave-server --features temporal --bench temporal_first_event`

use std::time::{Duration, Instant};

use agentweave_runtime::model::{ScriptStep, ScriptedModel};
use agentweave_runtime::{ChatModelAgent, FlowAgent, InMemoryStore};
use agentweave_server::temporal::TemporalExecutor;
use agentweave_server::{AppState, Auth};
use eventsource_stream::Eventsource;
use futures::StreamExt;

const TOKEN: &str = "bench-token-0123456789abcdef";

fn flow() -> FlowAgent {
    let model = ScriptedModel::rules().otherwise(ScriptStep::text(
        "hello there, how can I help you with your bill today",
    ));
    FlowAgent::new(ChatModelAgent::builder("desk", model).build().unwrap())
}

fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .trim()
        .to_owned()
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i].as_secs_f64() * 1000.0
}

fn main() {
    let address = std::env::var("AGENTFLOW_TEMPORAL_ADDRESS")
        .unwrap_or_else(|_| agentweave_temporal::DEFAULT_ADDRESS.into());
    let samples: usize = std::env::var("SAMPLES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(50);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async move {
        let client = match agentweave_temporal::connect(&address).await {
            Ok(c) => c,
            Err(e) => {
                eprintln!("skipped: no Temporal dev server ({e}); run .ci/temporal.sh");
                return;
            }
        };
        let queue = format!("bench-{}", agentweave_runtime::ids::unique_token());
        let name = format!("b{}", &agentweave_runtime::ids::unique_token()[..10]);
        agentweave_temporal::worker_flows().insert(name.clone(), flow());
        {
            let client = client.clone();
            let queue = queue.clone();
            std::thread::spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap();
                rt.block_on(agentweave_temporal::run_worker(client, &queue))
                    .unwrap();
            });
        }
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let state = AppState::builder(InMemoryStore::new())
            .flow(name.clone(), flow())
            .auth(Auth::bearer(TOKEN))
            .temporal(TemporalExecutor::new(client, queue, base.as_str()))
            .build()
            .unwrap();
        tokio::spawn(agentweave_server::serve(listener, state));
        let http = reqwest::Client::new();
        println!("load before: {}", load());
        let (mut chunk, mut event, mut end) = (Vec::new(), Vec::new(), Vec::new());
        for i in 0..samples + 3 {
            let thread = format!("s{i}-{}", &agentweave_runtime::ids::unique_token()[..8]);
            let started = Instant::now();
            let response = http
                .post(format!("{base}/v1/flows/{name}/threads/{thread}/turns"))
                .bearer_auth(TOKEN)
                .json(&serde_json::json!({ "message": "hi" }))
                .send()
                .await
                .unwrap();
            let mut frames = response.bytes_stream().eventsource();
            let (mut first_chunk, mut first_event) = (None, None);
            while let Some(frame) = frames.next().await {
                let frame = frame.unwrap();
                match frame.event.as_str() {
                    "chunk" if first_chunk.is_none() => first_chunk = Some(started.elapsed()),
                    "event" if first_event.is_none() => first_event = Some(started.elapsed()),
                    _ => {}
                }
            }
            if i >= 3 {
                chunk.push(first_chunk.expect("the reply streamed"));
                event.push(first_event.expect("an event"));
                end.push(started.elapsed());
            }
        }
        println!("load after: {}", load());
        for (what, all) in [
            ("first chunk", &mut chunk),
            ("first event", &mut event),
            ("turn end", &mut end),
        ] {
            all.sort();
            println!(
                "{what}: median {:.1} ms, p90 {:.1} ms, min {:.1} ms ({} turns)",
                percentile(all, 0.5),
                percentile(all, 0.9),
                percentile(all, 0.0),
                all.len()
            );
        }
    });
}
