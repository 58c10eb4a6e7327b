//! agentweave-server on Temporal (feature `temporal`): the same routes run a thread's turns as the
//! thread's workflow on a Temporal worker, and stream them as they run: a multi-agent turn with
//! a paid tool gives the client the frames the in-process server gives (streamed model output
//! included), and an approval ends the turn interrupted and is answered through `/resume`, by
//! the id it has in process; the tree routes show the flow's own tree; a streamed run whose
//! client goes away (`on_disconnect: cancel`) is cancelled on the workflow too.
//!
//! Needs a Temporal dev server (`AGENTFLOW_TEMPORAL_ADDRESS`, as `.ci/temporal.sh` exports it):
//! skipped without one, failed in CI (`AGENTFLOW_REQUIRE_COMPONENTS=1`).

use crate::common::{post, read_sse, Sse, TOKEN};
use crate::temporal_support::{dev_server, stateless, unique, PayArgs};

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use agentweave_runtime::model::{ChatRequest, ScriptStep, ScriptedModel};
use agentweave_runtime::{
    set_sub_agents, tool_fn_with_context, ChatModelAgent, FlowAgent, FnTool, InMemoryStore,
    NeedsApproval, Role, ToolContext, ToolError, TurnRouting,
};
use agentweave_server::temporal::TemporalExecutor;
use agentweave_server::{AppState, Auth};
use serde_json::{json, Value};

/// A worker of `queue` in this process, on a thread of its own, until the process ends.
fn start_worker(client: &temporalio_client::Client, queue: &str) {
    let client = client.clone();
    let queue = queue.to_owned();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        if let Err(e) = runtime.block_on(agentweave_temporal::run_worker(client, &queue)) {
            panic!("the worker of {queue} failed: {e}");
        }
    });
}

/// One line per payment made: `KEY AMOUNT`.
#[derive(Clone)]
struct Ledger(PathBuf);

impl Ledger {
    fn new() -> Self {
        let path = std::env::temp_dir().join(unique("agentweave-server-temporal-ledger"));
        std::fs::write(&path, "").unwrap();
        Ledger(path)
    }

    fn append(&self, key: &str, amount: u32) {
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(&self.0)
            .unwrap();
        writeln!(file, "{key} {amount}").unwrap();
    }

    fn lines(&self) -> Vec<String> {
        std::fs::read_to_string(&self.0)
            .unwrap()
            .lines()
            .map(str::to_owned)
            .collect()
    }
}

/// The tool `pay`: writes its amount into `ledger` under its call's idempotency key.
fn pay_tool(ledger: &Ledger) -> FnTool {
    let ledger = ledger.clone();
    tool_fn_with_context(
        "pay",
        "Pays an amount.",
        move |cx: ToolContext, args: PayArgs| {
            let ledger = ledger.clone();
            async move {
                ledger.append(&cx.idempotency_key(), args.amount);
                Ok::<_, ToolError>(format!("paid {}", args.amount))
            }
        },
    )
}

/// `desk` transfers to `billing`, which pays 30 and says so in several words.
fn desk(ledger: &Ledger) -> FlowAgent {
    let pay = pay_tool(ledger);
    let billing = ChatModelAgent::builder(
        "billing",
        stateless(vec![
            ScriptStep::tool_call("pay", json!({ "amount": 30 })),
            ScriptStep::text("billing paid 30 euros for you today"),
        ]),
    )
    .description("Pays bills.")
    .tool(pay)
    .build()
    .unwrap();
    let desk = ChatModelAgent::builder("desk", stateless(vec![ScriptStep::transfer("billing")]))
        .description("The front desk.")
        .build()
        .unwrap();
    set_sub_agents(FlowAgent::new(desk), [FlowAgent::new(billing)]).unwrap()
}

