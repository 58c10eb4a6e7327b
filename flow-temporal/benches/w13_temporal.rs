//! W13 on Temporal: agentflow's thread workflow beside a bare `temporalio-sdk` workflow that
//! runs the same steps as plain activities, in the same sitting, on the same dev server.
//!
//! The flow is W1's: `root` transfers to `refund`, which answers (two model calls, each an
//! activity, with a zero-latency scripted model). The bare workflow runs two activities that
//! return fixed replies. Both are measured per workflow (start, one turn, result) and, for
//! agentflow, per turn on a thread already running (an update's round trip). Prints medians;
//! figures go to BENCHMARKS.md with the machine's load.
//!
//! ```text
//! AGENTFLOW_TEMPORAL_ADDRESS=http://127.0.0.1:7233 \
//!     cargo bench -p flow-temporal --features sdk --bench w13_temporal -- 50
//! ```

use std::time::{Duration, Instant};

use flow_runtime::model::{ChatRequest, ScriptStep, ScriptedModel};
use flow_runtime::{set_sub_agents, ChatModelAgent, FlowAgent, Role};
use flow_temporal::{worker_flows, Thread};
use temporalio_client::{Client, WorkflowGetResultOptions, WorkflowStartOptions};
use temporalio_macros::{activities, workflow, workflow_methods};
use temporalio_sdk::activities::{ActivityContext, ActivityError};
use temporalio_sdk::{
    ActivityOptions, Runtime, Worker, WorkerOptions, WorkflowContext, WorkflowResult,
};

fn scripted(script: Vec<ScriptStep>) -> ScriptedModel {
    ScriptedModel::rules().otherwise_with(move |request: &ChatRequest| {
        let answered = request
            .messages
            .iter()
            .rev()
            .take_while(|m| m.role != Role::User)
            .filter(|m| m.role == Role::Assistant)
            .count();
        script
            .get(answered)
            .cloned()
            .unwrap_or_else(|| ScriptStep::text("done"))
    })
}

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

/// The bare workflow's activities: two fixed replies.
struct Bare;

#[activities]
impl Bare {
    #[activity]
    async fn route(_ctx: ActivityContext, _prompt: String) -> Result<String, ActivityError> {
        Ok("transfer_to_refund".to_owned())
    }

    #[activity]
    async fn answer(_ctx: ActivityContext, _prompt: String) -> Result<String, ActivityError> {
        Ok("Your refund is on its way.".to_owned())
    }
}

#[workflow]
#[derive(Default)]
struct BareW1;

#[workflow_methods]
impl BareW1 {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>, prompt: String) -> WorkflowResult<String> {
        let options =
            || ActivityOptions::with_start_to_close_timeout(Duration::from_secs(30)).build();
        let _route = ctx
            .execute_activity(Bare::route, prompt.clone(), options())
            .await?;
        Ok(ctx
            .execute_activity(Bare::answer, prompt, options())
            .await?)
    }
}

fn median(mut ms: Vec<f64>) -> (f64, f64, f64) {
    ms.sort_by(|a, b| a.total_cmp(b));
    (ms[ms.len() / 2], ms[0], ms[ms.len() - 1])
}

fn report(what: &str, ms: Vec<f64>, steps: usize) {
    let n = ms.len();
    let (med, min, max) = median(ms);
    println!(
        "{what}: median {med:.1} ms ({:.1} ms per step of {steps}), min {min:.1}, max {max:.1}, n={n}",
        med / steps as f64
    );
}

fn spawn_worker(client: Client, options: WorkerOptions) {
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let sdk = Runtime::from_current_tokio(Default::default()).unwrap();
            Worker::new(&sdk, client, options)
                .unwrap()
                .run()
                .await
                .unwrap();
        });
    });
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let reps: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(30);
    let address = std::env::var("AGENTFLOW_TEMPORAL_ADDRESS")
        .unwrap_or_else(|_| flow_temporal::DEFAULT_ADDRESS.to_owned());
    let client = match flow_temporal::connect(&address).await {
        Ok(client) => client,
        Err(e) => {
            eprintln!("w13_temporal: {e}");
            return;
        }
    };
    let run = std::process::id();

    let bare_queue = format!("w13-bare-{run}");
    spawn_worker(
        client.clone(),
        WorkerOptions::new(bare_queue.as_str())
            .register_activities(Bare)
            .register_workflow::<BareW1>()
            .unwrap()
            .build(),
    );
    worker_flows().insert("w1", w1());
    let queue = format!("w13-agentflow-{run}");
    spawn_worker(client.clone(), flow_temporal::worker_options(&queue));

    let mut bare = Vec::new();
    let mut flow = Vec::new();
    let mut turns = Vec::new();
    let thread = Thread::start(&client, &queue, "w1", &format!("w13-thread-{run}"))
        .await
        .unwrap();
    // Interleaved, two warm-up rounds first, so both see the same load.
    for i in 0..reps + 2 {
        let t = Instant::now();
        let id = format!("w13-bare-{run}-{i}");
        let handle = client
            .start_workflow(
                BareW1::run,
                "I want a refund".to_owned(),
                WorkflowStartOptions::new(bare_queue.as_str(), id.as_str()).build(),
            )
            .await
            .unwrap();
        let out = handle
            .get_result(WorkflowGetResultOptions::default())
            .await
            .unwrap();
        let bare_ms = t.elapsed().as_secs_f64() * 1e3;
        assert!(out.contains("refund"));

        let t = Instant::now();
        let one = Thread::start(&client, &queue, "w1", &format!("w13-{run}-{i}"))
            .await
            .unwrap();
        let result = one.turn("ana", "I want a refund").await.unwrap();
        one.close().await.unwrap();
        let flow_ms = t.elapsed().as_secs_f64() * 1e3;
        assert!(result
            .events
            .iter()
            .any(|e| e["message"]["content"] == "Your refund is on its way."));

        let t = Instant::now();
        thread.turn("ana", "I want a refund").await.unwrap();
        let turn_ms = t.elapsed().as_secs_f64() * 1e3;
        if i >= 2 {
            bare.push(bare_ms);
            flow.push(flow_ms);
            turns.push(turn_ms);
        }
    }
    report(
        "bare temporalio workflow, 2 remote activities (start, run, result)",
        bare,
        2,
    );
    report(
        "agentflow W1 thread workflow (start, one turn, close, result)",
        flow,
        2,
    );
    report(
        "agentflow W1 turn on a running thread (an update's round trip)",
        turns,
        2,
    );
}
