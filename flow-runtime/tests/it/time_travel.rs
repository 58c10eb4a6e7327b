//! Time travel on threads: a thread's history, forks at every step of a three-turn thread
//! (a paying tool, a nested agent tool, a parallel workflow), each fork going on from exactly
//! its step while the original stays untouched; re-answering an interrupt (one inside a nested
//! agent tool included) on a fork; and bad input. On InMemory, File and SQLite (PostgreSQL
//! when `AGENTFLOW_PG_URL` is set).

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use agentweave_runtime::store::{JournalStore, RecordEnd, ThreadRecord};
use agentweave_runtime::TurnRequest;
use agentweave_runtime::{
    set_sub_agents, tool_fn, tool_fn_with_context, AgentTool, ChatModelAgent, ChatRequest,
    CheckpointStore, FileStore, FlowAgent, ForkEnd, InMemoryStore, Message, Parallel, Role, Runner,
    ScriptStep, ScriptedModel, StepKind, ThreadStepKind, ThreadStore, TimeTravelError, ToolContext,
    TurnOutcome, TurnRouting,
};
use serde_json::json;

/// How many times each tool ran.
#[derive(Clone, Default)]
struct Ran {
    pay: Arc<AtomicUsize>,
    lookup: Arc<AtomicUsize>,
}

impl Ran {
    fn get(&self) -> (usize, usize) {
        (
            self.pay.load(Ordering::SeqCst),
            self.lookup.load(Ordering::SeqCst),
        )
    }
}

fn last_is_tool(r: &ChatRequest, tool: &str) -> bool {
    r.messages
        .last()
        .is_some_and(|m| m.role == Role::Tool && m.tool_name.as_deref() == Some(tool))
}

/// The desk: "refund N" pays N, asks the clerk (an agent tool that looks the order up) to note
/// it, then answers; "check" transfers to a parallel workflow of two lanes.
fn desk(ran: &Ran) -> FlowAgent {
    let pay = {
        let ran = ran.pay.clone();
        tool_fn("pay", "Pays a refund.", move |args: serde_json::Value| {
            let ran = ran.clone();
            async move {
                ran.fetch_add(1, Ordering::SeqCst);
                Ok::<_, String>(format!("paid {}", args["amount"]))
            }
        })
    };
    let lookup = {
        let ran = ran.lookup.clone();
        tool_fn(
            "lookup",
            "Looks an order up.",
            move |_: serde_json::Value| {
                let ran = ran.clone();
                async move {
                    ran.fetch_add(1, Ordering::SeqCst);
                    Ok::<_, String>("order 42".to_owned())
                }
            },
        )
    };
    let clerk_model = ScriptedModel::rules()
        .when_with(
            |r| last_is_tool(r, "lookup"),
            |r| ScriptStep::text(format!("noted {}", r.messages.last().unwrap().content)),
        )
        .otherwise(ScriptStep::tool_call("lookup", json!({})));
    let clerk = ChatModelAgent::builder("clerk", clerk_model)
        .description("Notes refunds.")
        .tool(lookup)
        .build()
        .unwrap();
    let desk_model = ScriptedModel::rules()
        .when_with(
            |r| last_is_tool(r, "clerk"),
            |r| ScriptStep::text(format!("done: {}", r.messages.last().unwrap().content)),
        )
        .when(
            |r| last_is_tool(r, "pay"),
            ScriptStep::tool_call("clerk", json!({"request": "note the refund"})),
        )
        .when_last_user_contains("check", ScriptStep::transfer("checks"))
        .when_with(
            |r| {
                r.last_user_message()
                    .is_some_and(|m| m.content.starts_with("refund"))
            },
            |r| {
                let said = r.last_user_message().unwrap().content.clone();
                let amount: u64 = said.trim_start_matches("refund ").parse().unwrap_or(0);
                ScriptStep::tool_call("pay", json!({ "amount": amount }))
            },
        )
        .otherwise(ScriptStep::text("how can I help?"));
    let desk = ChatModelAgent::builder("desk", desk_model)
        .tool(pay)
        .tool(AgentTool::new(FlowAgent::new(clerk)))
        .build()
        .unwrap();
    let lane = |name: &'static str| {
        FlowAgent::new(
            ChatModelAgent::builder(
                name,
                ScriptedModel::rules().otherwise(ScriptStep::text(format!("{name} ok"))),
            )
            .description("A check.")
            .build()
            .unwrap(),
        )
    };
    let checks = Parallel::new("checks")
        .with_sub_agents([lane("style"), lane("facts")])
        .unwrap();
    set_sub_agents(FlowAgent::new(desk), [checks]).unwrap()
}