/// A clerk whose `refund` needs a human's approval.
fn clerk(ledger: &Ledger) -> FlowAgent {
    let ledger = ledger.clone();
    let refund = tool_fn_with_context(
        "refund",
        "Refunds an amount.",
        move |cx: ToolContext, args: PayArgs| {
            let ledger = ledger.clone();
            async move {
                ledger.append(&cx.idempotency_key(), args.amount);
                Ok::<_, ToolError>(format!("refunded {}", args.amount))
            }
        },
    );
    let clerk = ChatModelAgent::builder(
        "clerk",
        stateless(vec![
            ScriptStep::tool_call("refund", json!({ "amount": 5 })),
            ScriptStep::text("the refund is handled"),
        ]),
    )
    .tool(NeedsApproval::always(Arc::new(refund)))
    .build()
    .unwrap();
    FlowAgent::new(clerk)
}

/// A server of `flows` on an address of its own: on Temporal (the workers of `queue`) when
/// `client` is given, in process otherwise. Gives its base URL.
async fn serve(
    flows: &[(&str, FlowAgent)],
    temporal: Option<(&temporalio_client::Client, &str)>,
) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let mut builder = AppState::builder(InMemoryStore::new())
        .auth(Auth::bearer(TOKEN))
        .turn_routing(TurnRouting::Root);
    for (name, flow) in flows {
        builder = builder.flow(*name, flow.clone());
    }
    if let Some((client, queue)) = temporal {
        builder = builder.temporal(TemporalExecutor::new(client.clone(), queue, base.as_str()));
    }
    let state = builder.build().unwrap();
    tokio::spawn(agentweave_server::serve(listener, state));
    base
}

async fn turn(base: &str, flow: &str, thread: &str, text: &str) -> Vec<Sse> {
    read_sse(
        post(
            base,
            &format!("/v1/flows/{flow}/threads/{thread}/turns"),
            json!({ "message": text }),
        )
        .await,
    )
    .await
}

