// Its own test binary, not a module of tests/it: a kill harness: it starts copies of this test
// binary as Temporal worker processes and SIGKILLs them mid-turn (`--exact` entries by name).
//! agentweave-server on Temporal with workers dying: one server process (this one) serves a
//! multi-agent flow on Temporal; two worker processes serve its task queue. In each trial a
//! client asks a turn over HTTP (streamed: `desk` transfers to `billing`, whose `pay` tool needs
//! an approval), approves the payment through `/resume` (streamed), and one of the two workers
//! is SIGKILLed at a random moment of all that (a new one takes its place). Every trial: each
//! payment is made once, the turn ends complete and is recorded in order, and each client
//! stream shows each event once, in order, streamed model output included (its frames are the
//! in-process server's).
//!
//! `AGENTFLOW_TEMPORAL_SERVER_KILL_TRIALS` sets the number of trials (default 100),
//! `AGENTFLOW_KILL_LANES` how many run at once (default 4; each lane has its own task queue and
//! two workers), `AGENTFLOW_KILL_SEED` repeats a run's dice. Needs the dev server
//! (`AGENTFLOW_TEMPORAL_ADDRESS`): skipped without one, failed in CI.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use agentweave_runtime::model::ScriptStep;
use agentweave_runtime::{
    set_sub_agents, tool_fn_with_context, ChatModelAgent, FlowAgent, InMemoryStore, NeedsApproval,
    ToolContext, ToolError, TurnRouting,
};
use agentweave_server::temporal::TemporalExecutor;
use agentweave_server::{AppState, Auth};
use eventsource_stream::Eventsource;
use futures::StreamExt;
use serde_json::{json, Value};

#[path = "common/temporal.rs"]
mod temporal_support;
use temporal_support::{address, dev_server, stateless, unique, PayArgs};

const TOKEN: &str = "kill-test-token-0123456789";
const QUEUE_ENV: &str = "FLOW_SERVER_TEMPORAL_KILL_QUEUE";
const LEDGER_ENV: &str = "FLOW_SERVER_TEMPORAL_KILL_LEDGER";
const FLOW: &str = "desk";
/// How long the paying call takes: a window the kills can land in.
const PAY_DELAY: Duration = Duration::from_millis(300);

/// A thread name unique to this run, short enough for a thread id.
fn short(prefix: &str) -> String {
    format!(
        "{prefix}-{}",
        &agentweave_runtime::ids::unique_token()[..12]
    )
}

/// A payment service on disk, shared by every process: one line per payment, `KEY AMOUNT`,
/// and one payment per key (a call run again under its key pays nothing more).
#[derive(Clone)]
struct Ledger(PathBuf);

impl Ledger {
    fn new() -> Self {
        let path = std::env::temp_dir().join(unique("agentweave-server-kill-ledger"));
        std::fs::write(&path, "").unwrap();
        Ledger(path)
    }

    fn pay(&self, key: &str, amount: u32) {
        // One payment per key, across processes: the key's marker file is created once.
        let marker = self.0.with_extension(format!("paid-{:x}", fxhash(key)));
        if std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&marker)
            .is_err()
        {
            return;
        }
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(&self.0)
            .unwrap();
        writeln!(file, "{key} {amount}").unwrap();
        file.sync_all().unwrap();
    }

    fn payments(&self) -> Vec<String> {
        std::fs::read_to_string(&self.0)
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }
}

fn fxhash(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
    })
}

/// `desk` transfers to `billing`, whose `pay` needs an approval; billing then says it paid.
fn desk(ledger: &Ledger) -> FlowAgent {
    let ledger = ledger.clone();
    let pay = tool_fn_with_context(
        "pay",
        "Pays an amount.",
        move |cx: ToolContext, args: PayArgs| {
            let ledger = ledger.clone();
            async move {
                tokio::time::sleep(PAY_DELAY).await;
                ledger.pay(&cx.idempotency_key(), args.amount);
                Ok::<_, ToolError>(format!("paid {}", args.amount))
            }
        },
    );
    let billing = ChatModelAgent::builder(
        "billing",
        stateless(vec![
            ScriptStep::tool_call("pay", json!({ "amount": 30 })),
            ScriptStep::text("billing paid 30 euros for you today"),
        ]),
    )
    .description("Pays bills.")
    .tool(NeedsApproval::always(Arc::new(pay)))
    .build()
    .unwrap();
    let desk = ChatModelAgent::builder("desk", stateless(vec![ScriptStep::transfer("billing")]))
        .description("The front desk.")
        .build()
        .unwrap();
    set_sub_agents(FlowAgent::new(desk), [FlowAgent::new(billing)]).unwrap()
}

