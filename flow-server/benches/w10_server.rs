//! W10: the server. `cargo bench -p flow-server --bench w10_server`
//!
//! 1. Events per second over SSE to one client: one turn whose agent streams a reply of 10,000
//!    words, each word one `chunk` event; timed from sending the request to reading `done`.
//! 2. Turn latency with 1,000 concurrent SSE clients on the offline desk: 1,000 clients each
//!    send one turn (`Hi`, answered by `triage` in 8 streamed words) on a thread of their own,
//!    all at once, and read its events to `done`; rounds of 1,000, latency from sending to
//!    `done`, p50 and p99 over every turn.
//!
//! Server and clients run in this process on one multi-thread runtime (both cores), talking
//! HTTP/1.1 over loopback: the figures include the clients' own cost.

use std::time::{Duration, Instant};

use eventsource_stream::Eventsource;
use flow_runtime::{ChatModelAgent, FlowAgent, InMemoryStore, ScriptedModel, TurnRouting};
use flow_server::{AppState, Auth};
use futures::StreamExt;
use serde_json::json;

const TOKEN: &str = "bench-token-0123456789abcdef";

async fn serve(state: AppState) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(flow_server::serve(listener, state));
    format!("http://{addr}")
}

/// Runs one turn; returns the number of SSE events and the time to `done`.
async fn turn(client: &reqwest::Client, url: &str, message: &str) -> (usize, Duration) {
    let start = Instant::now();
    let response = client
        .post(url)
        .bearer_auth(TOKEN)
        .json(&json!({ "message": message }))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let mut events = response.bytes_stream().eventsource();
    let mut n = 0;
    while let Some(e) = events.next().await {
        let e = e.unwrap();
        n += 1;
        if e.event == "done" {
            return (n, start.elapsed());
        }
    }
    panic!("the turn ended without `done`");
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        // 1. Events per second to one client.
        let words = vec!["x"; 10_000].join(" ");
        let streamer = ChatModelAgent::builder("streamer", ScriptedModel::rules().otherwise(words.as_str()))
            .build()
            .unwrap();
        let state = AppState::builder(InMemoryStore::new())
            .flow("stream", FlowAgent::new(streamer))
            .auth(Auth::bearer(TOKEN))
            .turn_routing(TurnRouting::Root)
            .build()
            .unwrap();
        let base = serve(state).await;
        let client = reqwest::Client::new();
        let mut rates = Vec::new();
        for i in 0..7 {
            let url = format!("{base}/v1/flows/stream/threads/s{i}/turns");
            let (n, took) = turn(&client, &url, "go").await;
            if i >= 2 {
                rates.push(n as f64 / took.as_secs_f64());
            }
        }
        rates.sort_by(|a, b| a.partial_cmp(b).unwrap());
        println!(
            "W10 SSE to one client: {:.0} events/s (median of {} turns of 10,003 events; min {:.0}, max {:.0})",
            rates[rates.len() / 2],
            rates.len(),
            rates[0],
            rates[rates.len() - 1]
        );

        // 2. 1,000 concurrent clients on the offline desk.
        let state = AppState::builder(InMemoryStore::new())
            .flow("desk", flow_server::demo::desk())
            .auth(Auth::bearer(TOKEN))
            .turn_routing(TurnRouting::Root)
            .build()
            .unwrap();
        let base = serve(state).await;
        let clients = 1_000;
        let rounds = 5;
        let client = reqwest::Client::builder()
            .pool_max_idle_per_host(clients)
            .build()
            .unwrap();
        let mut latencies = Vec::new();
        let mut round_times = Vec::new();
        let mut events_per_turn = 0;
        for round in 0..=rounds {
            let start = Instant::now();
            let turns = (0..clients).map(|c| {
                let client = client.clone();
                let url = format!("{base}/v1/flows/desk/threads/r{round}-c{c}/turns");
                tokio::spawn(async move { turn(&client, &url, "Hi").await })
            });
            let results = futures::future::join_all(turns).await;
            let took = start.elapsed();
            // Round 0 warms up (and opens the 1,000 connections).
            if round > 0 {
                round_times.push(took);
                for r in results {
                    let (n, latency) = r.unwrap();
                    events_per_turn = n;
                    latencies.push(latency);
                }
            }
        }
        latencies.sort();
        let total: Duration = round_times.iter().sum();
        println!(
            "W10 {clients} concurrent SSE clients, {rounds} rounds, {events_per_turn} events a turn: p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms; {:.0} turns/s",
            percentile(&latencies, 0.50).as_secs_f64() * 1e3,
            percentile(&latencies, 0.99).as_secs_f64() * 1e3,
            latencies.last().unwrap().as_secs_f64() * 1e3,
            (clients * rounds) as f64 / total.as_secs_f64()
        );
    });
}
