//! Runs as objects: a turn started with `Runner::start` runs as the runner's task; its
//! events are kept for any reader (from the start or after an event id); its outcome is waited
//! for without reading; cancel modes stop it where they promise and a resume continues it to
//! the same record as an undisturbed run; double-texting strategies with two concurrent
//! callers leave exactly the record and tool ledger they promise.
//!
//! No timing: the model and the tool stop at gates the test opens, and say when they got there.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agentweave_runtime::model::{ChatRequest, ModelError, ModelStream};
use agentweave_runtime::RunnerBuilder;
use agentweave_runtime::TurnRequest;
use agentweave_runtime::{
    tool_fn, AttachError, CancelError, CancelMode, ChatModel, ChatModelAgent, DoubleText,
    FlowAgent, InMemoryStore, Message, Role, RunItem, RunOutcome, RunStatus, Runner, ThreadError,
    ToolCall,
};
use async_trait::async_trait;
use futures::StreamExt;
use tokio::sync::{mpsc, Mutex as AsyncMutex, Semaphore};

/// Where the model and the tool stop, and what they say when they get there.
struct Gates {
    said: mpsc::UnboundedSender<&'static str>,
    model_closed: AtomicBool,
    model: Semaphore,
    tool_closed: AtomicBool,
    tool: Semaphore,
    ledger: Mutex<Vec<String>>,
}

impl Gates {
    fn new() -> (Arc<Gates>, mpsc::UnboundedReceiver<&'static str>) {
        let (said, heard) = mpsc::unbounded_channel();
        let gates = Arc::new(Gates {
            said,
            model_closed: AtomicBool::new(false),
            model: Semaphore::new(0),
            tool_closed: AtomicBool::new(false),
            tool: Semaphore::new(0),
            ledger: Mutex::new(Vec::new()),
        });
        (gates, heard)
    }

    fn ledger(&self) -> Vec<String> {
        self.ledger.lock().unwrap().clone()
    }
}

/// A model that calls `lookup` once per user message, then answers with its result; streamed
/// in two chunks, stopping between them while its gate is closed.
struct DeskModel(Arc<Gates>);

impl DeskModel {
    fn reply(request: &ChatRequest) -> Message {
        let users = request
            .messages
            .iter()
            .filter(|m| m.role == Role::User)
            .count();
        let last_user = request
            .messages
            .iter()
            .rposition(|m| m.role == Role::User)
            .unwrap_or(0);
        let question = request.messages[last_user].content.clone();
        match request.messages[last_user..]
            .iter()
            .find(|m| m.role == Role::Tool)
        {
            None => Message::assistant_tool_calls(
                format!("looking up {question}"),
                vec![ToolCall::new(
                    format!("call-{users}"),
                    "lookup",
                    format!("{{\"q\":\"{question}\"}}"),
                )],
            ),
            Some(result) => Message::assistant(format!("answer: {}", result.content)),
        }
    }
}

#[async_trait]
impl ChatModel for DeskModel {
    fn model_name(&self) -> &str {
        "desk"
    }

    async fn generate(&self, request: &ChatRequest) -> Result<Message, ModelError> {
        Ok(Self::reply(request))
    }

