//! The engine replays a run from its journal, bit for bit: random scripted flows (LLM agents
//! that call paying tools, ask for approval, transfer to their sub-agents and call whole
//! flows as agent tools; sequential, parallel and loop workflows) run once to their end on a
//! deterministic host ([`ManualHost`]: ids count from 1, the clock stands still), then again on
//! a fresh store where the worker "dies" at a random event (the turn is forgotten: nothing of
//! it runs any more, its lease is never given back) and another runner recovers it from the
//! journal. The recovered turn delivers the same events as the uninterrupted one, JSON for
//! JSON (parallel lanes' events compared lane by lane: their interleaving is the executor's),
//! records the same thread, and makes every payment once.
//!
//! `AGENTFLOW_REPLAY_FLOWS` sets the number of random flows (default 1,000; CI runs the
//! default).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agentweave_runtime::host::ManualHost;
use agentweave_runtime::model::{ChatRequest, ScriptStep, ScriptedModel};
use agentweave_runtime::store::{RecordEnd, ThreadRecord};
use agentweave_runtime::{
    set_sub_agents, tool_fn_with_context, AgentEvent, AgentTool, ChatModelAgent, Durability,
    FlowAgent, InMemoryStore, Loop, Message, Parallel, RecoverError, Role, Runner, Sequential,
    ToolContext, ToolError, Turn, TurnRequest,
};
use futures::StreamExt;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde::Deserialize;
use serde_json::json;

/// A node of a random flow.
#[derive(Debug, Clone)]
enum Node {
    /// A ChatModelAgent answering from a script, with sub-agents it may transfer to.
    Llm { steps: Vec<Step>, subs: Vec<Node> },
    /// A workflow over its sub-agents.
    Flow { kind: FlowKind, subs: Vec<Node> },
}

#[derive(Debug, Clone, Copy)]
enum FlowKind {
    Sequential,
    Parallel,
    Loop,
}

/// What a scripted model answers at one call.
#[derive(Debug, Clone)]
enum Step {
    /// Calls its `pay` tool (a payment under the call's idempotency key).
    Pay(u32),
    /// Calls its `approve` tool, which interrupts the run for a human's answer.
    Approve,
    /// Calls its agent tool (a one-agent flow that says something).
    AskHelper,
    /// Transfers to its sub-agent (by index, modulo the number of sub-agents).
    Transfer(usize),
    /// Says something and ends its turn.
    Say(u32),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        3 => (1u32..100).prop_map(Step::Pay),
        1 => Just(Step::Approve),
        1 => Just(Step::AskHelper),
        2 => (0usize..3).prop_map(Step::Transfer),
        3 => (0u32..1000).prop_map(Step::Say),
    ]
}

fn node() -> impl Strategy<Value = Node> {
    let leaf = prop::collection::vec(step(), 1..5).prop_map(|steps| Node::Llm {
        steps,
        subs: Vec::new(),
    });
    leaf.prop_recursive(3, 12, 3, |inner| {
        prop_oneof![
            (
                prop::collection::vec(step(), 1..5),
                prop::collection::vec(inner.clone(), 0..3)
            )
                .prop_map(|(steps, subs)| Node::Llm { steps, subs }),
            (
                prop_oneof![
                    Just(FlowKind::Sequential),
                    Just(FlowKind::Parallel),
                    Just(FlowKind::Loop)
                ],
                prop::collection::vec(inner, 1..3)
            )
                .prop_map(|(kind, subs)| Node::Flow { kind, subs }),
        ]
    })
}

/// The payments the tools made: idempotency key -> amount, and every call made.
#[derive(Default)]
struct Ledger {
    paid: BTreeMap<String, u32>,
    calls: usize,
}

#[derive(Deserialize, schemars::JsonSchema)]
struct PayArgs {
    amount: u32,
}

#[derive(Deserialize, schemars::JsonSchema)]
struct ApproveArgs {}

