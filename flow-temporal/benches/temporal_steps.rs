//! agentflow on Temporal beside a bare `temporalio-sdk` workflow, in one sitting, on one dev
//! server (BENCHMARKS.md, "Temporal"):
//!
//! - `steps`: the time per step of a turn. agentflow's turn is one agent that calls a tool
//!   4 times and then answers: 9 steps (5 model calls, 4 tool calls), each an activity. The
//!   bare workflow runs 9 plain activities in an update handler. Both on a thread (workflow)
//!   already running, so a turn is an update's round trip; with remote activities, then with
//!   local ones (agentflow: `LocalSteps::ModelsAndIdempotentTools`).
//! - `workers`: W1 turns per second with 1, 2 and 4 worker processes (this program started
//!   again with `worker QUEUE`), 8 threads taking turns at once.
//! - `w1`: W1 per workflow (start a thread, one turn, close it, its result), as the Python
//!   peer measures a workflow (start, run, result).
//!
//! Every wait is bounded (30 s): a workflow that does not answer fails the run with what it
//! waited for, instead of hanging. Models are scripted (zero latency).
//!
//! ```text
//! AGENTFLOW_TEMPORAL_ADDRESS=http://127.0.0.1:7233 \
//!     cargo bench -p agentweave-temporal --features sdk --bench temporal_steps -- [steps|workers|w1] [REPS]
//! ```

use std::future::Future;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use agentweave_runtime::model::{ScriptRules, ScriptStep, ScriptedModel};
use agentweave_runtime::{set_sub_agents, tool_fn, ChatModelAgent, FlowAgent, ToolError};
use agentweave_temporal::{worker_flows, LocalSteps, Thread, ThreadStart, TurnRequest};
use serde_json::json;
use temporalio_client::{
    Client, WorkflowExecuteUpdateOptions, WorkflowSignalOptions, WorkflowStartOptions,
};
use temporalio_macros::{activities, workflow, workflow_methods};
use temporalio_sdk::activities::{ActivityContext, ActivityError};
use temporalio_sdk::{
    ActivityOptions, LocalActivityOptions, Runtime, SyncWorkflowContext, Worker, WorkerOptions,
    WorkflowContext, WorkflowResult,
};

const BOUND: Duration = Duration::from_secs(30);
/// The tool calls of a `steps` turn (then one answer): 2 * TOOLS + 1 steps.
const TOOLS: usize = 4;
const STEPS: usize = 2 * TOOLS + 1;

async fn bounded<T>(what: &str, future: impl Future<Output = T>) -> T {
    match tokio::time::timeout(BOUND, future).await {
        Ok(out) => out,
        Err(_) => {
            eprintln!("temporal_steps: {what} did not answer in {BOUND:?}; stopping");
            std::process::exit(2);
        }
    }
}

/// A model that answers from its script by the assistant messages since the last user one.
fn scripted(script: Vec<ScriptStep>) -> ScriptedModel {
    ScriptRules::per_turn(script, "done").build()
}

/// W1: `root` transfers to `refund`, which answers (two model calls).
fn w1() -> FlowAgent {
    let refund = ChatModelAgent::builder(
        "refund",
        scripted(vec![ScriptStep::text("Your refund is on its way.")]),
    )
    .description("You handle refunds.")
    .build()
    .unwrap();
    let complaint =
        ChatModelAgent::builder("complaint", scripted(vec![ScriptStep::text("Sorry.")]))
            .description("You handle complaints.")
            .build()
            .unwrap();
    let root = ChatModelAgent::builder("root", scripted(vec![ScriptStep::transfer("refund")]))
        .description("Route the user.")
        .build()
        .unwrap();
    set_sub_agents(
        FlowAgent::new(root),
        [FlowAgent::new(refund), FlowAgent::new(complaint)],
    )
    .unwrap()
}