    async fn stream(&self, request: &ChatRequest) -> Result<ModelStream, ModelError> {
        let whole = Self::reply(request);
        let (a, b) = whole.content.split_at(whole.content.len() / 2);
        let first = Message::assistant(a);
        let mut second = Message::assistant(b);
        second.tool_calls = whole.tool_calls.clone();
        let gates = Arc::clone(&self.0);
        let rest = futures::stream::once(async move {
            if gates.model_closed.load(Ordering::SeqCst) {
                let _ = gates.said.send("model half streamed");
                gates.model.acquire().await.unwrap().forget();
            }
            Ok(second)
        });
        Ok(futures::stream::once(async move { Ok(first) })
            .chain(rest)
            .boxed())
    }
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Lookup {
    q: String,
}

fn desk(gates: &Arc<Gates>) -> Runner {
    let tool_gates = Arc::clone(gates);
    let lookup = tool_fn("lookup", "Looks a question up.", move |args: Lookup| {
        let gates = Arc::clone(&tool_gates);
        async move {
            gates
                .ledger
                .lock()
                .unwrap()
                .push(format!("start {}", args.q));
            if gates.tool_closed.load(Ordering::SeqCst) {
                let _ = gates.said.send("tool running");
                gates.tool.acquire().await.unwrap().forget();
            }
            gates.ledger.lock().unwrap().push(format!("end {}", args.q));
            Ok::<_, std::convert::Infallible>(format!("found {}", args.q))
        }
    });
    let agent = ChatModelAgent::builder("desk", DeskModel(Arc::clone(gates)))
        .tool(lookup)
        .build()
        .unwrap();
    Runner::builder(FlowAgent::new(agent))
        .stores(InMemoryStore::new())
        .streaming(true)
        .build()
}

/// A thread's messages as (role, content, tool call ids) for comparing records.
async fn record(runner: &Runner, thread: &str) -> Vec<(Role, String, Vec<String>)> {
    runner
        .thread(thread)
        .messages()
        .await
        .unwrap()
        .into_iter()
        .map(|m| {
            let ids = m.message.tool_calls.iter().map(|c| c.id.clone()).collect();
            (m.message.role, m.message.content, ids)
        })
        .collect()
}

/// The record of one undisturbed turn asking `q`.
async fn undisturbed(q: &str) -> Vec<(Role, String, Vec<String>)> {
    let (gates, _heard) = Gates::new();
    let runner = desk(&gates);
    let run = runner
        .start(TurnRequest::new("calm", Message::user(q)).if_busy(DoubleText::Reject))
        .await
        .unwrap();
    assert!(matches!(run.wait().await, RunOutcome::Success { .. }));
    record(&runner, "calm").await
}

#[tokio::test]
async fn a_run_keeps_its_events_for_any_reader_and_gives_its_outcome() {
    let (gates, _heard) = Gates::new();
    let runner = desk(&gates);
    let run = runner
        .start(TurnRequest::new("t1", Message::user("kettle")).if_busy(DoubleText::Reject))
        .await
        .unwrap();
    let outcome = run.wait().await;
    let RunOutcome::Success { answer, .. } = &outcome else {
        panic!("{outcome:?}")
    };
    assert_eq!(answer.as_ref().unwrap().content, "answer: found kettle");
    assert_eq!(run.status(), RunStatus::Success);

    // From the start: Started first, Ended last, ids 1, 2, 3... in order.
    let all: Vec<_> = run.attach(None).unwrap().collect().await;
    assert!(matches!(all[0].item, RunItem::Started { turn: 0, .. }));
    assert_eq!(all.last().unwrap().item, RunItem::Ended(outcome.clone()));
    for (k, e) in all.iter().enumerate() {
        assert_eq!(e.id, k as u64 + 1);
    }
    let chunks: String = all
        .iter()
        .filter_map(|e| match &e.item {
            RunItem::Chunk { content, .. } => Some(content.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(chunks, "looking up kettleanswer: found kettle");

    // After each id: exactly the rest.
    for k in 0..all.len() as u64 {
        let rest: Vec<_> = run.attach(Some(k)).unwrap().collect().await;
        assert_eq!(rest, all[k as usize..]);
    }
    let last = all.len() as u64;
    // After the last event of an ended run: the stream ends at once.
    assert!(run.attach(Some(last)).unwrap().next().await.is_none());
    assert_eq!(
        run.attach(Some(last + 1)).err().unwrap(),
        AttachError::UnknownEvent {
            run: run.id().to_owned(),
            id: last + 1,
            last
        }
    );

    let runs = runner.thread("t1").runs();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].status, RunStatus::Success);
    assert_eq!(runner.run_handle(run.id()).unwrap().id(), run.id());
    assert!(matches!(
        run.cancel(CancelMode::IMMEDIATE, None),
        Err(CancelError::Ended { .. })
    ));
}

#[tokio::test]
async fn a_reader_attached_while_it_runs_sees_it_live() {
    let (gates, mut heard) = Gates::new();
    gates.model_closed.store(true, Ordering::SeqCst);
    let runner = desk(&gates);
    let run = runner
        .start(TurnRequest::new("t1", Message::user("kettle")).if_busy(DoubleText::Reject))
        .await
        .unwrap();
    assert_eq!(heard.recv().await, Some("model half streamed"));
    let live = run.attach(None).unwrap();
    gates.model_closed.store(false, Ordering::SeqCst);
    gates.model.add_permits(1);
    let seen: Vec<_> = live.collect().await;
    let after: Vec<_> = run.attach(None).unwrap().collect().await;
    assert_eq!(seen, after);
    assert!(matches!(
        seen.last().unwrap().item,
        RunItem::Ended(RunOutcome::Success { .. })
    ));
}

#[tokio::test]
async fn after_model_stops_once_the_half_streamed_reply_is_in_and_resumes_to_the_same_record() {
    let (gates, mut heard) = Gates::new();
    gates.model_closed.store(true, Ordering::SeqCst);
    let runner = desk(&gates);
    let run = runner
        .start(TurnRequest::new("calm", Message::user("kettle")).if_busy(DoubleText::Reject))
        .await
        .unwrap();
    assert_eq!(heard.recv().await, Some("model half streamed"));
    run.cancel(CancelMode::AFTER_MODEL, None).unwrap();
    gates.model_closed.store(false, Ordering::SeqCst);
    gates.model.add_permits(1);
    assert_eq!(
        run.wait().await,
        RunOutcome::Cancelled {
            mode: CancelMode::AFTER_MODEL,
            at_safe_point: true,
            before_start: false,
        }
    );
    // The reply is kept, its tool call did not run.
    assert!(gates.ledger().is_empty());
    let kept = record(&runner, "calm").await;
    assert_eq!(kept.len(), 2);
    assert_eq!(kept[1].2, vec!["call-1".to_owned()]);

    let resumed = runner
        .start(TurnRequest::again(&run).unwrap())
        .await
        .unwrap();
    assert!(matches!(resumed.wait().await, RunOutcome::Success { .. }));
    assert_eq!(gates.ledger(), ["start kettle", "end kettle"]);
    assert_eq!(record(&runner, "calm").await, undisturbed("kettle").await);
}

#[tokio::test]
async fn after_tools_lets_the_running_tool_finish_then_stops_and_resumes_to_the_same_record() {
    let (gates, mut heard) = Gates::new();
    gates.tool_closed.store(true, Ordering::SeqCst);
    let runner = desk(&gates);
    let run = runner
        .start(TurnRequest::new("calm", Message::user("kettle")).if_busy(DoubleText::Reject))
        .await
        .unwrap();
    assert_eq!(heard.recv().await, Some("tool running"));
    run.cancel(CancelMode::AFTER_TOOLS, None).unwrap();
    gates.tool_closed.store(false, Ordering::SeqCst);
    gates.tool.add_permits(1);
    assert_eq!(
        run.wait().await,
        RunOutcome::Cancelled {
            mode: CancelMode::AFTER_TOOLS,
            at_safe_point: true,
            before_start: false,
        }
    );
    assert_eq!(gates.ledger(), ["start kettle", "end kettle"]);
    let kept = record(&runner, "calm").await;
    assert_eq!(kept.len(), 3, "{kept:?}");
    assert_eq!(kept[2].0, Role::Tool);

    let resumed = runner
        .start(TurnRequest::again(&run).unwrap())
        .await
        .unwrap();
    assert!(matches!(resumed.wait().await, RunOutcome::Success { .. }));
    // The tool did not run again.
    assert_eq!(gates.ledger(), ["start kettle", "end kettle"]);
    assert_eq!(record(&runner, "calm").await, undisturbed("kettle").await);
}

#[tokio::test]
async fn after_model_arriving_during_tool_calls_stops_at_the_next_model_calls_end() {
    // Eino's `CancelAfterChatModel`: the running tool calls finish, the model is asked once
    // more, and the run stops when that call ends (its reply kept), here a final answer.
    let (gates, mut heard) = Gates::new();
    gates.tool_closed.store(true, Ordering::SeqCst);
    let runner = desk(&gates);
    let run = runner
        .start(TurnRequest::new("calm", Message::user("kettle")).if_busy(DoubleText::Reject))
        .await
        .unwrap();
    assert_eq!(heard.recv().await, Some("tool running"));
    run.cancel(CancelMode::AFTER_MODEL, None).unwrap();
    gates.tool_closed.store(false, Ordering::SeqCst);
    gates.tool.add_permits(1);
    assert_eq!(
        run.wait().await,
        RunOutcome::Cancelled {
            mode: CancelMode::AFTER_MODEL,
            at_safe_point: true,
            before_start: false
        }
    );
    assert_eq!(gates.ledger(), ["start kettle", "end kettle"]);
    // The second model call's reply is kept: the record is already the whole turn.
    let kept = record(&runner, "calm").await;
    assert_eq!(kept, undisturbed("kettle").await);

    // Resumed, the agent ends with that answer: no tool and no model call again.
    let resumed = runner
        .start(TurnRequest::again(&run).unwrap())
        .await
        .unwrap();
    let outcome = resumed.wait().await;
    let RunOutcome::Success { answer, .. } = &outcome else {
        panic!("{outcome:?}")
    };
    // The turn's answer is the one the stopped part kept.
    assert_eq!(
        answer.as_ref().map(|m| m.content.as_str()),
        Some("answer: found kettle")
    );
    assert_eq!(gates.ledger(), ["start kettle", "end kettle"]);
    assert_eq!(record(&runner, "calm").await, undisturbed("kettle").await);
}

#[tokio::test]
async fn immediate_drops_the_half_streamed_call_records_nothing_and_resumes_from_the_start() {
    let (gates, mut heard) = Gates::new();
    gates.model_closed.store(true, Ordering::SeqCst);
    let runner = desk(&gates);
    let run = runner
        .start(TurnRequest::new("calm", Message::user("kettle")).if_busy(DoubleText::Reject))
        .await
        .unwrap();
    assert_eq!(heard.recv().await, Some("model half streamed"));
    run.cancel(CancelMode::IMMEDIATE, None).unwrap();
    assert_eq!(
        run.wait().await,
        RunOutcome::Cancelled {
            mode: CancelMode::IMMEDIATE,
            at_safe_point: false,
            before_start: false,
        }
    );
    assert!(record(&runner, "calm").await.is_empty());
    gates.model_closed.store(false, Ordering::SeqCst);
    let resumed = runner
        .start(TurnRequest::again(&run).unwrap())
        .await
        .unwrap();
    assert!(matches!(resumed.wait().await, RunOutcome::Success { .. }));
    assert_eq!(record(&runner, "calm").await, undisturbed("kettle").await);
    // A run that did not end cancelled is not resumed this way.
    assert!(TurnRequest::again(&resumed).is_err());
}

#[tokio::test]
async fn a_timeout_escalates_a_safe_point_cancel_to_immediate() {
    let (gates, mut heard) = Gates::new();
    gates.model_closed.store(true, Ordering::SeqCst);
    let runner = desk(&gates);
    let run = runner
        .start(TurnRequest::new("t1", Message::user("kettle")).if_busy(DoubleText::Reject))
        .await
        .unwrap();
    assert_eq!(heard.recv().await, Some("model half streamed"));
    // The model never finishes: the safe point never comes.
    run.cancel(CancelMode::AFTER_TOOLS, Some(Duration::from_millis(20)))
        .unwrap();
    assert_eq!(
        run.wait().await,
        RunOutcome::Cancelled {
            mode: CancelMode::AFTER_TOOLS | CancelMode::IMMEDIATE,
            at_safe_point: false,
            before_start: false,
        }
    );
    assert!(record(&runner, "t1").await.is_empty());
}

/// Starts run A on thread `t` held at its tool, then a second message with `strategy` from a
/// second caller; gives both outcomes (B's start error, if refused).
async fn two_callers(
    strategy: DoubleText,
) -> (
    Runner,
    Arc<Gates>,
    RunOutcome,
    Result<RunOutcome, ThreadError>,
) {
    let (gates, mut heard) = Gates::new();
    gates.tool_closed.store(true, Ordering::SeqCst);
    let runner = desk(&gates);
    let first = runner
        .start(TurnRequest::new("t", Message::user("kettle")).if_busy(DoubleText::Reject))
        .await
        .unwrap();
    assert_eq!(heard.recv().await, Some("tool running"));
    let second_caller = {
        let runner = runner.clone();
        tokio::spawn(async move {
            runner
                .start(TurnRequest::new("t", Message::user("toaster")).if_busy(strategy))
                .await
        })
    };
    let second = second_caller.await.unwrap();
    if let Ok(second) = &second {
        assert!(!second.status().is_final());
    }
    // Let every tool call through from now on.
    gates.tool_closed.store(false, Ordering::SeqCst);
    gates.tool.add_permits(1);
    let a = first.wait().await;
    let b = match second {
        Ok(run) => Ok(run.wait().await),
        Err(e) => Err(e),
    };
    (runner, gates, a, b)
}

fn contents(record: &[(Role, String, Vec<String>)]) -> Vec<String> {
    record.iter().map(|(_, c, _)| c.clone()).collect()
}

#[tokio::test]
async fn reject_refuses_the_second_message_and_runs_nothing_of_it() {
    let (runner, gates, a, b) = two_callers(DoubleText::Reject).await;
    assert!(matches!(a, RunOutcome::Success { .. }));
    assert!(matches!(b, Err(ThreadError::Busy { .. })));
    assert_eq!(gates.ledger(), ["start kettle", "end kettle"]);
    assert_eq!(
        contents(&record(&runner, "t").await),
        [
            "kettle",
            "looking up kettle",
            "found kettle",
            "answer: found kettle"
        ]
    );
    assert_eq!(runner.thread("t").runs().len(), 1);
}

#[tokio::test]
async fn enqueue_runs_the_second_message_after_the_first_in_order() {
    let (runner, gates, a, b) = two_callers(DoubleText::Enqueue).await;
    assert!(matches!(a, RunOutcome::Success { .. }));
    assert!(matches!(b, Ok(RunOutcome::Success { .. })));
    assert_eq!(
        gates.ledger(),
        ["start kettle", "end kettle", "start toaster", "end toaster"]
    );
    assert_eq!(
        contents(&record(&runner, "t").await),
        [
            "kettle",
            "looking up kettle",
            "found kettle",
            "answer: found kettle",
            "toaster",
            "looking up toaster",
            "found toaster",
            "answer: found toaster"
        ]
    );
}

#[tokio::test]
async fn interrupt_keeps_the_first_runs_finished_steps_and_runs_the_second_with_them() {
    let (runner, gates, a, b) = two_callers(DoubleText::Interrupt).await;
    assert!(
        matches!(
            a,
            RunOutcome::Cancelled {
                at_safe_point: true,
                ..
            }
        ),
        "{a:?}"
    );
    assert!(matches!(b, Ok(RunOutcome::Success { .. })), "{b:?}");
    // The running tool finished; the first run asked the model nothing more.
    assert_eq!(
        gates.ledger(),
        ["start kettle", "end kettle", "start toaster", "end toaster"]
    );
    assert_eq!(
        contents(&record(&runner, "t").await),
        [
            "kettle",
            "looking up kettle",
            "found kettle",
            "toaster",
            "looking up toaster",
            "found toaster",
            "answer: found toaster"
        ]
    );
    // Its checkpoint is no longer waiting.
    assert!(runner.checkpoints().pending(10).await.unwrap().is_empty());
}

#[tokio::test]
async fn rollback_drops_the_first_run_and_records_only_the_second() {
    let (runner, gates, a, b) = two_callers(DoubleText::Rollback).await;
    assert!(
        matches!(
            a,
            RunOutcome::Cancelled {
                at_safe_point: false,
                ..
            }
        ),
        "{a:?}"
    );
    assert!(matches!(b, Ok(RunOutcome::Success { .. })), "{b:?}");
    // The first tool call was dropped while it ran.
    assert_eq!(
        gates.ledger(),
        ["start kettle", "start toaster", "end toaster"]
    );
    assert_eq!(
        contents(&record(&runner, "t").await),
        [
            "toaster",
            "looking up toaster",
            "found toaster",
            "answer: found toaster"
        ]
    );
}

#[tokio::test]
async fn turn_with_enqueue_waits_for_the_running_run() {
    let (gates, mut heard) = Gates::new();
    gates.tool_closed.store(true, Ordering::SeqCst);
    let runner = desk(&gates);
    let first = runner
        .start(TurnRequest::new("t", Message::user("kettle")).if_busy(DoubleText::Reject))
        .await
        .unwrap();
    assert_eq!(heard.recv().await, Some("tool running"));
    assert!(matches!(
        runner
            .turn(TurnRequest::new("t", Message::user("x")).if_busy(DoubleText::Reject))
            .await,
        Err(ThreadError::Busy { .. })
    ));
    let order = Arc::new(AsyncMutex::new(Vec::new()));
    let second = {
        let runner = runner.clone();
        let order = Arc::clone(&order);
        tokio::spawn(async move {
            let turn = runner
                .turn(TurnRequest::new("t", Message::user("toaster")).if_busy(DoubleText::Enqueue))
                .await
                .unwrap();
            order.lock().await.push("second started");
            turn.final_output().await.unwrap().unwrap().content
        })
    };
    gates.tool_closed.store(false, Ordering::SeqCst);
    gates.tool.add_permits(1);
    first.wait().await;
    assert_eq!(second.await.unwrap(), "answer: found toaster");
    assert_eq!(
        gates.ledger(),
        ["start kettle", "end kettle", "start toaster", "end toaster"]
    );
}

#[test]
fn strategies_and_modes_parse_or_say_what_is_wrong() {
    assert_eq!(
        "interrupt".parse::<DoubleText>().unwrap(),
        DoubleText::Interrupt
    );
    let e = "later".parse::<DoubleText>().unwrap_err();
    assert!(e
        .to_string()
        .contains("'later' is not a double-texting strategy"));
    assert!("after_model|never".parse::<CancelMode>().is_err());
    assert!("".parse::<CancelMode>().is_err());
}

/// Calls the `desk` agent tool with the user's message, then answers with its result.
struct BossModel;

#[async_trait]
impl ChatModel for BossModel {
    fn model_name(&self) -> &str {
        "boss"
    }

    async fn generate(&self, request: &ChatRequest) -> Result<Message, ModelError> {
        let last_user = request
            .messages
            .iter()
            .rposition(|m| m.role == Role::User)
            .unwrap_or(0);
        let q = request.messages[last_user].content.clone();
        Ok(
            match request.messages[last_user..]
                .iter()
                .find(|m| m.role == Role::Tool)
            {
                None => Message::assistant_tool_calls(
                    "asking the desk",
                    vec![ToolCall::new(
                        "boss-1",
                        "desk",
                        serde_json::json!({ "request": q }).to_string(),
                    )],
                ),
                Some(found) => Message::assistant(format!("boss: {}", found.content)),
            },
        )
    }
}

/// A boss agent whose tool is the whole gated desk (an agent tool).
fn boss(gates: &Arc<Gates>) -> Runner {
    let desk = desk(gates).agent().clone();
    let boss = ChatModelAgent::builder("boss", BossModel)
        .tool(agentweave_runtime::AgentTool::new(desk))
        .build()
        .unwrap();
    Runner::builder(FlowAgent::new(boss))
        .stores(InMemoryStore::new())
        .streaming(true)
        .build()
}

async fn boss_undisturbed() -> Vec<(Role, String, Vec<String>)> {
    let (gates, _heard) = Gates::new();
    let runner = boss(&gates);
    let run = runner
        .start(TurnRequest::new("calm", Message::user("kettle")).if_busy(DoubleText::Reject))
        .await
        .unwrap();
    assert!(matches!(run.wait().await, RunOutcome::Success { .. }));
    record(&runner, "calm").await
}

#[tokio::test]
async fn a_recursive_cancel_stops_inside_an_agent_tool_and_resumes_to_the_same_record() {
    let (gates, mut heard) = Gates::new();
    gates.model_closed.store(true, Ordering::SeqCst);
    let runner = boss(&gates);
    let run = runner
        .start(TurnRequest::new("calm", Message::user("kettle")).if_busy(DoubleText::Reject))
        .await
        .unwrap();
    // The desk's model, inside the boss's tool call, is half streamed.
    assert_eq!(heard.recv().await, Some("model half streamed"));
    run.cancel(CancelMode::AFTER_MODEL.recursive(), None)
        .unwrap();
    gates.model_closed.store(false, Ordering::SeqCst);
    gates.model.add_permits(1);
    let outcome = run.wait().await;
    assert!(
        matches!(
            outcome,
            RunOutcome::Cancelled {
                at_safe_point: true,
                ..
            }
        ),
        "{outcome:?}"
    );
    // The desk stopped after its model call: its tool did not run.
    assert!(gates.ledger().is_empty());
    let resumed = runner
        .start(TurnRequest::again(&run).unwrap())
        .await
        .unwrap();
    let outcome = resumed.wait().await;
    let RunOutcome::Success { answer, .. } = &outcome else {
        panic!("{outcome:?}")
    };
    assert_eq!(
        answer.as_ref().map(|m| m.content.as_str()),
        Some("boss: answer: found kettle")
    );
    assert_eq!(gates.ledger(), ["start kettle", "end kettle"]);
    assert_eq!(record(&runner, "calm").await, boss_undisturbed().await);
}

#[tokio::test]
async fn a_cancel_that_is_not_recursive_lets_the_agent_tool_finish_then_stops() {
    let (gates, mut heard) = Gates::new();
    gates.model_closed.store(true, Ordering::SeqCst);
    let runner = boss(&gates);
    let run = runner
        .start(TurnRequest::new("calm", Message::user("kettle")).if_busy(DoubleText::Reject))
        .await
        .unwrap();
    assert_eq!(heard.recv().await, Some("model half streamed"));
    run.cancel(CancelMode::AFTER_TOOLS, None).unwrap();
    gates.model_closed.store(false, Ordering::SeqCst);
    gates.model.add_permits(1);
    let outcome = run.wait().await;
    assert_eq!(
        outcome,
        RunOutcome::Cancelled {
            mode: CancelMode::AFTER_TOOLS,
            at_safe_point: true,
            before_start: false,
        }
    );
    // The nested desk ran to its end; the boss stopped after its tool call.
    assert_eq!(gates.ledger(), ["start kettle", "end kettle"]);
    let kept = record(&runner, "calm").await;
    assert_eq!(kept.last().unwrap().1, "answer: found kettle");
    let resumed = runner
        .start(TurnRequest::again(&run).unwrap())
        .await
        .unwrap();
    assert!(matches!(resumed.wait().await, RunOutcome::Success { .. }));
    assert_eq!(gates.ledger(), ["start kettle", "end kettle"]);
    assert_eq!(record(&runner, "calm").await, boss_undisturbed().await);
}

#[tokio::test]
async fn after_model_that_is_not_recursive_lets_the_agent_tool_finish_then_stops_the_caller() {
    // The nested desk does not see the cancel and runs to its end; the boss, whose tool call
    // that was, stops at the end of its next model call.
    let (gates, mut heard) = Gates::new();
    gates.tool_closed.store(true, Ordering::SeqCst);
    let runner = boss(&gates);
    let run = runner
        .start(TurnRequest::new("calm", Message::user("kettle")).if_busy(DoubleText::Reject))
        .await
        .unwrap();
    assert_eq!(heard.recv().await, Some("tool running"));
    run.cancel(CancelMode::AFTER_MODEL, None).unwrap();
    gates.tool_closed.store(false, Ordering::SeqCst);
    gates.tool.add_permits(1);
    assert_eq!(
        run.wait().await,
        RunOutcome::Cancelled {
            mode: CancelMode::AFTER_MODEL,
            at_safe_point: true,
            before_start: false
        }
    );
    assert_eq!(gates.ledger(), ["start kettle", "end kettle"]);
    let calm = boss_undisturbed().await;
    assert_eq!(record(&runner, "calm").await, calm);
    let resumed = runner
        .start(TurnRequest::again(&run).unwrap())
        .await
        .unwrap();
    let outcome = resumed.wait().await;
    let RunOutcome::Success { answer, .. } = &outcome else {
        panic!("{outcome:?}")
    };
    assert_eq!(
        answer.as_ref().map(|m| m.content.as_str()),
        Some("boss: answer: found kettle")
    );
    assert_eq!(gates.ledger(), ["start kettle", "end kettle"]);
    assert_eq!(record(&runner, "calm").await, calm);
}

#[tokio::test]
async fn events_past_the_bound_are_trimmed_and_attaching_before_them_says_so() {
    let (gates, _heard) = Gates::new();
    let runner = RunnerBuilder::from(desk(&gates))
        .run_retention(agentweave_runtime::RunRetention {
            max_events: 3,
            ..Default::default()
        })
        .build();
    let run = runner
        .start(TurnRequest::new("t1", Message::user("kettle")).if_busy(DoubleText::Reject))
        .await
        .unwrap();
    run.wait().await;
    // From the start: the first events are gone.
    assert!(matches!(
        run.attach(None).err(),
        Some(AttachError::Expired { .. })
    ));
    let Err(AttachError::Expired { first, .. }) = run.attach(Some(0)) else {
        panic!("attaching before the kept events must say they expired")
    };
    // The last three are still there, in order, ending with the outcome.
    let tail: Vec<_> = run.attach(Some(first - 1)).unwrap().collect().await;
    assert_eq!(tail.len(), 3);
    assert!(matches!(tail[2].item, RunItem::Ended(_)));
}

/// A thread with runs waiting or running is not deleted under them: refused with how many
/// and the oldest (one running, two in line behind it); once they ended, it deletes at once.
#[tokio::test]
async fn a_thread_with_runs_going_is_not_deleted_and_deletes_once_they_ended() {
    let gate = Arc::new(Semaphore::new(0));
    let held = Arc::clone(&gate);
    let slow = agentweave_runtime::FnAgent::new("slow", move |cx, _| {
        let gate = Arc::clone(&held);
        async move {
            gate.acquire().await.unwrap().forget();
            cx.say("done");
            Ok(())
        }
    });
    let runner = Runner::builder(FlowAgent::new(slow))
        .stores(InMemoryStore::new())
        .build();
    let mut runs = Vec::new();
    for i in 0..3 {
        runs.push(
            runner
                .start(
                    TurnRequest::new("t", Message::user(format!("run {i}")))
                        .if_busy(DoubleText::Enqueue),
                )
                .await
                .unwrap(),
        );
    }
    match runner.thread("t").delete().await {
        Err(ThreadError::RunsGoing {
            id,
            runs: 3,
            run_id,
        }) => {
            assert_eq!((id.as_str(), run_id.as_str()), ("t", runs[0].id()));
        }
        other => panic!("{other:?}"),
    }
    gate.add_permits(3);
    for run in &runs {
        assert!(matches!(run.wait().await, RunOutcome::Success { .. }));
    }
    assert!(runner.thread("t").delete().await.unwrap());
    // Its ended runs went with it (their events held its messages).
    assert!(runner.thread("t").runs().is_empty());
    assert!(runner.run_handle(runs[0].id()).is_none());
}

/// A safe-point cancel that reaches a run before it started (waiting behind its thread's
/// earlier run, or started but not begun) ends it at once as cancelled before start, with the
/// mode asked: it never runs, the run before it goes on, and the thread is free afterwards.
#[tokio::test]
async fn a_safe_point_cancel_of_a_run_not_started_ends_it_before_start() {
    let gate = Arc::new(Semaphore::new(0));
    let calls = Arc::new(Mutex::new(Vec::<String>::new()));
    let (held, seen) = (Arc::clone(&gate), Arc::clone(&calls));
    let slow = agentweave_runtime::FnAgent::new(
        "slow",
        move |cx, input: agentweave_runtime::AgentInput| {
            let (gate, seen) = (Arc::clone(&held), Arc::clone(&seen));
            async move {
                let said = input.messages.last().map(|m| m.content.clone());
                seen.lock().unwrap().push(said.unwrap_or_default());
                gate.acquire().await.unwrap().forget();
                cx.say("done");
                Ok(())
            }
        },
    );
    let runner = Runner::builder(FlowAgent::new(slow))
        .stores(InMemoryStore::new())
        .build();
    let start = |text: &str| {
        runner.start(TurnRequest::new("t", Message::user(text)).if_busy(DoubleText::Enqueue))
    };
    let before_start = RunOutcome::Cancelled {
        mode: CancelMode::AFTER_TOOLS,
        at_safe_point: true,
        before_start: true,
    };

    // Started, not begun: its task has not run yet (one-threaded runtime, no await between).
    let fresh = start("fresh").await.unwrap();
    assert_eq!(fresh.status(), RunStatus::Pending);
    fresh.cancel(CancelMode::AFTER_TOOLS, None).unwrap();
    assert_eq!(fresh.wait().await, before_start);

    // Waiting behind a running run.
    let first = start("first").await.unwrap();
    let waiting = start("waiting").await.unwrap();
    while calls.lock().unwrap().is_empty() {
        tokio::task::yield_now().await;
    }
    assert_eq!(waiting.status(), RunStatus::Pending);
    waiting.cancel(CancelMode::AFTER_TOOLS, None).unwrap();
    // At once, while the run before it still runs.
    assert_eq!(waiting.wait().await, before_start);
    assert_eq!(first.status(), RunStatus::Running);
    gate.add_permits(1);
    assert!(matches!(first.wait().await, RunOutcome::Success { .. }));
    // Neither cancelled run ran; again() runs the message from the start.
    assert_eq!(*calls.lock().unwrap(), ["first"]);
    let again = runner
        .start(TurnRequest::again(&waiting).unwrap())
        .await
        .unwrap();
    gate.add_permits(1);
    assert!(matches!(again.wait().await, RunOutcome::Success { .. }));
    assert_eq!(*calls.lock().unwrap(), ["first", "waiting"]);
    assert!(matches!(
        waiting.cancel(CancelMode::AFTER_TOOLS, None),
        Err(CancelError::Ended { .. })
    ));
}