/// Builds the flow `node` describes; names are `a1`, `a2`, ... in depth-first order.
fn build(
    node: &Node,
    ledger: &Arc<Mutex<Ledger>>,
    next: &mut usize,
    parallel: &mut bool,
) -> FlowAgent {
    *next += 1;
    let name = format!("a{next}");
    match node {
        Node::Llm { steps, subs } => {
            let subs: Vec<FlowAgent> = subs
                .iter()
                .map(|s| build(s, ledger, next, parallel))
                .collect();
            *next += 1;
            let helper_name = format!("helper{next}");
            let script: Vec<ScriptStep> = steps
                .iter()
                .filter_map(|s| match s {
                    Step::Pay(amount) => {
                        Some(ScriptStep::tool_call("pay", json!({ "amount": amount })))
                    }
                    Step::Approve => Some(ScriptStep::tool_call("approve", json!({}))),
                    Step::AskHelper => Some(ScriptStep::tool_call(
                        helper_name.as_str(),
                        json!({ "request": "help" }),
                    )),
                    Step::Transfer(i) if !subs.is_empty() => {
                        Some(ScriptStep::transfer(subs[i % subs.len()].name()))
                    }
                    Step::Transfer(_) => None,
                    Step::Say(n) => Some(ScriptStep::text(format!("{name} says {n}"))),
                })
                .chain([ScriptStep::text(format!("{name} is done"))])
                .collect();
            let paying = Arc::clone(ledger);
            let pay = tool_fn_with_context(
                "pay",
                "Pays an amount.",
                move |cx: ToolContext, args: PayArgs| {
                    let ledger = Arc::clone(&paying);
                    async move {
                        let mut ledger = ledger.lock().unwrap();
                        ledger.calls += 1;
                        // A real payment service keeps one payment per key.
                        ledger
                            .paid
                            .entry(cx.idempotency_key())
                            .or_insert(args.amount);
                        Ok::<_, ToolError>(format!("paid {}", args.amount))
                    }
                },
            );
            let approve = tool_fn_with_context(
                "approve",
                "Asks a human to approve.",
                |cx: ToolContext, _: ApproveArgs| async move {
                    match cx.resume_data() {
                        Some(answer) => Ok(format!("approved: {answer}")),
                        None => Err(cx.interrupt(json!({ "asks": "approve?" }))),
                    }
                },
            );
            let helper = FlowAgent::new(
                ChatModelAgent::builder(
                    helper_name.as_str(),
                    stateless(vec![ScriptStep::text(format!("{helper_name} helped"))]),
                )
                .build()
                .unwrap(),
            );
            let agent = ChatModelAgent::builder(name.as_str(), stateless(script))
                .tool(pay)
                .tool(approve)
                .tool(AgentTool::new(helper))
                .build()
                .unwrap();
            if subs.is_empty() {
                FlowAgent::new(agent)
            } else {
                set_sub_agents(FlowAgent::new(agent), subs).unwrap()
            }
        }
        Node::Flow { kind, subs } => {
            let subs: Vec<FlowAgent> = subs
                .iter()
                .map(|s| build(s, ledger, next, parallel))
                .collect();
            match kind {
                FlowKind::Sequential => Sequential::new(name).with_sub_agents(subs).unwrap(),
                FlowKind::Parallel => {
                    *parallel = true;
                    Parallel::new(name).with_sub_agents(subs).unwrap()
                }
                FlowKind::Loop => Loop::new(name, 2).with_sub_agents(subs).unwrap(),
            }
        }
    }
}

/// A model that answers like a real one, from the conversation alone: the `k`-th step of
/// `script` when the request holds `k` earlier answers of this agent (a scripted model that
/// counted its own calls would answer a recovered run out of step, since the journal answers
/// the calls made before the crash).
fn stateless(script: Vec<ScriptStep>) -> ScriptedModel {
    ScriptedModel::rules().otherwise_with(move |request: &ChatRequest| {
        let answered = request
            .messages
            .iter()
            .filter(|m| m.role == Role::Assistant)
            .count();
        script
            .get(answered)
            .cloned()
            .unwrap_or_else(|| ScriptStep::text("nothing more to say"))
    })
}

/// The runner of one flow, on a deterministic host, journaling every step.
fn runner(flow: FlowAgent, store: &InMemoryStore) -> Runner {
    Runner::builder(flow)
        .stores(store.clone())
        .journal_store(store.clone())
        .durability(Durability::Sync)
        .lease(Duration::from_millis(5))
        .host(Arc::new(ManualHost::new()))
        .build()
}

/// An event as its documented JSON, to compare bit for bit.
fn json_of(event: &AgentEvent) -> String {
    serde_json::to_string(&event.to_json().expect("events are whole, not streamed")).unwrap()
}

/// The events in the order to compare: as delivered, or lane by lane (a stable sort by run
/// path) when the flow has a parallel workflow.
fn comparable(events: &[AgentEvent], parallel: bool) -> Vec<String> {
    let mut out: Vec<(String, String)> = events
        .iter()
        .map(|e| (e.run_path().to_string(), json_of(e)))
        .collect();
    if parallel {
        out.sort_by(|a, b| a.0.cmp(&b.0));
    }
    out.into_iter().map(|(_, e)| e).collect()
}

/// A record without what is by design unique to the attempt that wrote it: its time, and the
/// nonce of an interrupted part's checkpoint id (`THREAD.turn-N.NONCE`: a recovered turn saves
/// a checkpoint of its own, so two racing workers never write the same one).
fn timeless(mut record: ThreadRecord) -> ThreadRecord {
    record.at_ms = 0;
    if let RecordEnd::Interrupted { checkpoint_id, .. } = &mut record.end {
        if let Some(dot) = checkpoint_id.rfind('.') {
            checkpoint_id.truncate(dot);
        }
    }
    record
}

struct Ran {
    /// The events delivered (`None`: the dead worker had recorded the whole turn before it
    /// died, so there was nothing to recover and the thread's record is the turn).
    events: Option<Vec<String>>,
    records: Vec<ThreadRecord>,
    paid: BTreeMap<String, u32>,
}

