//! adk-rust anchor: agentflow's workloads W1-W4 on adk-rust (crates.io `adk-rust` 2.3), with a
//! scripted, zero-latency model implementing its `Llm` trait. It mirrors the Python
//! `adk_bench.py` anchor (google-adk): the same trees, names, instructions, user message and
//! answers; a session per run, created (and for W2 filled with H prior events) outside the
//! timed region, as that script does.
//!
//! ```text
//! cargo run --release                 # from bench/adk-rust-anchor; prints one JSON line per figure
//! ```
//!
//! Knobs (environment): BENCH_RUNS (W1, default 300), BENCH_HIST_RUNS (W2, 50; half at
//! H=1000), BENCH_STREAM_N (10000), BENCH_STREAM_RUNS (5), BENCH_DEPTH (10), BENCH_WARMUP (20).

use std::sync::Arc;
use std::time::Instant;

use adk_rust::agent::LlmAgentBuilder;
use adk_rust::futures::StreamExt;
use adk_rust::runner::Runner;
use adk_rust::session::{CreateRequest, DeleteRequest, InMemorySessionService, SessionService};
use adk_rust::{
    async_trait, Agent, Content, Event, Llm, LlmRequest, LlmResponse, LlmResponseStream, Part,
    RunConfig, SessionId, StreamingMode, UserId,
};

const USER: &str = "I want a refund for order 42.";
const ANSWER: &str = "Your refund is approved.";
const APP: &str = "bench";

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[derive(Clone)]
enum Action {
    Transfer(String),
    Text,
    Stream(usize),
}

/// A model that answers from its script at once: calls `transfer_to_agent`, answers the text,
/// or streams `n` chunks "x" then the whole text (as the google-adk anchor's `ScriptedLlm`).
struct ScriptedLlm {
    action: Action,
}

#[async_trait]
impl Llm for ScriptedLlm {
    fn name(&self) -> &str {
        "scripted"
    }

    async fn generate_content(
        &self,
        _req: LlmRequest,
        stream: bool,
    ) -> adk_rust::Result<LlmResponseStream> {
        let responses: Vec<adk_rust::Result<LlmResponse>> = match &self.action {
            Action::Transfer(target) => {
                let mut content = Content::new("model");
                content.parts.push(Part::FunctionCall {
                    name: "transfer_to_agent".to_string(),
                    args: serde_json::json!({ "agent_name": target }),
                    id: None,
                    thought_signature: None,
                });
                vec![Ok(LlmResponse::new(content))]
            }
            Action::Stream(n) if stream => {
                let n = *n;
                let chunks = (0..n).map(|_| {
                    let mut r = LlmResponse::new(Content::new("model").with_text("x"));
                    r.partial = true;
                    r.turn_complete = false;
                    r.finish_reason = None;
                    Ok(r)
                });
                let whole = LlmResponse::new(Content::new("model").with_text("x".repeat(n)));
                return Ok(Box::pin(adk_rust::futures::stream::iter(
                    chunks.chain([Ok(whole)]),
                )));
            }
            _ => vec![Ok(LlmResponse::new(
                Content::new("model").with_text(ANSWER),
            ))],
        };
        Ok(Box::pin(adk_rust::futures::stream::iter(responses)))
    }
}

fn agent(name: &str, action: Action, subs: Vec<Arc<dyn Agent>>) -> Arc<dyn Agent> {
    let mut b = LlmAgentBuilder::new(name)
        .model(Arc::new(ScriptedLlm { action }))
        .instruction(format!("You are {name}."))
        .description(format!("{name} agent"));
    for s in subs {
        b = b.sub_agent(s);
    }
    Arc::new(b.build().expect("agent"))
}

fn tree_w1() -> Arc<dyn Agent> {
    agent(
        "root",
        Action::Transfer("refund".into()),
        vec![
            agent("refund", Action::Text, vec![]),
            agent("complaint", Action::Text, vec![]),
        ],
    )
}

fn tree_chain(d: usize) -> Arc<dyn Agent> {
    let mut child = agent(&format!("agent{}", d - 1), Action::Text, vec![]);
    for i in (0..d - 1).rev() {
        child = agent(
            &format!("agent{i}"),
            Action::Transfer(format!("agent{}", i + 1)),
            vec![child],
        );
    }
    child
}

struct Harness {
    svc: Arc<InMemorySessionService>,
    runner: Runner,
}

impl Harness {
    fn new(root: Arc<dyn Agent>) -> Self {
        let svc = Arc::new(InMemorySessionService::new());
        let runner = Runner::builder()
            .app_name(APP)
            .agent(root)
            .session_service(svc.clone())
            .build()
            .expect("runner");
        Harness { svc, runner }
    }

