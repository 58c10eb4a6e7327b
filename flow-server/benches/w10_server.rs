//! W10: the server. `cargo bench -p agentweave-server --bench w10_server` (BENCHMARKS.md, W10).
//!
//! 1. Events per second over SSE to one client: one turn whose agent streams a reply of 10,000
//!    words, each word one `chunk` event; timed from sending the request to reading `done`.
//! 2. Turn latency with 1,000 concurrent SSE clients on the offline desk: 1,000 clients each
//!    send one turn (`Hi`, answered by `triage` in 8 streamed words) on a thread of their own,
//!    all at once, and read its events to the end of the response; rounds of 1,000, latency
//!    from sending to the end, p50 and p99 over every turn. Run twice: server and clients in
//!    this process (both on one multi-thread runtime), then the server in a child process (this
//!    binary again, `W10_SERVE=1`), so that the server's own CPU time per turn can be read from
//!    `/proc/PID/stat`.
//! 3. The same 1,000 clients paced: each sends its next turn at a steady rate, so that the
//!    server runs at about half its capacity; the latency of a turn then is its service time
//!    and not its wait behind 999 others.
//! 4. Background runs (the server in its own process): a run's start (`POST .../runs` answers
//!    its id) and its first events read by attaching (`GET .../runs/{run}/stream`), one run at a
//!    time; one run of 1,000 streamed words read by 1,000 attached clients at once (events/s);
//!    and reconnecting to an ended run after its 500th event (`Last-Event-ID`), the cost of one
//!    reconnect.
//!
//! Against another server (bench/w10/adk_api_server.sh): `W10_URL=http://HOST:PORT` and
//! `W10_TARGET=adk` (Google ADK's `/run_sse`) or `agentweave`; `W10_SERVER_PID` to read the
//! server's CPU time; `W10_ROUNDS`, `W10_CLIENTS` to change the load.

use std::time::{Duration, Instant};

use agentweave_runtime::{ChatModelAgent, FlowAgent, InMemoryStore, ScriptedModel, TurnRouting};
use agentweave_server::{AppState, Auth};
use futures::StreamExt;
use serde_json::json;

const TOKEN: &str = "bench-token-0123456789abcdef";

/// Which HTTP API the load generator speaks.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Target {
    /// `POST /v1/flows/desk/threads/{thread}/turns`, `{"message"}`, bearer token.
    Agentflow,
    /// Google ADK's API server: `POST /run_sse` with `app_name`, `user_id`, `session_id`,
    /// `new_message`, `streaming: true` (sessions created on first use: `--auto_create_session`).
    Adk,
}

/// A flow whose one agent streams `words` words, each a `chunk` event.
fn streamer(words: usize) -> FlowAgent {
    let text = vec!["x"; words].join(" ");
    let agent = ChatModelAgent::builder(
        "streamer",
        ScriptedModel::rules().otherwise(agentweave_runtime::ScriptStep::text(text)),
    )
    .build()
    .unwrap();
    FlowAgent::new(agent)
}

/// Words of the run that part 4 streams to 1,000 attached clients.
const FAN_OUT_WORDS: usize = 1_000;

fn desk_state() -> AppState {
    AppState::builder(InMemoryStore::new())
        .flow("desk", agentweave_server::demo::desk())
        .flow("fanout", streamer(FAN_OUT_WORDS))
        .auth(Auth::bearer(TOKEN))
        .turn_routing(TurnRouting::Root)
        .build()
        .unwrap()
}

async fn serve(state: AppState) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(agentweave_server::serve(listener, state));
    format!("http://{addr}")
}