/// One agent calling its (idempotent) `step` tool TOOLS times, then answering.
fn stepper() -> FlowAgent {
    let step = tool_fn("step", "One step.", |_: serde_json::Value| async {
        Ok::<_, ToolError>("ok".to_string())
    });
    let mut script: Vec<ScriptStep> = (0..TOOLS)
        .map(|_| ScriptStep::tool_call("step", json!({})))
        .collect();
    script.push(ScriptStep::text("all steps done"));
    FlowAgent::new(
        ChatModelAgent::builder("stepper", scripted(script))
            .tool(step)
            .build()
            .unwrap(),
    )
}

fn register_flows() {
    worker_flows().insert("w1", w1());
    worker_flows().insert("steps", stepper());
}

/// The bare workflow's activity: a fixed reply.
struct Bare;

#[activities]
impl Bare {
    #[activity]
    async fn step(_ctx: ActivityContext, input: String) -> Result<String, ActivityError> {
        Ok(format!("ok {}", input.len()))
    }
}

/// A bare thread: each update runs `n` plain activities one after the other.
#[workflow]
#[derive(Default)]
struct BareThread {
    closing: bool,
}

#[workflow_methods]
impl BareThread {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>, _name: String) -> WorkflowResult<()> {
        ctx.wait_condition(|s| s.closing).await?;
        Ok(())
    }

    #[update]
    async fn turn(ctx: &mut WorkflowContext<Self>, steps: (u32, bool)) -> u32 {
        let (n, local) = steps;
        for i in 0..n {
            let input = format!("step {i}");
            let done = if local {
                ctx.execute_local_activity(
                    Bare::step,
                    input,
                    LocalActivityOptions::builder()
                        .start_to_close_timeout(Duration::from_secs(30))
                        .build(),
                )
                .await
            } else {
                ctx.execute_activity(
                    Bare::step,
                    input,
                    ActivityOptions::with_start_to_close_timeout(Duration::from_secs(30)).build(),
                )
                .await
            };
            if done.is_err() {
                return i;
            }
        }
        n
    }

    #[signal]
    fn close(&mut self, _ctx: &mut SyncWorkflowContext<Self>) {
        self.closing = true;
    }
}

fn spawn_worker(client: Client, options: WorkerOptions) {
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let outcome: Result<(), Box<dyn std::error::Error + Send + Sync>> =
            runtime.block_on(async move {
                let sdk = Runtime::from_current_tokio(Default::default())?;
                Worker::new(&sdk, client, options)?.run().await?;
                Ok(())
            });
        // A worker that fails would leave every wait hanging: stop the whole program.
        eprintln!("temporal_steps: a worker stopped: {outcome:?}");
        std::process::exit(3);
    });
}

struct Stats {
    median: f64,
    min: f64,
    max: f64,
    n: usize,
}

fn stats(mut ms: Vec<f64>) -> Stats {
    ms.sort_by(|a, b| a.total_cmp(b));
    Stats {
        median: ms[ms.len() / 2],
        min: ms[0],
        max: ms[ms.len() - 1],
        n: ms.len(),
    }
}