/// The worker processes' entry: a worker of the queue its parent names, until it is killed.
/// In an ordinary test run (no queue named) it does nothing.
#[test]
fn worker_process() {
    let Ok(queue) = std::env::var(QUEUE_ENV) else {
        return;
    };
    let ledger = Ledger(PathBuf::from(std::env::var(LEDGER_ENV).unwrap()));
    agentweave_temporal::worker_flows().insert(FLOW, desk(&ledger));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let client = agentweave_temporal::connect(&address()).await.unwrap();
        agentweave_temporal::run_worker(client, &queue)
            .await
            .unwrap();
    });
}

fn spawn_worker(queue: &str, ledger: &Path) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "worker_process",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(QUEUE_ENV, queue)
        .env(LEDGER_ENV, ledger)
        .stdout(Stdio::null())
        .spawn()
        .unwrap()
}

struct Workers(Vec<Child>);

impl Drop for Workers {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The dice of the trials (xorshift): when and which worker each trial kills.
struct Dice(u64);

impl Dice {
    fn seed() -> u64 {
        std::env::var("AGENTFLOW_KILL_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap()
                    .subsec_nanos() as u64
            })
    }

    fn for_trial(seed: u64, trial: usize) -> Self {
        let mut dice = Dice((seed ^ (trial as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15)) | 1);
        dice.below(2);
        dice
    }

    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n.max(1)
    }
}

/// One Server-Sent Event: its name and data.
#[derive(Debug, Clone)]
struct Sse {
    name: String,
    data: Value,
}

async fn sse(base: &str, path: &str, body: Value) -> Vec<Sse> {
    let response = reqwest::Client::new()
        .post(format!("{base}{path}"))
        .bearer_auth(TOKEN)
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(
        response.status(),
        200,
        "{path}: {:?}",
        response.text().await
    );
    let mut events = response.bytes_stream().eventsource();
    let mut out = Vec::new();
    while let Some(event) = events.next().await {
        let event = event.expect("well-formed SSE");
        out.push(Sse {
            name: event.event,
            data: serde_json::from_str(&event.data).unwrap(),
        });
    }
    out
}

/// A turn's frames without what differs from run to run (ids, times, the thread's name).
fn shape(frames: &[Sse]) -> Vec<Value> {
    frames
        .iter()
        .map(|f| match f.name.as_str() {
            "chunk" => json!(["chunk", f.data["agent_name"], f.data["content"]]),
            // On Temporal the question's address is the root's (the root runs the tree
            // elsewhere); its id and what it asks are the same.
            "event" if f.data["action"]["interrupted"].is_object() => {
                json!(["interrupt", f.data["action"]["interrupted"]["info"]])
            }
            "event" => json!([
                "event",
                f.data["agent_name"],
                f.data["run_path"],
                f.data["message"]["content"],
                f.data["action"],
                f.data["streamed"],
                f.data["error"]["code"]
            ]),
            "done" => json!(["done", f.data["output"], f.data["interrupted"]]),
            other => json!([other, f.data["code"]]),
        })
        .collect()
}

/// A server of the desk on an address of its own: on Temporal (the workers of `queue`) when
/// `client` is given, in process otherwise. Gives its base URL.
async fn serve(ledger: &Ledger, temporal: Option<(&temporalio_client::Client, &str)>) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let mut builder = AppState::builder(InMemoryStore::new())
        .flow(FLOW, desk(ledger))
        .auth(Auth::bearer(TOKEN))
        .turn_routing(TurnRouting::Root);
    if let Some((client, queue)) = temporal {
        builder = builder.temporal(
            TemporalExecutor::new(client.clone(), queue, base.as_str())
                .model_timeout(Duration::from_secs(2))
                .tool_timeout(Duration::from_secs(2))
                .task_timeout(Duration::from_secs(2)),
        );
    }
    tokio::spawn(agentweave_server::serve(listener, builder.build().unwrap()));
    base
}