fn runner<S>(store: &S, ran: &Ran) -> Runner
where
    S: ThreadStore + CheckpointStore + JournalStore + Clone,
{
    Runner::builder(desk(ran))
        .stores(store.clone())
        .journal_store(store.clone())
        .turn_routing(TurnRouting::Root)
        .build()
}

async fn say(runner: &Runner, thread: &str, text: &str) {
    let turn = runner
        .turn(TurnRequest::new(thread, Message::user(text)))
        .await
        .unwrap();
    match turn.finish().await {
        TurnOutcome::Completed { .. } => {}
        other => panic!("turn '{text}' did not complete: {other:?}"),
    }
}

/// A record's events as (run path, role, content, action) lines.
fn lines(records: &[ThreadRecord]) -> Vec<(String, String)> {
    records
        .iter()
        .flat_map(|r| r.events.iter())
        .map(|e| {
            let m = e.message.as_ref();
            (
                e.run_path.to_string(),
                format!(
                    "{:?} {} {:?}",
                    m.map(|m| m.role),
                    m.map_or("", |m| m.content.as_str()),
                    e.action
                ),
            )
        })
        .collect()
}

/// `lines` grouped by run path, each path's lines in order (parallel lanes interleave freely).
fn by_path(lines: Vec<(String, String)>) -> Vec<(String, Vec<String>)> {
    let mut map: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    for (path, line) in lines {
        map.entry(path).or_default().push(line);
    }
    map.into_iter().collect()
}

async fn forks_go_on_from_exactly_their_step<S>(store: S, label: &str)
where
    S: ThreadStore + CheckpointStore + JournalStore + Clone,
{
    let ran = Ran::default();
    let runner = runner(&store, &ran);
    let original = format!("orig{label}");
    say(&runner, &original, "refund 5").await;
    say(&runner, &original, "check it").await;
    say(&runner, &original, "refund 7").await;
    let before = runner.thread(&original).records().await.unwrap();
    let history = runner.thread(&original).history().await.unwrap();
    assert_eq!(
        history.len(),
        before.iter().map(|r| r.events.len() + 1).sum::<usize>()
    );
    assert_eq!(
        history
            .iter()
            .filter(|s| s.kind == ThreadStepKind::Input)
            .count(),
        3
    );
    assert!(history
        .iter()
        .any(|s| s.run_path.to_string() == "desk/checks/facts"));
    for (k, step) in history.iter().enumerate() {
        assert_eq!(step.id, k as u64);
        assert_eq!(step.parent, k.checked_sub(1).map(|p| p as u64));
    }

    for step in &history {
        let fork = format!("fork{label}-{}", step.id);
        let forked = runner.thread(&original).fork(step.id, &fork).await.unwrap();
        let turn = step.turn;
        // The steps of the original turn after the fork's step, by path.
        let after: Vec<_> = history
            .iter()
            .filter(|s| s.turn == turn && s.id > step.id)
            .collect();
        let pays_after = after
            .iter()
            .filter(|s| s.kind == ThreadStepKind::Run(StepKind::ToolResult))
            .filter(|s| {
                let e = event_of(&before, s.id, &history);
                e.message.as_ref().and_then(|m| m.tool_name.as_deref()) == Some("pay")
            })
            .count();
        let clerks_after = after
            .iter()
            .filter(|s| {
                let e = event_of(&before, s.id, &history);
                e.message.as_ref().and_then(|m| m.tool_name.as_deref()) == Some("clerk")
            })
            .count();
        let fork_records = runner.thread(&fork).records().await.unwrap();
        match forked.end {
            ForkEnd::TurnEnd => {
                assert!(after.is_empty(), "step {} is its turn's last", step.id);
                let n = fork_records.len();
                assert_eq!(
                    fork_records,
                    before[..n],
                    "a fork at a turn's end copies it whole"
                );
            }
            ForkEnd::ForkPoint => {
                let (pay0, lookup0) = ran.get();
                let turn_ = runner.turn(TurnRequest::resume(&fork, [])).await.unwrap();
                let outcome = turn_.finish().await;
                assert!(
                    matches!(outcome, TurnOutcome::Completed { .. }),
                    "fork at step {}: {outcome:?}",
                    step.id
                );
                let (pay1, lookup1) = ran.get();
                // Exactly the tools after the step ran again; those before were replayed.
                assert_eq!(pay1 - pay0, pays_after, "pay runs after step {}", step.id);
                assert_eq!(
                    lookup1 - lookup0,
                    clerks_after,
                    "lookups after step {}",
                    step.id
                );
                // The fork's turn reads as the original's.
                let fork_records = runner.thread(&fork).records().await.unwrap();
                let of_turn = |rs: &[ThreadRecord]| -> Vec<ThreadRecord> {
                    rs.iter().filter(|r| r.turn == turn).cloned().collect()
                };
                assert_eq!(
                    by_path(lines(&of_turn(&fork_records))),
                    by_path(lines(&of_turn(&before))),
                    "the fork at step {} goes on from exactly there",
                    step.id
                );
                // The continuation holds only the steps after the fork's.
                let continuation = fork_records.last().unwrap();
                assert_eq!(continuation.events.len(), after.len(), "step {}", step.id);
            }
            ForkEnd::Interrupt => panic!("this thread has no interrupt"),
        }
        // Nothing of the original changed.
        assert_eq!(runner.thread(&original).records().await.unwrap(), before);
    }

    // A fork takes new messages of its own.
    say(&runner, &format!("fork{label}-5"), "refund 9").await;
    assert_eq!(runner.thread(&original).records().await.unwrap(), before);

    // Bad input: typed errors, nothing written.
    let steps = history.len() as u64;
    assert!(matches!(
        runner.thread(&original).fork(steps, "nowhere").await,
        Err(TimeTravelError::UnknownStep { step, steps: n, .. }) if step == steps && n == steps
    ));
    assert!(matches!(
        runner.thread("no-such-thread").fork(0, "nowhere").await,
        Err(TimeTravelError::UnknownThread { .. })
    ));
    assert!(matches!(
        runner
            .thread(&original)
            .fork(0, &format!("fork{label}-1"))
            .await,
        Err(TimeTravelError::ThreadExists { .. })
    ));
    assert!(matches!(
        runner.thread(&original).fork(0, &original).await,
        Err(TimeTravelError::ThreadExists { .. })
    ));
    assert!(matches!(
        runner.thread("no-such-thread").history().await,
        Err(TimeTravelError::UnknownThread { .. })
    ));
    assert!(runner.thread("nowhere").records().await.unwrap().is_empty());
    assert_eq!(runner.thread(&original).records().await.unwrap(), before);
    let last = history.len() as u64 - 1;
    assert!(matches!(
        runner
            .thread(&original)
            .run_from(last, "nowhere", HashMap::new())
            .await,
        Err(TimeTravelError::NothingToRerun { .. })
    ));
    assert!(runner.thread("nowhere").records().await.unwrap().is_empty());
}