fn ms_since(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

/// Runs `one` `warm_up + reps` times (given the iteration's number) and gives the statistics of
/// the times it reports for its `N` parts, warm-up left out: the parts of one iteration run
/// one after the other, so what they compare ran in the same moments.
async fn timed<const N: usize, F, Fut>(warm_up: usize, reps: usize, mut one: F) -> [Stats; N]
where
    F: FnMut(usize) -> Fut,
    Fut: std::future::Future<Output = [f64; N]>,
{
    let mut ms: [Vec<f64>; N] = std::array::from_fn(|_| Vec::with_capacity(reps));
    for i in 0..warm_up + reps {
        let took = one(i).await;
        if i >= warm_up {
            for (part, t) in ms.iter_mut().zip(took) {
                part.push(t);
            }
        }
    }
    ms.map(stats)
}

async fn steps(client: &Client, reps: usize, run: u32) {
    let bare_queue = format!("bench-bare-{run}");
    spawn_worker(
        client.clone(),
        WorkerOptions::new(bare_queue.as_str())
            .register_activities(Bare)
            .register_workflow::<BareThread>()
            .unwrap()
            .build(),
    );
    let queue = format!("bench-agentflow-{run}");
    spawn_worker(client.clone(), agentweave_temporal::worker_options(&queue));

    for (label, local) in [
        ("remote activities", LocalSteps::None),
        ("local activities", LocalSteps::ModelsAndIdempotentTools),
    ] {
        let is_local = local != LocalSteps::None;
        let bare_id = format!("bench-bare-{run}-{is_local}");
        let bare = bounded(
            "the bare workflow's start",
            client.start_workflow(
                BareThread::run,
                bare_id.clone(),
                WorkflowStartOptions::new(bare_queue.as_str(), bare_id.as_str()).build(),
            ),
        )
        .await
        .unwrap();
        let thread = bounded(
            "the thread's start",
            Thread::start_with(
                client,
                &queue,
                ThreadStart {
                    local_activities: local,
                    ..ThreadStart::new("steps", format!("bench-steps-{run}-{is_local}"))
                },
            ),
        )
        .await
        .unwrap();
        let (bare, thread) = (&bare, &thread);
        let [b, f] = timed(3, reps, move |_| async move {
            let t = Instant::now();
            let done = bounded(
                "a bare turn",
                bare.execute_update(
                    BareThread::turn,
                    (STEPS as u32, is_local),
                    WorkflowExecuteUpdateOptions::default(),
                ),
            )
            .await
            .unwrap();
            let b = ms_since(t);
            assert_eq!(done, STEPS as u32);
            let t = Instant::now();
            let result = bounded("an agentflow turn", thread.turn("ana", "go"))
                .await
                .unwrap();
            let f = ms_since(t);
            assert!(
                result
                    .events
                    .iter()
                    .any(|e| e["message"]["content"] == "all steps done"),
                "{:?}",
                result.events
            );
            [b, f]
        })
        .await;
        println!(
            "steps, {label}: bare temporalio {:.2} ms a step ({:.1} ms a turn of {STEPS}, min {:.1}, max {:.1}); \
             agentflow {:.2} ms a step ({:.1} ms a turn, min {:.1}, max {:.1}); ratio {:.2} (n={})",
            b.median / STEPS as f64,
            b.median,
            b.min,
            b.max,
            f.median / STEPS as f64,
            f.median,
            f.min,
            f.max,
            f.median / b.median,
            f.n
        );
        bounded(
            "close",
            bare.signal(BareThread::close, (), WorkflowSignalOptions::default()),
        )
        .await
        .unwrap();
        bounded("close", thread.close()).await.unwrap();
    }
}

fn worker_process(queue: &str) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args(["worker", queue])
        .spawn()
        .expect("a worker process starts")
}