/// Runs one turn on `thread`; returns the number of SSE events and the time to the end of the
/// response.
async fn turn(
    client: &reqwest::Client,
    base: &str,
    target: Target,
    thread: &str,
    message: &str,
) -> (usize, Duration) {
    let start = Instant::now();
    let request = match target {
        Target::Agentflow => client
            .post(format!("{base}/v1/flows/desk/threads/{thread}/turns"))
            .bearer_auth(TOKEN)
            .json(&json!({ "message": message })),
        Target::Adk => client.post(format!("{base}/run_sse")).json(&json!({
            "app_name": "desk",
            "user_id": "bench",
            "session_id": thread,
            "new_message": { "role": "user", "parts": [{ "text": message }] },
            "streaming": true,
        })),
    };
    let response = request.send().await.unwrap();
    assert_eq!(response.status(), 200, "turn status");
    let mut body = response.bytes_stream();
    // Events end with a blank line; the response ends after the last one.
    let mut n = 0;
    let mut tail = Vec::new();
    while let Some(bytes) = body.next().await {
        let bytes = bytes.unwrap();
        tail.extend_from_slice(&bytes);
        while let Some(i) = tail.windows(2).position(|w| w == b"\n\n") {
            if !tail[..i].starts_with(b":") {
                n += 1;
            }
            tail.drain(..i + 2);
        }
    }
    (n, start.elapsed())
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

/// CPU time (user + system) of process `pid` so far (`/proc/PID/stat`, in clock ticks of
/// 10 ms).
fn cpu_time(pid: &str) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name (which is in parentheses and may hold spaces).
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
    };
    // utime and stime are the 14th and 15th fields; `rest` starts at the 3rd.
    Duration::from_millis((ticks(11) + ticks(12)) * 10)
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

struct Load<'a> {
    base: &'a str,
    target: Target,
    clients: usize,
    rounds: usize,
    /// The server's pid, to read its CPU time (`self` when it runs in this process).
    server_pid: Option<&'a str>,
    label: &'a str,
}

/// Rounds of `clients` concurrent turns, each on a new thread; prints p50/p99 and turns/s.
async fn concurrent(load: Load<'_>) {
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(load.clients)
        .build()
        .unwrap();
    let mut latencies = Vec::new();
    let mut busy = Duration::ZERO;
    let mut events_per_turn = 0;
    let mut cpu = Duration::ZERO;
    let mut client_cpu = Duration::ZERO;
    let run = std::process::id().to_string();
    for round in 0..=load.rounds {
        let server_before = load.server_pid.map(cpu_time);
        let self_before = cpu_time("self");
        let start = Instant::now();
        let turns = (0..load.clients).map(|c| {
            let client = client.clone();
            let base = load.base.to_owned();
            let thread = format!("w{run}-r{round}-c{c}");
            let target = load.target;
            tokio::spawn(async move { turn(&client, &base, target, &thread, "Hi").await })
        });
        let results = futures::future::join_all(turns).await;
        let took = start.elapsed();
        // Round 0 warms up (and opens the connections).
        if round > 0 {
            busy += took;
            if let (Some(pid), Some(before)) = (load.server_pid, server_before) {
                cpu += cpu_time(pid).saturating_sub(before);
            }
            client_cpu += cpu_time("self").saturating_sub(self_before);
            for r in results {
                let (n, latency) = r.unwrap();
                events_per_turn = n;
                latencies.push(latency);
            }
        }
    }
    latencies.sort();
    let turns = load.clients * load.rounds;
    let per_turn = |d: Duration| d.as_secs_f64() * 1e6 / turns as f64;
    let cpu_note = match load.server_pid {
        Some("self") => format!(
            "; CPU {:.0} µs a turn (server and clients, one process)",
            per_turn(client_cpu)
        ),
        Some(_) => format!(
            "; server CPU {:.0} µs a turn, load generator {:.0} µs a turn",
            per_turn(cpu),
            per_turn(client_cpu)
        ),
        None => String::new(),
    };
    println!(
        "W10 {} — {} concurrent SSE clients, {} rounds, {events_per_turn} events a turn: \
         p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms; {:.0} turns/s{cpu_note}; load {}",
        load.label,
        load.clients,
        load.rounds,
        percentile(&latencies, 0.50).as_secs_f64() * 1e3,
        percentile(&latencies, 0.99).as_secs_f64() * 1e3,
        latencies.last().unwrap().as_secs_f64() * 1e3,
        turns as f64 / busy.as_secs_f64(),
        loadavg(),
    );
}