/// The recorded event of step `id`.
fn event_of<'a>(
    records: &'a [ThreadRecord],
    id: u64,
    history: &[agentweave_runtime::ThreadStep],
) -> &'a agentweave_runtime::store::RecordedEvent {
    let step = &history[id as usize];
    let record = records.iter().find(|r| r.seq == step.record).unwrap();
    let first = history
        .iter()
        .position(|s| s.record == step.record && matches!(s.kind, ThreadStepKind::Run(_)))
        .unwrap();
    &record.events[id as usize - first]
}

/// A desk whose agent tool (the clerk) asks for approval inside: a nested interrupt.
fn approval_desk(clerk_calls: Arc<AtomicUsize>) -> FlowAgent {
    let approve = tool_fn_with_context(
        "approve",
        "Asks a human.",
        |cx: ToolContext, _: serde_json::Value| async move {
            match cx.resume_data() {
                None => Err(cx.interrupt(json!("approve the refund?"))),
                Some(answer) => Ok(format!("human said {answer}")),
            }
        },
    );
    let clerk_model = {
        let calls = clerk_calls;
        ScriptedModel::rules()
            .when_with(
                move |r| {
                    calls.fetch_add(1, Ordering::SeqCst);
                    last_is_tool(r, "approve")
                },
                |r| ScriptStep::text(r.messages.last().unwrap().content.clone()),
            )
            .otherwise(ScriptStep::tool_call("approve", json!({})))
    };
    let clerk = ChatModelAgent::builder("clerk", clerk_model)
        .description("Gets approvals.")
        .tool(approve)
        .build()
        .unwrap();
    let desk_model = ScriptedModel::rules()
        .when_with(
            |r| last_is_tool(r, "clerk"),
            |r| ScriptStep::text(format!("desk: {}", r.messages.last().unwrap().content)),
        )
        .otherwise(ScriptStep::tool_call(
            "clerk",
            json!({"request": "approve"}),
        ));
    FlowAgent::new(
        ChatModelAgent::builder("desk", desk_model)
            .tool(AgentTool::new(FlowAgent::new(clerk)))
            .build()
            .unwrap(),
    )
}