async fn workers(client: &Client, reps: usize, run: u32) {
    const THREADS: usize = 8;
    for processes in [1, 2, 4] {
        let queue = format!("bench-workers-{run}-{processes}");
        let mut children: Vec<Child> = (0..processes).map(|_| worker_process(&queue)).collect();
        // A warm-up turn on each thread (the workers connect and poll), then the timed turns.
        let mut threads = Vec::new();
        for t in 0..THREADS {
            let thread = bounded(
                "a thread's start",
                Thread::start(
                    client,
                    &queue,
                    "w1",
                    &format!("bench-w-{run}-{processes}-{t}"),
                ),
            )
            .await
            .unwrap();
            bounded("a warm-up turn", thread.turn("ana", "I want a refund"))
                .await
                .unwrap();
            threads.push(thread);
        }
        let t = Instant::now();
        let tasks: Vec<_> = threads
            .into_iter()
            .map(|thread| {
                tokio::spawn(async move {
                    for _ in 0..reps {
                        bounded(
                            "a turn",
                            thread.ask(TurnRequest::new("ana", "I want a refund")),
                        )
                        .await
                        .unwrap();
                    }
                    thread
                })
            })
            .collect();
        let mut done = Vec::new();
        for task in tasks {
            done.push(task.await.unwrap());
        }
        let seconds = t.elapsed().as_secs_f64();
        println!(
            "workers: {processes} worker process(es), {THREADS} threads x {reps} W1 turns: {:.1} turns/s ({:.1} s)",
            (THREADS * reps) as f64 / seconds,
            seconds
        );
        for thread in done {
            bounded("close", thread.close()).await.unwrap();
        }
        for child in &mut children {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

async fn w1_per_workflow(client: &Client, reps: usize, run: u32) {
    let queue = format!("bench-w1-{run}");
    spawn_worker(client.clone(), agentweave_temporal::worker_options(&queue));
    for (label, local) in [
        ("remote activities", LocalSteps::None),
        ("local model calls", LocalSteps::Models),
    ] {
        let queue: &str = &queue;
        let [s] = timed(2, reps, move |i| async move {
            let t = Instant::now();
            let thread = bounded(
                "a thread's start",
                Thread::start_with(
                    client,
                    queue,
                    ThreadStart {
                        local_activities: local,
                        ..ThreadStart::new("w1", format!("bench-w1-{run}-{label}-{i}"))
                    },
                ),
            )
            .await
            .unwrap();
            let result = bounded("a W1 turn", thread.turn("ana", "I want a refund"))
                .await
                .unwrap();
            bounded("close", thread.close()).await.unwrap();
            let took = ms_since(t);
            assert!(result
                .events
                .iter()
                .any(|e| e["message"]["content"] == "Your refund is on its way."));
            [took]
        })
        .await;
        println!(
            "w1, {label}: agentflow {:.1} ms per workflow (start, turn, close, result; min {:.1}, max {:.1}, n={})",
            s.median, s.min, s.max, s.n
        );
        // One request: update-with-start, and the workflow ends after its turn.
        let [s] = timed(2, reps, move |i| async move {
            let t = Instant::now();
            let result = bounded(
                "a one-shot W1 thread",
                Thread::run_once(
                    client,
                    queue,
                    ThreadStart {
                        local_activities: local,
                        ..ThreadStart::new("w1", format!("bench-w1-once-{run}-{label}-{i}"))
                    },
                    TurnRequest::new("ana", "I want a refund"),
                ),
            )
            .await
            .unwrap();
            let took = ms_since(t);
            assert!(result
                .events
                .iter()
                .any(|e| e["message"]["content"] == "Your refund is on its way."));
            [took]
        })
        .await;
        println!(
            "w1, {label}: agentflow one-shot {:.1} ms per workflow (update-with-start; min {:.1}, max {:.1}, n={})",
            s.median, s.min, s.max, s.n
        );
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let address = std::env::var("AGENTFLOW_TEMPORAL_ADDRESS")
        .unwrap_or_else(|_| agentweave_temporal::DEFAULT_ADDRESS.to_owned());
    let client = match bounded("the dev server", agentweave_temporal::connect(&address)).await {
        Ok(client) => client,
        Err(e) => {
            eprintln!("temporal_steps: {e}");
            return;
        }
    };
    register_flows();
    if args.first().map(String::as_str) == Some("worker") {
        let queue = args.get(1).expect("worker QUEUE");
        if let Err(e) = agentweave_temporal::run_worker(client, queue).await {
            eprintln!("temporal_steps worker: {e}");
            std::process::exit(3);
        }
        return;
    }
    let what = args
        .iter()
        .find(|a| ["steps", "workers", "w1"].contains(&a.as_str()))
        .cloned();
    let reps: usize = args.iter().find_map(|a| a.parse().ok()).unwrap_or(20);
    let run = std::process::id();
    if what.as_deref().is_none_or(|w| w == "steps") {
        steps(&client, reps, run).await;
    }
    if what.as_deref().is_none_or(|w| w == "w1") {
        w1_per_workflow(&client, reps, run).await;
    }
    if what.as_deref().is_none_or(|w| w == "workers") {
        workers(&client, reps, run).await;
    }
}