/// `clients` clients each sending a turn every `clients / rate` seconds (staggered), for
/// `seconds`; prints p50/p99.
async fn paced(base: &str, target: Target, clients: usize, rate: f64, seconds: f64, label: &str) {
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(clients)
        .build()
        .unwrap();
    let period = Duration::from_secs_f64(clients as f64 / rate);
    let start = tokio::time::Instant::now() + Duration::from_millis(200);
    let end = start + Duration::from_secs_f64(seconds);
    let run = std::process::id();
    let tasks = (0..clients).map(|c| {
        let client = client.clone();
        let base = base.to_owned();
        tokio::spawn(async move {
            let mut ticks =
                tokio::time::interval_at(start + period.mul_f64(c as f64 / clients as f64), period);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            let mut out = Vec::new();
            let mut i = 0;
            loop {
                let at = ticks.tick().await;
                if at >= end {
                    break;
                }
                let thread = format!("p{run}-c{c}-{i}");
                i += 1;
                out.push(turn(&client, &base, target, &thread, "Hi").await.1);
            }
            out
        })
    });
    let mut latencies: Vec<Duration> = futures::future::join_all(tasks)
        .await
        .into_iter()
        .flat_map(|r| r.unwrap())
        .collect();
    latencies.sort();
    println!(
        "W10 {label} — {clients} SSE clients paced at {rate:.0} turns/s in all for {seconds:.0} s \
         ({} turns): p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms; load {}",
        latencies.len(),
        percentile(&latencies, 0.50).as_secs_f64() * 1e3,
        percentile(&latencies, 0.99).as_secs_f64() * 1e3,
        latencies.last().unwrap().as_secs_f64() * 1e3,
        loadavg(),
    );
}

/// What a reader of one SSE response saw.
struct Read {
    /// Frames that are not comments.
    frames: usize,
    /// From `start` to the first frame.
    first: Option<Duration>,
    /// From `start` to the first `chunk` frame (the model's first words).
    first_chunk: Option<Duration>,
}

/// Reads an SSE response to its end.
async fn read_sse(response: reqwest::Response, start: Instant) -> Read {
    assert_eq!(response.status(), 200, "stream status");
    let mut body = response.bytes_stream();
    let mut read = Read {
        frames: 0,
        first: None,
        first_chunk: None,
    };
    let mut tail = Vec::new();
    while let Some(bytes) = body.next().await {
        tail.extend_from_slice(&bytes.unwrap());
        while let Some(i) = tail.windows(2).position(|w| w == b"\n\n") {
            let frame = &tail[..i];
            if !frame.starts_with(b":") {
                read.frames += 1;
                read.first.get_or_insert_with(|| start.elapsed());
                if read.first_chunk.is_none() && frame.windows(13).any(|w| w == b"event: chunk\n") {
                    read.first_chunk = Some(start.elapsed());
                }
            }
            tail.drain(..i + 2);
        }
    }
    read
}

/// Starts a background run of `flow` on `thread`; returns its id.
async fn start_run(client: &reqwest::Client, base: &str, flow: &str, thread: &str) -> String {
    let response = client
        .post(format!("{base}/v1/flows/{flow}/threads/{thread}/runs"))
        .bearer_auth(TOKEN)
        .json(&json!({ "message": "Hi" }))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 202, "run start status");
    let body: serde_json::Value = response.json().await.unwrap();
    body["run_id"].as_str().expect("a run id").to_owned()
}