/// A turn's frames without what differs from run to run (ids, times, the thread's name).
fn shape(frames: &[Sse]) -> Vec<Value> {
    frames
        .iter()
        .map(|f| match f.name.as_str() {
            "chunk" => json!(["chunk", f.data["agent_name"], f.data["content"]]),
            "event" => json!([
                "event",
                f.data["agent_name"],
                f.data["run_path"],
                f.data["message"]["content"],
                f.data["action"],
                f.data["streamed"]
            ]),
            "done" => json!(["done", f.data["output"], f.data["interrupted"]]),
            other => json!([other]),
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_through_the_http_api_runs_as_the_threads_workflow_and_streams_as_in_process() {
    let Some(client) = dev_server().await else {
        return;
    };
    let queue = unique("server");
    let flow = unique("desk");
    let flow = &flow[..24.min(flow.len())];
    let ledger = Ledger::new();
    agentweave_temporal::worker_flows().insert(flow, desk(&ledger));
    start_worker(&client, &queue);
    let on_temporal = serve(&[(flow, desk(&ledger))], Some((&client, &queue))).await;
    let in_process_ledger = Ledger::new();
    let in_process = serve(&[(flow, desk(&in_process_ledger))], None).await;

    let temporal_frames = turn(&on_temporal, flow, "t1", "please pay my bill").await;
    let local_frames = turn(&in_process, flow, "t1", "please pay my bill").await;
    assert_eq!(
        shape(&temporal_frames),
        shape(&local_frames),
        "the same frames on Temporal as in process: {temporal_frames:#?}"
    );
    assert!(
        temporal_frames.iter().filter(|f| f.name == "chunk").count() >= 3,
        "the model's output streamed in pieces: {temporal_frames:#?}"
    );
    assert_eq!(
        temporal_frames.last().unwrap().data["output"],
        "billing paid 30 euros for you today"
    );
    assert_eq!(ledger.lines().len(), 1, "one payment: {:?}", ledger.lines());

    // The thread goes on, and its record is the server's as in process.
    let second = turn(&on_temporal, flow, "t1", "thanks").await;
    assert_eq!(second.last().unwrap().name, "done", "{second:#?}");
    let messages: Value = crate::common::get(&on_temporal, &format!("/v1/flows/{flow}/threads/t1"))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(messages["turns"], 2, "{messages:#}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_the_workflow_waits_on_ends_the_turn_interrupted_and_resume_answers_it() {
    let Some(client) = dev_server().await else {
        return;
    };
    let queue = unique("server");
    let flow = unique("clerk");
    let flow = &flow[..24.min(flow.len())];
    let ledger = Ledger::new();
    agentweave_temporal::worker_flows().insert(flow, clerk(&ledger));
    start_worker(&client, &queue);
    let base = serve(&[(flow, clerk(&ledger))], Some((&client, &queue))).await;

    let asked = turn(&base, flow, "t1", "refund order 7").await;
    let done = &asked.last().unwrap().data;
    assert_eq!(done["interrupted"], true, "{asked:#?}");
    let interrupt = &done["interrupts"][0];
    assert_eq!(
        interrupt["info"]["approval"]["tool"], "refund",
        "the workflow's question: {interrupt:#}"
    );
    assert!(
        ledger.lines().is_empty(),
        "nothing refunded before the answer"
    );

    let resumed = read_sse(
        post(
            &base,
            &format!("/v1/flows/{flow}/threads/t1/resume"),
            json!({ "interrupt_id": interrupt["id"], "data": { "approve": true } }),
        )
        .await,
    )
    .await;
    let done = &resumed.last().unwrap().data;
    assert_eq!(done["output"], "the refund is handled", "{resumed:#?}");
    assert_eq!(ledger.lines().len(), 1, "one refund: {:?}", ledger.lines());
    let said: Vec<&str> = resumed
        .iter()
        .filter(|f| f.name == "event")
        .filter_map(|f| f.data["message"]["content"].as_str())
        .collect();
    assert!(said.contains(&"refunded 5"), "{said:?}");

    // A second resume finds no question.
    let again = post(
        &base,
        &format!("/v1/flows/{flow}/threads/t1/resume"),
        json!({ "interrupt_id": interrupt["id"], "data": { "approve": true } }),
    )
    .await;
    assert_eq!(again.status(), 409, "{:?}", again.text().await);
}

/// A clerk whose `wait` tool says it started (on `started`) and then never ends; a user's
/// `wait` asks for it, anything else is answered with the number of user messages the model
/// was given (the conversation the thread's workflow keeps).
fn waiter(started: tokio::sync::mpsc::UnboundedSender<()>) -> FlowAgent {
    let wait = agentweave_runtime::tool_fn("wait", "Waits.", move |_args: Value| {
        let started = started.clone();
        async move {
            let _ = started.send(());
            futures::future::pending::<()>().await;
            Ok::<_, ToolError>("never".to_owned())
        }
    });
    let model = ScriptedModel::rules().otherwise_with(|request: &ChatRequest| {
        let users: Vec<&str> = request
            .messages
            .iter()
            .filter(|m| m.role == Role::User)
            .map(|m| m.content.as_str())
            .collect();
        let answered = request
            .messages
            .last()
            .is_some_and(|m| m.role != Role::User);
        match users.last() {
            Some(&"wait") if !answered => ScriptStep::tool_call("wait", json!({})),
            _ => ScriptStep::text(format!("{} user messages", users.len())),
        }
    });
    let clerk = ChatModelAgent::builder("clerk", model)
        .tool(wait)
        .build()
        .unwrap();
    FlowAgent::new(clerk)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamed_run_whose_client_goes_away_is_cancelled_on_the_workflow_too() {
    use eventsource_stream::Eventsource;
    use futures::StreamExt;
    let Some(client) = dev_server().await else {
        return;
    };
    let queue = unique("server");
    let flow = unique("waiter");
    let flow = &flow[..24.min(flow.len())];
    let (started, mut heard) = tokio::sync::mpsc::unbounded_channel();
    agentweave_temporal::worker_flows().insert(flow, waiter(started.clone()));
    start_worker(&client, &queue);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    // The tool's call would hold the thread for ten minutes if nothing cancelled it.
    let executor = TemporalExecutor::new(client.clone(), queue.as_str(), base.as_str())
        .tool_timeout(Duration::from_secs(600));
    let state = AppState::builder(InMemoryStore::new())
        .auth(Auth::bearer(TOKEN))
        .turn_routing(TurnRouting::Root)
        .flow(flow, waiter(started))
        .temporal(executor)
        .build()
        .unwrap();
    tokio::spawn(agentweave_server::serve(listener, state));

    let response = post(
        &base,
        &format!("/v1/flows/{flow}/threads/t1/runs"),
        json!({ "message": "wait", "stream": true, "on_disconnect": "cancel" }),
    )
    .await;
    assert_eq!(response.status(), 200);
    let mut events = response.bytes_stream().eventsource();
    let first = events.next().await.unwrap().unwrap();
    assert_eq!(first.event, "turn");
    let run: Value = serde_json::from_str(&first.data).unwrap();
    let run = run["run_id"].as_str().unwrap().to_owned();
    heard.recv().await.expect("the tool started on the worker");
    drop(events);

    let outcome: Value = crate::common::get(
        &base,
        &format!("/v1/flows/{flow}/threads/t1/runs/{run}/wait"),
    )
    .await
    .json()
    .await
    .unwrap();
    assert_eq!(outcome["status"], "cancelled", "{outcome}");

    // The workflow stopped the turn (else the next one would wait behind its tool call) and
    // kept nothing of it: the model is given one user message.
    let next = tokio::time::timeout(Duration::from_secs(120), turn(&base, flow, "t1", "hello"))
        .await
        .expect("the next turn ran: the cancelled one no longer holds the thread's workflow");
    assert_eq!(
        next.last().unwrap().data["output"],
        "1 user messages",
        "{next:#?}"
    );
    let thread: Value = crate::common::get(&base, &format!("/v1/flows/{flow}/threads/t1"))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(
        thread["turns"], 1,
        "nothing recorded of the cancelled turn: {thread:#}"
    );
}

/// `desk` transfers to `billing`, whose `pay` needs a human's approval.
fn approving_desk(ledger: &Ledger) -> FlowAgent {
    let pay = pay_tool(ledger);
    let billing = ChatModelAgent::builder(
        "billing",
        stateless(vec![
            ScriptStep::tool_call("pay", json!({ "amount": 12 })),
            ScriptStep::text("paid"),
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_below_the_root_has_the_same_id_and_the_flow_the_same_tree_as_in_process() {
    let Some(client) = dev_server().await else {
        return;
    };
    let queue = unique("server");
    let flow = unique("approving");
    let flow = &flow[..24.min(flow.len())];
    let ledger = Ledger::new();
    agentweave_temporal::worker_flows().insert(flow, approving_desk(&ledger));
    start_worker(&client, &queue);
    let on_temporal = serve(&[(flow, approving_desk(&ledger))], Some((&client, &queue))).await;
    let in_process = serve(&[(flow, approving_desk(&Ledger::new()))], None).await;

    // The tree routes show the flow's agents, not the Temporal root that runs its turns.
    for route in ["", "/mermaid"] {
        let path = format!("/v1/flows/{flow}{route}");
        let temporal = crate::common::get(&on_temporal, &path)
            .await
            .text()
            .await
            .unwrap();
        let local = crate::common::get(&in_process, &path)
            .await
            .text()
            .await
            .unwrap();
        assert_eq!(temporal, local, "GET {path}");
        assert!(temporal.contains("billing"), "GET {path}: {temporal}");
    }

    let asked = turn(&on_temporal, flow, "t1", "pay my bill").await;
    let asked_locally = turn(&in_process, flow, "t1", "pay my bill").await;
    let id = &asked.last().unwrap().data["interrupts"][0]["id"];
    assert_eq!(
        id,
        &asked_locally.last().unwrap().data["interrupts"][0]["id"],
        "the same interrupt id on Temporal as in process: {asked:#?}"
    );
    assert!(
        id.as_str().is_some_and(|id| id.contains("billing")),
        "the id names the agent that asked, not the root that stands in for the tree: {id}"
    );

    // Answered by that id: through the HTTP API's resume, as in process.
    let resumed = read_sse(
        post(
            &on_temporal,
            &format!("/v1/flows/{flow}/threads/t1/resume"),
            json!({ "interrupt_id": id, "data": { "approve": true } }),
        )
        .await,
    )
    .await;
    assert_eq!(
        resumed.last().unwrap().data["output"],
        "paid",
        "{resumed:#?}"
    );
    assert_eq!(ledger.lines().len(), 1, "one payment: {:?}", ledger.lines());
}

/// Waits until the workflow of the one thread on `queue` has been sent the signal `signal`.
async fn signalled(client: &temporalio_client::Client, queue: &str, signal: &str) {
    use futures::StreamExt;
    let wait = async {
        loop {
            let mut ids = Vec::new();
            let mut listed = client.list_workflows(
                format!("TaskQueue = '{queue}'"),
                temporalio_client::WorkflowListOptions::default(),
            );
            while let Some(Ok(workflow)) = listed.next().await {
                ids.push(workflow.id().to_owned());
            }
            for id in ids {
                let history = agentweave_temporal::Thread::of(client, &id)
                    .history_json()
                    .await;
                let history = String::from_utf8_lossy(history.as_deref().unwrap_or_default());
                if history.contains(&format!("\"{signal}\"")) {
                    return;
                }
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(60), wait)
        .await
        .unwrap_or_else(|_| panic!("the workflow on {queue} was never sent {signal}"));
}

/// A clerk whose `slow` tool says it started (on `started`), waits for `gate`, and ends; the
/// model then says `after the tool`.
fn slow_clerk(
    started: tokio::sync::mpsc::UnboundedSender<()>,
    gate: Arc<tokio::sync::Semaphore>,
) -> FlowAgent {
    let slow = agentweave_runtime::tool_fn("slow", "Takes its time.", move |_args: Value| {
        let (started, gate) = (started.clone(), Arc::clone(&gate));
        async move {
            let _ = started.send(());
            gate.acquire().await.unwrap().forget();
            Ok::<_, ToolError>("slow done".to_owned())
        }
    });
    let clerk = ChatModelAgent::builder(
        "clerk",
        stateless(vec![
            ScriptStep::tool_call("slow", json!({})),
            ScriptStep::text("after the tool"),
        ]),
    )
    .tool(slow)
    .build()
    .unwrap();
    FlowAgent::new(clerk)
}

/// A run of the slow clerk on Temporal (flow named from `prefix`) cancelled `after_tools` while
/// its tool runs: the server, the flow, the run id, the channel that hears the tool start, the
/// tool's gate, and the run's outcome once the tool has finished.
struct CancelledRun {
    base: String,
    flow: String,
    run: String,
    heard: tokio::sync::mpsc::UnboundedReceiver<()>,
    gate: Arc<tokio::sync::Semaphore>,
    outcome: Value,
}

async fn cancelled_after_tools(prefix: &str) -> Option<CancelledRun> {
    let client = dev_server().await?;
    let queue = unique("server");
    let flow = unique(prefix);
    let flow = flow[..24.min(flow.len())].to_owned();
    let (started, mut heard) = tokio::sync::mpsc::unbounded_channel();
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    agentweave_temporal::worker_flows()
        .insert(&flow, slow_clerk(started.clone(), Arc::clone(&gate)));
    start_worker(&client, &queue);
    let base = serve(
        &[(&flow, slow_clerk(started, Arc::clone(&gate)))],
        Some((&client, &queue)),
    )
    .await;
    let created: Value = post(
        &base,
        &format!("/v1/flows/{flow}/threads/t1/runs"),
        json!({ "message": "go" }),
    )
    .await
    .json()
    .await
    .unwrap();
    let run = created["run_id"].as_str().unwrap().to_owned();
    heard.recv().await.expect("the tool started on the worker");
    let cancel = post(
        &base,
        &format!("/v1/flows/{flow}/threads/t1/runs/{run}/cancel"),
        json!({ "mode": "after_tools" }),
    )
    .await;
    assert_eq!(cancel.status(), 202);
    // The workflow hears of the cancel while the tool still runs, then lets it finish.
    signalled(&client, &queue, "cancel_turn").await;
    gate.add_permits(1);
    let outcome: Value = crate::common::get(
        &base,
        &format!("/v1/flows/{flow}/threads/t1/runs/{run}/wait"),
    )
    .await
    .json()
    .await
    .unwrap();
    assert_eq!(outcome["status"], "cancelled", "{outcome}");
    Some(CancelledRun {
        base,
        flow,
        run,
        heard,
        gate,
        outcome,
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_cancelled_after_tools_on_the_workflow_resumes_where_it_stopped() {
    let Some(CancelledRun {
        base,
        flow,
        run,
        mut heard,
        outcome,
        ..
    }) = cancelled_after_tools("slowr").await
    else {
        return;
    };
    assert_eq!(outcome["at_safe_point"], true, "{outcome}");

    // As in process: the run goes on from its safe point, the tool it finished not run again.
    let resumed = post(
        &base,
        &format!("/v1/flows/{flow}/threads/t1/runs/{run}/resume"),
        json!({}),
    )
    .await;
    assert_eq!(resumed.status(), 202);
    let resumed: Value = resumed.json().await.unwrap();
    let next = resumed["run_id"].as_str().unwrap().to_owned();
    let outcome: Value = tokio::time::timeout(
        Duration::from_secs(60),
        crate::common::get(
            &base,
            &format!("/v1/flows/{flow}/threads/t1/runs/{next}/wait"),
        ),
    )
    .await
    .expect("the resumed run ends")
    .json()
    .await
    .unwrap();
    assert_eq!(outcome["status"], "success", "{outcome}");
    assert_eq!(outcome["output"], "after the tool", "{outcome}");
    assert!(
        heard.try_recv().is_err(),
        "the tool the stopped turn finished did not run again"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_cancelled_after_tools_stops_on_the_workflow_at_that_safe_point() {
    let Some(CancelledRun {
        base,
        flow,
        gate,
        outcome,
        ..
    }) = cancelled_after_tools("slow").await
    else {
        return;
    };
    assert_eq!(outcome["cancel_mode"], "after_tools", "{outcome}");

    // The thread goes on: its next turn runs (its tool passes the gate at once).
    gate.add_permits(1);
    let next = turn(&base, &flow, "t1", "again").await;
    let said: Vec<&str> = next
        .iter()
        .filter(|f| f.name == "event")
        .filter_map(|f| f.data["message"]["content"].as_str())
        .collect();
    assert!(
        said.contains(&"after the tool"),
        "the next turn runs: {said:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_threads_budget_on_temporal_refuses_the_crossing_model_call_with_the_public_code() {
    use agentweave_runtime::model::Usage;
    use agentweave_runtime::store::InMemoryRunQueue;
    use agentweave_runtime::{SpendingBudgets, SpendingLimits};
    let Some(client) = dev_server().await else {
        return;
    };
    let queue = unique("server");
    let flow = unique("bot");
    let flow = &flow[..24.min(flow.len())];
    let model = ScriptedModel::rules()
        .otherwise(ScriptStep::text("hello").with_usage(Usage::new(100, 10)))
        .named("m");
    let bot = FlowAgent::new(ChatModelAgent::builder("bot", model).build().unwrap());
    agentweave_temporal::worker_flows().insert(flow, bot.clone());
    start_worker(&client, &queue);
    // The server's budgets: its workers' model activities reserve in them (the server
    // registers them on this process's workers when it is built).
    let budgets = SpendingBudgets::new(Arc::new(InMemoryRunQueue::new()))
        .thread(SpendingLimits::default().max_model_calls(1));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let state = AppState::builder(InMemoryStore::new())
        .auth(Auth::bearer(TOKEN))
        .flow(flow, bot)
        .spending(budgets)
        .temporal(TemporalExecutor::new(
            client.clone(),
            queue.as_str(),
            base.as_str(),
        ))
        .build()
        .unwrap();
    tokio::spawn(agentweave_server::serve(listener, state));

    let first = turn(&base, flow, "t1", "hi").await;
    assert_eq!(first.last().unwrap().data["output"], "hello", "{first:#?}");
    // The thread's second model call would cross its limit of one: refused on the worker,
    // and the client gets the code a refusal in process gets.
    let second = turn(&base, flow, "t1", "hi again").await;
    let error = second
        .iter()
        .filter_map(|f| f.data.get("error"))
        .find(|e| e["code"] == "budget_exceeded")
        .unwrap_or_else(|| panic!("a budget error: {second:#?}"));
    assert_eq!(
        error["message"],
        "This request reached the assistant's budget and was stopped."
    );
    let view: Value = crate::common::get(&base, &format!("/v1/flows/{flow}/threads/t1"))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(view["spent"]["model_calls"], 1, "{view:#}");
    assert_eq!(view["spent"]["input_tokens"], 100, "{view:#}");
}