async fn an_interrupt_is_answered_again_on_a_fork<S>(store: S, label: &str)
where
    S: ThreadStore + CheckpointStore + JournalStore + Clone,
{
    let clerk_calls = Arc::new(AtomicUsize::new(0));
    let runner = Runner::builder(approval_desk(Arc::clone(&clerk_calls)))
        .stores(store.clone())
        .build();
    let original = format!("ask{label}");
    let turn = runner
        .turn(TurnRequest::new(&original, Message::user("refund")))
        .await
        .unwrap();
    let TurnOutcome::Interrupted { interrupts, .. } = turn.finish().await else {
        panic!("the clerk asks first");
    };
    let id = interrupts[0].id.clone();
    let history = runner.thread(&original).history().await.unwrap();
    let at = history.last().unwrap();
    assert_eq!(at.kind, ThreadStepKind::Interrupt);
    // The interrupt is the clerk's, inside the desk's agent tool.
    assert_eq!(at.run_path.to_string(), "desk/clerk");

    // The original answers yes.
    let yes = runner
        .turn(TurnRequest::resume(&original, [(id.clone(), json!("yes"))]))
        .await
        .unwrap()
        .final_output()
        .await
        .unwrap()
        .unwrap();
    assert_eq!(yes.content, "desk: human said \"yes\"");
    let before = runner.thread(&original).records().await.unwrap();

    // A fork at the interrupt answers no, inside the clerk: its model is asked once more
    // (for its answer after the approval), not from its start.
    let fork = format!("ask{label}-no");
    let forked = runner.thread(&original).fork(at.id, &fork).await.unwrap();
    assert_eq!(forked.end, ForkEnd::Interrupt);
    assert_eq!(forked.interrupts[0].id, id);
    let calls_before = clerk_calls.load(Ordering::SeqCst);
    let no = runner
        .turn(TurnRequest::resume(&fork, [(id.clone(), json!("no"))]))
        .await
        .unwrap()
        .final_output()
        .await
        .unwrap()
        .unwrap();
    assert_eq!(no.content, "desk: human said \"no\"");
    assert_eq!(clerk_calls.load(Ordering::SeqCst) - calls_before, 1);
    assert_eq!(runner.thread(&original).records().await.unwrap(), before);

    // run_from at the interrupt: fork and answer at once.
    let maybe = runner
        .thread(&original)
        .run_from(at.id, &format!("ask{label}-maybe"), [(id, json!("maybe"))])
        .await
        .unwrap()
        .final_output()
        .await
        .unwrap()
        .unwrap();
    assert_eq!(maybe.content, "desk: human said \"maybe\"");
    assert!(matches!(
        runner
            .thread(&original)
            .records()
            .await
            .unwrap()
            .last()
            .unwrap()
            .end,
        RecordEnd::Completed { .. }
    ));
    assert_eq!(runner.thread(&original).records().await.unwrap(), before);
}

fn temp_dir(name: &str) -> std::path::PathBuf {
    crate::support::dirs::fresh_dir("tt", name)
}

#[tokio::test]
async fn in_memory_forks_go_on_from_exactly_their_step() {
    forks_go_on_from_exactly_their_step(InMemoryStore::new(), "").await;
}

#[tokio::test]
async fn in_memory_interrupts_are_answered_again_on_forks() {
    an_interrupt_is_answered_again_on_a_fork(InMemoryStore::new(), "").await;
}

#[tokio::test]
async fn file_forks_go_on_from_exactly_their_step() {
    let dir = temp_dir("file");
    forks_go_on_from_exactly_their_step(FileStore::new(&dir).unwrap(), "").await;
    an_interrupt_is_answered_again_on_a_fork(FileStore::new(&dir).unwrap(), "").await;
    std::fs::remove_dir_all(dir).unwrap();
}

#[cfg(feature = "sqlite")]
#[tokio::test]
async fn sqlite_forks_go_on_from_exactly_their_step() {
    let dir = temp_dir("sqlite");
    let store = agentweave_runtime::store::SqliteStore::open(dir.join("store.db"))
        .await
        .unwrap();
    forks_go_on_from_exactly_their_step(store.clone(), "").await;
    an_interrupt_is_answered_again_on_a_fork(store, "").await;
    std::fs::remove_dir_all(dir).unwrap();
}

#[cfg(feature = "postgres")]
#[tokio::test]
async fn postgres_forks_go_on_from_exactly_their_step() {
    let Some(url) = agentweave_runtime::testing::fresh_postgres_database("time_travel").await
    else {
        return;
    };
    let store = agentweave_runtime::store::PostgresStore::connect(&url)
        .await
        .unwrap();
    forks_go_on_from_exactly_their_step(store.clone(), "").await;
    an_interrupt_is_answered_again_on_a_fork(store, "").await;
}