/// Attaches to a run's events, after `last` if given.
async fn attach(
    client: &reqwest::Client,
    base: &str,
    flow: &str,
    thread: &str,
    run: &str,
    last: Option<usize>,
) -> reqwest::Response {
    let mut request = client
        .get(format!(
            "{base}/v1/flows/{flow}/threads/{thread}/runs/{run}/stream"
        ))
        .bearer_auth(TOKEN);
    if let Some(last) = last {
        request = request.header("Last-Event-ID", last.to_string());
    }
    request.send().await.unwrap()
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Part 4: background runs against the server in its own process (`pid`).
async fn background_runs(base: &str, pid: &str) {
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(1_000)
        .build()
        .unwrap();
    let me = std::process::id();

    // 4a. One run at a time on the desk: the start answered, then its first events attached.
    let runs = env_usize("W10_RUN_STARTS", 500);
    let (mut answered, mut first, mut first_chunk, mut streamed) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let cpu_before = cpu_time(pid);
    for i in 0..runs + 20 {
        let thread = format!("b{me}-{i}");
        let start = Instant::now();
        let run = start_run(&client, base, "desk", &thread).await;
        let started = start.elapsed();
        let read = read_sse(
            attach(&client, base, "desk", &thread, &run, None).await,
            start,
        )
        .await;
        // A run started and streamed in one request (`"stream": true`).
        let thread = format!("s{me}-{i}");
        let start = Instant::now();
        let response = client
            .post(format!("{base}/v1/flows/desk/threads/{thread}/runs"))
            .bearer_auth(TOKEN)
            .json(&json!({ "message": "Hi", "stream": true }))
            .send()
            .await
            .unwrap();
        let direct = read_sse(response, start).await;
        // The first 20 warm up.
        if i >= 20 {
            answered.push(started);
            first.push(read.first.unwrap());
            first_chunk.push(read.first_chunk.unwrap());
            streamed.push(direct.first.unwrap());
        }
    }
    let cpu = cpu_time(pid).saturating_sub(cpu_before);
    for v in [&mut answered, &mut first, &mut first_chunk, &mut streamed] {
        v.sort();
    }
    let p = |v: &[Duration]| {
        format!(
            "p50 {:.3} ms, p99 {:.3} ms",
            ms(percentile(v, 0.5)),
            ms(percentile(v, 0.99))
        )
    };
    println!(
        "W10 background runs, one at a time ({runs} runs): start answered {}; first event \
         (start + attach) {}; first chunk {}; started with \"stream\": true, first event {}; \
         server CPU {:.0} µs a run (both kinds); load {}",
        p(&answered),
        p(&first),
        p(&first_chunk),
        p(&streamed),
        cpu.as_secs_f64() * 1e6 / (2 * (runs + 20)) as f64,
        loadavg(),
    );

    // 4b. One run of 1,000 words read by 1,000 clients attached at once.
    let clients = env_usize("W10_CLIENTS", 1_000);
    let rounds = env_usize("W10_ROUNDS", 5).max(1);
    let mut rates = Vec::new();
    let mut cpu = Duration::ZERO;
    let mut last_run = None;
    for round in 0..=rounds {
        let thread = format!("f{me}-{round}");
        let cpu_before = cpu_time(pid);
        let start = Instant::now();
        let run = start_run(&client, base, "fanout", &thread).await;
        let readers = (0..clients).map(|_| {
            let client = client.clone();
            let (base, thread, run) = (base.to_owned(), thread.clone(), run.clone());
            tokio::spawn(async move {
                let response = attach(&client, &base, "fanout", &thread, &run, None).await;
                read_sse(response, Instant::now()).await.frames
            })
        });
        let frames: usize = futures::future::join_all(readers)
            .await
            .into_iter()
            .map(|r| r.unwrap())
            .sum();
        let took = start.elapsed();
        assert_eq!(
            frames,
            clients * (FAN_OUT_WORDS + 3),
            "every client reads every event"
        );
        if round > 0 {
            rates.push(frames as f64 / took.as_secs_f64());
            cpu += cpu_time(pid).saturating_sub(cpu_before);
        }
        last_run = Some((thread, run));
    }
    rates.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let events = (rounds * clients * (FAN_OUT_WORDS + 3)) as f64;
    println!(
        "W10 background runs, one run of {} events read by {clients} attached clients: \
         {:.0} events/s (median of {rounds} rounds; min {:.0}, max {:.0}); server CPU {:.2} µs \
         an event delivered; load {}",
        FAN_OUT_WORDS + 3,
        rates[rates.len() / 2],
        rates[0],
        rates[rates.len() - 1],
        cpu.as_secs_f64() * 1e6 / events,
        loadavg(),
    );

    // 4c. Reconnecting to the ended run after its 500th event, one client at a time.
    let (thread, run) = last_run.unwrap();
    let reconnects = env_usize("W10_RECONNECTS", 1_000);
    let mut times = Vec::new();
    let cpu_before = cpu_time(pid);
    for _ in 0..reconnects {
        let start = Instant::now();
        let response = attach(&client, base, "fanout", &thread, &run, Some(500)).await;
        let read = read_sse(response, start).await;
        assert_eq!(
            read.frames,
            FAN_OUT_WORDS + 3 - 500,
            "the events after the 500th"
        );
        times.push(start.elapsed());
    }
    let cpu = cpu_time(pid).saturating_sub(cpu_before);
    times.sort();
    println!(
        "W10 background runs, {reconnects} reconnects with Last-Event-ID 500 to an ended run \
         ({} events each): {}; server CPU {:.0} µs a reconnect; load {}",
        FAN_OUT_WORDS + 3 - 500,
        p(&times),
        cpu.as_secs_f64() * 1e6 / reconnects as f64,
        loadavg(),
    );
}

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    // The server half of part 2, in a child process: serves the desk, prints its address, and
    // stops when its standard input closes.
    if std::env::var_os("W10_SERVE").is_some() {
        runtime.block_on(async {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            println!("http://{}", listener.local_addr().unwrap());
            agentweave_server::serve_until(listener, desk_state(), async {
                let _ = tokio::task::spawn_blocking(|| {
                    std::io::Read::read_to_end(&mut std::io::stdin(), &mut Vec::new())
                })
                .await;
            })
            .await
            .unwrap();
        });
        return;
    }
    let clients = env_usize("W10_CLIENTS", 1_000);
    let rounds = env_usize("W10_ROUNDS", 5);
    if let Ok(url) = std::env::var("W10_URL") {
        let target = match std::env::var("W10_TARGET").as_deref() {
            Ok("adk") => Target::Adk,
            _ => Target::Agentflow,
        };
        let pid = std::env::var("W10_SERVER_PID").ok();
        let label = format!("{target:?} at {url}");
        runtime.block_on(async {
            concurrent(Load {
                base: &url,
                target,
                clients,
                rounds,
                server_pid: pid.as_deref(),
                label: &label,
            })
            .await;
            if let Ok(rate) = std::env::var("W10_PACED_RATE") {
                let rate: f64 = rate.parse().expect("W10_PACED_RATE: turns per second");
                paced(&url, target, clients, rate, 10.0, &label).await;
            }
        });
        return;
    }
    runtime.block_on(async {
        // 1. Events per second to one client.
        let state = AppState::builder(InMemoryStore::new())
            .flow("stream", streamer(10_000))
            .auth(Auth::bearer(TOKEN))
            .turn_routing(TurnRouting::Root)
            .build()
            .unwrap();
        let base = serve(state).await;
        let client = reqwest::Client::new();
        let mut rates = Vec::new();
        for i in 0..7 {
            let url = format!("{base}/v1/flows/stream/threads/s{i}/turns");
            let start = Instant::now();
            let response = client
                .post(&url)
                .bearer_auth(TOKEN)
                .json(&json!({ "message": "go" }))
                .send()
                .await
                .unwrap();
            let mut events = eventsource_stream::Eventsource::eventsource(response.bytes_stream());
            let mut n = 0;
            while let Some(e) = events.next().await {
                e.unwrap();
                n += 1;
            }
            if i >= 2 {
                rates.push(n as f64 / start.elapsed().as_secs_f64());
            }
        }
        rates.sort_by(|a, b| a.partial_cmp(b).unwrap());
        println!(
            "W10 SSE to one client: {:.0} events/s (median of {} turns of 10,003 events; min {:.0}, max {:.0}); load {}",
            rates[rates.len() / 2],
            rates.len(),
            rates[0],
            rates[rates.len() - 1],
            loadavg(),
        );

        // 2a. 1,000 concurrent clients, the server in this process.
        let base = serve(desk_state()).await;
        concurrent(Load {
            base: &base,
            target: Target::Agentflow,
            clients,
            rounds,
            server_pid: Some("self"),
            label: "server in the bench's process",
        })
        .await;
    });

    // 2b. The server in a child process.
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .env("W10_SERVE", "1")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.as_mut().unwrap()),
        &mut line,
    )
    .unwrap();
    let base = line.trim().to_owned();
    let pid = child.id().to_string();
    runtime.block_on(async {
        concurrent(Load {
            base: &base,
            target: Target::Agentflow,
            clients,
            rounds,
            server_pid: Some(&pid),
            label: "server in its own process",
        })
        .await;
        // 3. Paced at a rate the machine serves with room to spare.
        let rate = env_usize("W10_PACED_RATE", 500) as f64;
        paced(
            &base,
            Target::Agentflow,
            clients,
            rate,
            10.0,
            "server in its own process",
        )
        .await;
        // 4. Background runs.
        background_runs(&base, &pid).await;
    });
    drop(child.stdin.take());
    let _ = child.wait();
}