/// Runs the flow `node` describes to its end.
async fn uninterrupted(node: &Node) -> (Ran, bool) {
    let ledger = Arc::new(Mutex::new(Ledger::default()));
    let mut parallel = false;
    let flow = build(node, &ledger, &mut 0, &mut parallel);
    let store = InMemoryStore::new();
    let runner = runner(flow, &store);
    let turn = runner
        .turn(TurnRequest::new("t", Message::user("go")))
        .await
        .unwrap();
    let events: Vec<AgentEvent> = turn.collect().await;
    let records = runner.thread("t").records().await.unwrap();
    let paid = ledger.lock().unwrap().paid.clone();
    let ran = Ran {
        events: Some(comparable(&events, parallel)),
        records: records.into_iter().map(timeless).collect(),
        paid,
    };
    (ran, parallel)
}

/// Runs the flow, lets its worker die after `seen` events, and recovers the turn with another
/// runner (a new host too: what a new process has).
async fn died_and_recovered(node: &Node, seen: usize, parallel: bool) -> Ran {
    let ledger = Arc::new(Mutex::new(Ledger::default()));
    let store = InMemoryStore::new();
    let dying = runner(build(node, &ledger, &mut 0, &mut false), &store);
    let mut turn: Turn = dying
        .turn(TurnRequest::new("t", Message::user("go")))
        .await
        .unwrap();
    let mut before = Vec::new();
    for _ in 0..seen {
        match turn.next().await {
            Some(event) => before.push(event),
            None => break,
        }
    }
    std::mem::forget(turn);
    let other = runner(build(node, &ledger, &mut 0, &mut false), &store);
    let recovered = loop {
        match other.recover("t").await {
            Err(RecoverError::Leased { .. }) => tokio::time::sleep(Duration::from_millis(2)).await,
            other => break other.unwrap(),
        }
    };
    // Nothing to recover: either the dead turn had recorded its end already (an interrupt is
    // recorded before it reaches the caller: the thread's record is then the whole turn), or
    // it had not started anything (the client sends again).
    let recorded_before =
        recovered.is_none() && !other.thread("t").records().await.unwrap().is_empty();
    let events: Vec<AgentEvent> = match recovered {
        Some(turn) => turn.collect().await,
        None if recorded_before => Vec::new(),
        None => {
            assert!(
                before.is_empty(),
                "events were seen, yet nothing to recover or recorded"
            );
            other
                .turn(TurnRequest::new("t", Message::user("go")))
                .await
                .unwrap()
                .collect()
                .await
        }
    };
    let records = other.thread("t").records().await.unwrap();
    // Nothing left pending that an approval could pay again: the only pending checkpoint is
    // the one the thread's last record ends on, if it is interrupted.
    let pending: Vec<String> = other
        .checkpoints()
        .pending(100)
        .await
        .unwrap()
        .into_iter()
        .map(|p| p.id)
        .collect();
    let waiting: Vec<String> = records
        .last()
        .and_then(|r| match &r.end {
            RecordEnd::Interrupted { checkpoint_id, .. } => Some(checkpoint_id.clone()),
            _ => None,
        })
        .into_iter()
        .collect();
    assert_eq!(
        pending, waiting,
        "died after {seen} events: a checkpoint left pending"
    );
    let paid = ledger.lock().unwrap().paid.clone();
    Ran {
        events: (!recorded_before).then(|| comparable(&events, parallel)),
        records: records.into_iter().map(timeless).collect(),
        paid,
    }
}

#[test]
fn random_flows_replay_from_their_journal_bit_for_bit() {
    let flows: u32 = std::env::var("AGENTFLOW_REPLAY_FLOWS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1000);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut runner = TestRunner::new(Config {
        cases: flows,
        failure_persistence: None,
        ..Config::default()
    });
    let strategy = (node(), any::<prop::sample::Index>());
    runner
        .run(&strategy, |(node, at)| {
            rt.block_on(async {
                let (reference, parallel) = uninterrupted(&node).await;
                // The same flow again, on a fresh host: the same events, bit for bit.
                let (again, _) = uninterrupted(&node).await;
                prop_assert_eq!(&again.events, &reference.events, "a second run differs");
                // Dies at a random event (or before any), then recovered from the journal.
                let seen = at.index(reference.events.as_ref().map_or(0, Vec::len) + 1);
                let recovered = died_and_recovered(&node, seen, parallel).await;
                if let Some(events) = &recovered.events {
                    prop_assert_eq!(
                        Some(events),
                        reference.events.as_ref(),
                        "recovered after {} events",
                        seen
                    );
                }
                prop_assert_eq!(&recovered.records, &reference.records);
                prop_assert_eq!(
                    recovered.paid.len(),
                    reference.paid.len(),
                    "a payment made again under a new key"
                );
                Ok(())
            })
        })
        .unwrap();
}