    /// A new session with `history` prior events (user and `root` in turn).
    async fn new_session(&self, history: usize) -> String {
        let s = self
            .svc
            .create(CreateRequest {
                app_name: APP.into(),
                user_id: "u".into(),
                session_id: None,
                state: Default::default(),
            })
            .await
            .expect("session");
        let id = s.id().to_string();
        for i in 0..history {
            let mut ev = Event::new(format!("hist{}", i / 2));
            if i % 2 == 0 {
                ev.author = "user".into();
                ev.llm_response.content =
                    Some(Content::new("user").with_text(format!("earlier user message {i}")));
            } else {
                ev.author = "root".into();
                ev.llm_response.content =
                    Some(Content::new("model").with_text(format!("earlier reply {i}")));
            }
            self.svc.append_event(&id, ev).await.expect("append");
        }
        id
    }

    async fn drop_session(&self, id: String) {
        let _ = self
            .svc
            .delete(DeleteRequest {
                app_name: APP.into(),
                user_id: "u".into(),
                session_id: id,
            })
            .await;
    }

    /// One run; returns (events, last author, partial text chunks seen).
    async fn run_once(&self, sid: &str, config: Option<RunConfig>) -> (usize, String, usize) {
        let mut events = self
            .runner
            .run_with_config(
                UserId::try_from("u").expect("user id"),
                SessionId::try_from(sid).expect("session id"),
                Content::new("user").with_text(USER),
                config,
            )
            .await
            .expect("run");
        let (mut n, mut last, mut partials) = (0, String::new(), 0);
        while let Some(ev) = events.next().await {
            let ev = ev.expect("event");
            n += 1;
            if ev.llm_response.partial
                && ev
                    .llm_response
                    .content
                    .as_ref()
                    .is_some_and(|c| c.parts.iter().any(|p| matches!(p, Part::Text { .. })))
            {
                partials += 1;
            }
            last = ev.author.clone();
        }
        (n, last, partials)
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Median milliseconds per run over `runs` runs after `warmup`, each in a fresh session.
async fn bench(h: &Harness, runs: usize, warmup: usize, history: usize, author: &str) -> f64 {
    let mut samples = Vec::with_capacity(runs);
    for i in 0..runs + warmup {
        let sid = h.new_session(history).await;
        let t0 = Instant::now();
        let (_, last, _) = h.run_once(&sid, None).await;
        let dt = t0.elapsed().as_secs_f64() * 1e3;
        assert_eq!(last, author, "the run must end at {author}");
        if i >= warmup {
            samples.push(dt);
        }
        h.drop_session(sid).await;
    }
    median(samples)
}

fn report(workload: &str, value: f64, unit: &str) {
    println!(
        "{{\"impl\": \"adk-rust\", \"version\": \"2.3\", \"workload\": \"{workload}\", \"value\": {value}, \"unit\": \"{unit}\"}}"
    );
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let runs = env_usize("BENCH_RUNS", 300);
    let warmup = env_usize("BENCH_WARMUP", 20);
    let hist_runs = env_usize("BENCH_HIST_RUNS", 50);
    let stream_n = env_usize("BENCH_STREAM_N", 10_000);
    let stream_runs = env_usize("BENCH_STREAM_RUNS", 5);
    let depth = env_usize("BENCH_DEPTH", 10);

    // W1
    let h = Harness::new(tree_w1());
    report("W1", bench(&h, runs, warmup, 0, "refund").await, "ms");

    // W2
    for hist in [10, 100, 1000] {
        let h = Harness::new(tree_w1());
        let n = if hist < 1000 {
            hist_runs
        } else {
            hist_runs / 2
        };
        let ms = bench(&h, n.max(5), warmup.min(5), hist, "refund").await;
        report(&format!("W2 H={hist}"), ms, "ms");
    }

    // W3
    let h = Harness::new(agent("streamer", Action::Stream(stream_n), vec![]));
    let mut rates = Vec::new();
    for r in 0..=stream_runs {
        let sid = h.new_session(0).await;
        let config = RunConfig {
            streaming_mode: StreamingMode::SSE,
            ..RunConfig::default()
        };
        let t0 = Instant::now();
        let (_, _, got) = h.run_once(&sid, Some(config)).await;
        let dt = t0.elapsed().as_secs_f64();
        assert_eq!(got, stream_n, "every chunk must reach the caller");
        if r > 0 {
            rates.push(got as f64 / dt);
        }
        h.drop_session(sid).await;
    }
    report("W3", median(rates), "chunks/s");

    // W4
    let h = Harness::new(tree_chain(depth));
    let last = format!("agent{}", depth - 1);
    let ms = bench(&h, (runs / 2).max(20), warmup.min(10), 0, &last).await;
    report(&format!("W4 D={depth}"), ms, "ms");
}