/// A trial's turn and its approval: the frames of both.
async fn turn_and_approve(base: &str, thread: &str) -> (Vec<Sse>, Vec<Sse>) {
    let asked = sse(
        base,
        &format!("/v1/flows/{FLOW}/threads/{thread}/turns"),
        json!({ "message": "please pay my bill" }),
    )
    .await;
    let interrupt = asked.last().unwrap().data["interrupts"][0]["id"].clone();
    assert!(
        interrupt.is_string(),
        "the turn asks an approval: {asked:#?}"
    );
    let paid = sse(
        base,
        &format!("/v1/flows/{FLOW}/threads/{thread}/resume"),
        json!({ "interrupt_id": interrupt, "data": { "approve": true } }),
    )
    .await;
    (asked, paid)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workers_killed_mid_turn_leave_each_turn_complete_each_payment_made_once_and_each_event_seen_once(
) {
    let Some(client) = dev_server().await else {
        return;
    };
    let trials: usize = std::env::var("AGENTFLOW_TEMPORAL_SERVER_KILL_TRIALS")
        .ok()
        .and_then(|t| t.parse().ok())
        .unwrap_or(100);
    let lanes: usize = std::env::var("AGENTFLOW_KILL_LANES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(4)
        .clamp(1, trials.max(1));
    let seed = Dice::seed();
    eprintln!("{trials} trials in {lanes} lanes, seed {seed} (AGENTFLOW_KILL_SEED)");

    // What a client sees in process: the frames every trial must give.
    let expected = {
        let base = serve(&Ledger::new(), None).await;
        let (asked, paid) = turn_and_approve(&base, &short("expected")).await;
        (shape(&asked), shape(&paid))
    };
    assert_eq!(
        expected.1.last().unwrap(),
        &json!(["done", "billing paid 30 euros for you today", false])
    );

    let started = Instant::now();
    let expected = Arc::new(expected);
    let lanes_run: Vec<_> = (0..lanes)
        .map(|lane| {
            let client = client.clone();
            let expected = Arc::clone(&expected);
            tokio::spawn(async move {
                let ledger = Ledger::new();
                let queue = unique("kill-server");
                let mut workers = Workers(vec![
                    spawn_worker(&queue, &ledger.0),
                    spawn_worker(&queue, &ledger.0),
                ]);
                let base = serve(&ledger, Some((&client, &queue))).await;
                let mut kills = 0;
                for trial in (lane..trials).step_by(lanes) {
                    let mut dice = Dice::for_trial(seed, trial);
                    let thread = short(&format!("t{trial}"));
                    let before = ledger.payments().len();
                    let trial_start = Instant::now();
                    let run = tokio::spawn({
                        let base = base.clone();
                        let thread = thread.clone();
                        async move { turn_and_approve(&base, &thread).await }
                    });
                    // A random moment of the turn and its approval (which take ~1 s here).
                    tokio::time::sleep(Duration::from_millis(dice.below(1200))).await;
                    let victim = dice.below(2) as usize;
                    let running = !run.is_finished();
                    let child = &mut workers.0[victim];
                    child.kill().unwrap();
                    child.wait().unwrap();
                    workers.0[victim] = spawn_worker(&queue, &ledger.0);
                    kills += running as usize;
                    let (asked, paid) = tokio::time::timeout(Duration::from_secs(90), run)
                        .await
                        .unwrap_or_else(|_| panic!("trial {trial}: the turn did not end in 90 s"))
                        .unwrap_or_else(|e| panic!("trial {trial} (seed {seed}): {e}"));
                    assert_eq!(
                        (shape(&asked), shape(&paid)),
                        (expected.0.clone(), expected.1.clone()),
                        "trial {trial} (seed {seed}): each event once, in order: \
                         {asked:#?} {paid:#?}"
                    );
                    let payments = ledger.payments();
                    assert_eq!(
                        payments.len(),
                        before + 1,
                        "trial {trial} (seed {seed}): one payment: {payments:?}"
                    );
                    let record: Value = reqwest::Client::new()
                        .get(format!("{base}/v1/flows/{FLOW}/threads/{thread}"))
                        .bearer_auth(TOKEN)
                        .send()
                        .await
                        .unwrap()
                        .json()
                        .await
                        .unwrap();
                    let said: Vec<&str> = record["messages"]
                        .as_array()
                        .unwrap_or_else(|| panic!("trial {trial}: {record:#}"))
                        .iter()
                        .filter_map(|m| m["message"]["content"].as_str())
                        .filter(|c| !c.is_empty())
                        .collect();
                    assert_eq!(
                        said,
                        [
                            "please pay my bill",
                            "successfully transferred to agent [billing]",
                            "paid 30",
                            "billing paid 30 euros for you today"
                        ],
                        "trial {trial} (seed {seed}): the thread, complete and in order"
                    );
                    eprintln!(
                        "trial {trial}: worker {victim} killed {} the turn, {:.1} s",
                        if running { "during" } else { "after" },
                        trial_start.elapsed().as_secs_f64()
                    );
                }
                kills
            })
        })
        .collect();
    let mut during = 0;
    for lane in lanes_run {
        match lane.await {
            Ok(kills) => during += kills,
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            Err(e) => panic!("a lane was cancelled: {e}"),
        }
    }
    eprintln!(
        "{trials} trials in {:.1} s ({:.2} s a trial per lane), {during} kills during a turn",
        started.elapsed().as_secs_f64(),
        started.elapsed().as_secs_f64() * lanes as f64 / trials.max(1) as f64
    );
}
