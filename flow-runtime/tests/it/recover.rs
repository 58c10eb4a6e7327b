//! Crash recovery from the journal ([`Runner::recover`]), in one process: a worker "dies"
//! (its turn is forgotten after some events: nothing of it runs any more, its lease is never
//! given back) and another runner on the same store recovers the turn once the lease ran out.

use crate::support;

use std::path::Path;
use std::time::Duration;

use agentweave_runtime::store::{JournalStore, StoredStep, ThreadRecord};
use agentweave_runtime::RunnerBuilder;
use agentweave_runtime::TurnRequest;
use agentweave_runtime::{
    turn_journal_id, turn_mark_id, AgentEvent, Durability, FlowAgent, FnAgent, InMemoryStore,
    JournalError, Message, RecoverError, Runner, Turn, TurnOutcome,
};
use futures::StreamExt;
use support::ledger::{paid_once, paying_desk, payments};

/// The lease of the turns that die: short, so the recovery waits little.
const LEASE: Duration = Duration::from_millis(60);

fn runner(store: &InMemoryStore, ledger: &Path, refund_idempotent: bool) -> Runner {
    Runner::builder(paying_desk(
        ledger.to_path_buf(),
        Duration::ZERO,
        refund_idempotent,
    ))
    .stores(store.clone())
    .journal_store(store.clone())
    .durability(Durability::Sync)
    .lease(LEASE)
    .build()
}

fn work_dir(name: &str) -> std::path::PathBuf {
    crate::support::dirs::fresh_dir("recover", name)
}

/// A record without its time, to compare with another run's.
fn timeless(mut record: ThreadRecord) -> ThreadRecord {
    record.at_ms = 0;
    record
}

fn show(events: &[AgentEvent]) -> Vec<String> {
    events.iter().map(support::line).collect()
}

/// Runs a turn of thread `t` to its end: its events and its one record.
async fn uninterrupted(name: &str) -> (Vec<String>, ThreadRecord) {
    let work = work_dir(name);
    let store = InMemoryStore::new();
    let runner = runner(&store, &work.join("ledger"), true);
    let turn = runner
        .turn(TurnRequest::new("t", Message::user("settle my order")))
        .await
        .unwrap();
    let events: Vec<AgentEvent> = turn.collect().await;
    let mut records = runner.thread("t").records().await.unwrap();
    assert_eq!(records.len(), 1);
    assert_eq!(paid_once(&work.join("ledger")), (1, 1));
    (show(&events), timeless(records.remove(0)))
}

/// Starts a turn and lets its worker "die" after `seen` events: the turn is forgotten, so
/// nothing of it runs any more and its lease is never given back.
async fn die_after(runner: &Runner, seen: usize) -> Vec<AgentEvent> {
    let mut turn: Turn = runner
        .turn(TurnRequest::new("t", Message::user("settle my order")))
        .await
        .unwrap();
    let mut events = Vec::new();
    for _ in 0..seen {
        match turn.next().await {
            Some(event) => events.push(event),
            None => break,
        }
    }
    std::mem::forget(turn);
    events
}

/// Recovers thread `t` once the dead worker's lease ran out.
async fn recover(runner: &Runner) -> Option<Turn> {
    for _ in 0..500 {
        match runner.recover("t").await {
            Err(RecoverError::Leased { .. }) => tokio::time::sleep(Duration::from_millis(10)).await,
            other => return other.unwrap(),
        }
    }
    panic!("the dead worker's lease never ran out");
}

#[tokio::test]
async fn a_turn_whose_worker_died_is_recovered_at_every_point() {
    let (reference_events, reference) = uninterrupted("reference").await;
    assert_eq!(reference_events.len(), 8, "{reference_events:#?}");
    // A worker that dies before the turn ran anything leaves nothing to recover.
    {
        let work = work_dir("point-0");
        let store = InMemoryStore::new();
        die_after(&runner(&store, &work.join("ledger"), true), 0).await;
        assert!(recover(&runner(&store, &work.join("ledger"), true))
            .await
            .is_none());
        assert!(payments(&work.join("ledger")).is_empty());
    }
    for seen in 1..=reference_events.len() {
        let work = work_dir(&format!("point-{seen}"));
        let ledger = work.join("ledger");
        let store = InMemoryStore::new();
        let dead = die_after(&runner(&store, &ledger, true), seen).await;
        let journaled = store.journal_len(&turn_journal_id("t", 0)).await.unwrap();
        assert!(
            journaled as usize >= dead.len(),
            "Sync: every event seen is stored"
        );
        // Another worker (a new runner on the same store) recovers the turn.
        let other = runner(&store, &ledger, true);
        let Some(turn) = recover(&other).await else {
            panic!("point {seen}: nothing to recover");
        };
        let events: Vec<AgentEvent> = turn.collect().await;
        // Every event of the turn is delivered again, with its original run path.
        assert_eq!(show(&events), reference_events, "point {seen}");
        let records = other.thread("t").records().await.unwrap();
        assert_eq!(records.len(), 1, "point {seen}");
        assert_eq!(timeless(records[0].clone()), reference, "point {seen}");
        // Each payment once, whatever was in flight.
        assert_eq!(
            paid_once(&ledger),
            (1, 1),
            "point {seen}: {:?}",
            payments(&ledger)
        );
        // The journal is the record, and nothing is left to recover.
        let steps = other.journal(&turn_journal_id("t", 0)).await.unwrap();
        let stepped: Vec<_> = steps.into_iter().map(|s| s.event).collect();
        assert_eq!(stepped, reference.events, "point {seen}");
        assert!(other.recover("t").await.unwrap().is_none());
        std::fs::remove_dir_all(&work).unwrap();
    }
}

#[tokio::test]
async fn journaled_replies_and_results_are_not_asked_or_run_again() {
    let work = work_dir("replayed");
    let ledger = work.join("ledger");
    let store = InMemoryStore::new();
    // Dies after the refunder's reply asking for `refund` was seen: `pay` and its transfer
    // are journaled.
    die_after(&runner(&store, &ledger, true), 5).await;
    assert_eq!(paid_once(&ledger), (1, 0));
    let other = runner(&store, &ledger, true);
    let turn = recover(&other).await.unwrap();
    assert!(matches!(turn.finish().await, TurnOutcome::Completed { .. }));
    assert_eq!(paid_once(&ledger), (1, 1));
    // `pay` ran once (in the dead worker: its result is journaled); `refund` may have
    // started in the dead worker (it was in flight) and ran again in the recovery, with the
    // same idempotency key (so it paid once).
    let calls = support::processes::lines(&support::ledger::calls_of(&ledger));
    let pays: Vec<&String> = calls.iter().filter(|c| c.ends_with(" pay")).collect();
    assert_eq!(pays.len(), 1, "{calls:?}");
    let refunds: std::collections::HashSet<&String> =
        calls.iter().filter(|c| c.ends_with(" refund")).collect();
    assert_eq!(refunds.len(), 1, "one key for every attempt: {calls:?}");
    let steps = other.journal(&turn_journal_id("t", 0)).await.unwrap();
    let keys: Vec<String> = steps
        .iter()
        .filter_map(|s| s.idempotency_key.clone())
        .collect();
    assert_eq!(keys.len(), 2);
    assert!(payments(&ledger)[0].starts_with(&keys[0]));
    std::fs::remove_dir_all(&work).unwrap();
}

#[tokio::test]
async fn an_in_flight_call_of_a_non_idempotent_tool_is_answered_with_an_error() {
    let work = work_dir("not-idempotent");
    let ledger = work.join("ledger");
    let store = InMemoryStore::new();
    // Dies once the refunder asked for `refund`: the call may have started.
    die_after(&runner(&store, &ledger, false), 5).await;
    let other = runner(&store, &ledger, false);
    let turn = recover(&other).await.unwrap();
    assert!(matches!(turn.finish().await, TurnOutcome::Completed { .. }));
    // `refund` did not run again; the model got an error it can act on.
    assert_eq!(paid_once(&ledger), (1, 0));
    let records = other.thread("t").records().await.unwrap();
    let result = records[0]
        .events
        .iter()
        .filter_map(|e| e.message.as_ref())
        .find(|m| m.tool_call_id.is_some() && m.content.contains("refund"))
        .expect("the refund call's result")
        .content
        .clone();
    assert!(
        result.starts_with("error: the call to tool 'refund' was in flight")
            && result.contains("may or may not have happened")
            && result.contains("Check whether it took effect"),
        "{result}"
    );
    std::fs::remove_dir_all(&work).unwrap();
}

#[tokio::test]
async fn a_turn_still_leased_by_a_live_worker_is_not_recovered() {
    let work = work_dir("live");
    let ledger = work.join("ledger");
    let store = InMemoryStore::new();
    let live = RunnerBuilder::from(runner(&store, &ledger, true))
        .lease(Duration::from_secs(60))
        .build();
    let mut turn = live
        .turn(TurnRequest::new("t", Message::user("settle my order")))
        .await
        .unwrap();
    turn.next().await.unwrap();
    let other = runner(&store, &ledger, true);
    assert!(matches!(
        other.recover("t").await,
        Err(RecoverError::Leased { thread }) if thread == "t"
    ));
    // The live turn goes on, unharmed, and there is nothing to recover afterwards.
    assert!(matches!(turn.finish().await, TurnOutcome::Completed { .. }));
    assert_eq!(paid_once(&ledger), (1, 1));
    assert!(other.recover("t").await.unwrap().is_none());
    std::fs::remove_dir_all(&work).unwrap();
}

#[tokio::test]
async fn a_cancelled_or_failed_turn_and_an_exit_mode_turn_are_not_recovered() {
    let work = work_dir("cancelled");
    let ledger = work.join("ledger");
    let store = InMemoryStore::new();
    let live = runner(&store, &ledger, true);
    let mut turn = live
        .turn(TurnRequest::new("t", Message::user("settle my order")))
        .await
        .unwrap();
    turn.next().await.unwrap();
    drop(turn); // cancelled: its start mark is closed
    let mut closed = false;
    for _ in 0..500 {
        if store.journal_len(&turn_mark_id("t", 0)).await.unwrap() == 2 {
            closed = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert!(closed, "a cancelled turn's start mark is closed");
    assert!(live.recover("t").await.unwrap().is_none());
    // Exit mode journals nothing: there is nothing to recover from.
    let exit_store = InMemoryStore::new();
    let exit = RunnerBuilder::from(runner(&exit_store, &ledger, true))
        .durability(Durability::Exit)
        .build();
    let mut turn = exit
        .turn(TurnRequest::new("u", Message::user("hi")))
        .await
        .unwrap();
    turn.next().await.unwrap();
    std::mem::forget(turn);
    assert_eq!(
        exit_store.journal_len(&turn_mark_id("u", 0)).await.unwrap(),
        0
    );
    let exit = RunnerBuilder::from(exit).lease(LEASE).build();
    for _ in 0..500 {
        match exit.recover("u").await {
            Err(RecoverError::Leased { .. }) => tokio::time::sleep(Duration::from_millis(10)).await,
            other => {
                assert!(other.unwrap().is_none());
                break;
            }
        }
    }
    std::fs::remove_dir_all(&work).unwrap();
}

/// Sets up a dead turn with journaled steps; returns the store.
async fn dead_turn(work: &Path) -> InMemoryStore {
    let store = InMemoryStore::new();
    die_after(&runner(&store, &work.join("ledger"), true), 3).await;
    store
}

async fn journal_state(store: &InMemoryStore) -> Vec<StoredStep> {
    store.read_steps(&turn_journal_id("t", 0), 0).await.unwrap()
}

#[tokio::test]
async fn bad_journals_are_typed_errors() {
    let work = work_dir("bad-journals");
    let ledger = work.join("ledger");
    let id = turn_journal_id("t", 0);
    let other_flow = || {
        Runner::new(FlowAgent::new(FnAgent::new("other", |_, _| async {
            Ok(())
        })))
    };
    for case in ["forged", "truncated", "foreign"] {
        let store = dead_turn(&work).await;
        let len = store.journal_len(&id).await.unwrap();
        let good = store.read_steps(&id, 0).await.unwrap();
        match case {
            "forged" => {
                let mut step = good[0].clone();
                step.kind = "tool_result".into(); // a reply posing as a tool result
                store.append_steps(&id, len, vec![step]).await.unwrap();
            }
            "truncated" => {
                let mut step = good[1].clone();
                step.bytes.truncate(step.bytes.len() / 2);
                store.append_steps(&id, len, vec![step]).await.unwrap();
            }
            _ => {}
        }
        let before = journal_state(&store).await;
        let recovering = match case {
            "foreign" => RunnerBuilder::from(other_flow())
                .stores(store.clone())
                .journal_store(store.clone())
                .lease(LEASE)
                .build(),
            _ => runner(&store, &ledger, true),
        };
        let mut result = None;
        for _ in 0..500 {
            match recovering.recover("t").await {
                Err(RecoverError::Leased { .. }) => {
                    tokio::time::sleep(Duration::from_millis(10)).await
                }
                other => {
                    result = Some(other);
                    break;
                }
            }
        }
        match result.expect("the lease ran out") {
            Err(RecoverError::Journal {
                source: JournalError::Corrupt { reason, .. },
                ..
            }) => {
                let expected = match case {
                    "foreign" => "another flow",
                    "truncated" => "does not decode",
                    _ => "does not match what it records",
                };
                assert!(reason.contains(expected), "{case}: {reason}");
            }
            other => panic!("{case}: {:?}", other.map(|t| t.is_some())),
        }
        // Nothing stored changed, nothing ran again, nothing recorded.
        assert_eq!(journal_state(&store).await, before, "{case}");
        assert_eq!(paid_once(&ledger).1, 0, "{case}");
        assert!(recovering.thread("t").records().await.unwrap().is_empty());
    }
    std::fs::remove_dir_all(&work).unwrap();
}

#[tokio::test]
async fn in_sync_mode_a_tool_runs_only_once_its_asking_reply_is_journaled() {
    use agentweave_runtime::{
        tool_fn_with_context, ChatModelAgent, ScriptStep, ScriptedModel, ToolContext,
    };
    let store = InMemoryStore::new();
    let journal = store.clone();
    // The tool looks at the journal: is the reply that asked for this call stored already?
    let check = tool_fn_with_context(
        "check",
        "Checks the journal.",
        move |cx: ToolContext, _: serde_json::Value| {
            let journal = journal.clone();
            async move {
                let steps = journal
                    .read_steps(&turn_journal_id("t", 0), 0)
                    .await
                    .unwrap();
                let call = cx.call_id().to_owned();
                let stored = steps.iter().any(|s| {
                    s.kind == "model_reply"
                        && String::from_utf8_lossy(&s.bytes).contains(&format!("\"{call}\""))
                });
                Ok::<_, std::io::Error>(format!("reply stored: {stored}"))
            }
        },
    );
    let model = ScriptedModel::rules()
        .after_tool("check", ScriptStep::text("done"))
        .otherwise(ScriptStep::tool_call("check", serde_json::json!({})));
    let agent = FlowAgent::new(
        ChatModelAgent::builder("desk", model)
            .tool(check)
            .build()
            .unwrap(),
    );
    for (mode, expected) in [(Durability::Sync, true), (Durability::Exit, false)] {
        let runner = Runner::builder(agent.clone())
            .stores(store.clone())
            .journal_store(store.clone())
            .durability(mode)
            .build();
        let _ = runner.thread("t").delete().await;
        let turn = runner
            .turn(TurnRequest::new("t", Message::user("go")))
            .await
            .unwrap();
        assert!(matches!(turn.finish().await, TurnOutcome::Completed { .. }));
        let records = runner.thread("t").records().await.unwrap();
        let result = records[0].events[1]
            .message
            .as_ref()
            .unwrap()
            .content
            .clone();
        assert_eq!(result, format!("reply stored: {expected}"), "{mode:?}");
    }
}

/// A resumed record without its time and the nonce of the checkpoint it resumed.
fn resumed_timeless(record: ThreadRecord) -> ThreadRecord {
    let mut record = timeless(record);
    if let agentweave_runtime::store::RecordStart::Resume { checkpoint_id, .. } = &mut record.start
    {
        checkpoint_id.clear();
    }
    record
}

/// A runner of the approving desk on `store`.
fn approving_runner(store: &InMemoryStore, ledger: &Path) -> Runner {
    Runner::builder(support::ledger::approving_desk(
        ledger.to_path_buf(),
        Duration::ZERO,
    ))
    .stores(store.clone())
    .journal_store(store.clone())
    .durability(Durability::Sync)
    .lease(LEASE)
    .build()
}

/// Runs the approving desk's turn on thread `t` up to its interrupt; the answers to it.
async fn asked(runner: &Runner) -> std::collections::HashMap<String, serde_json::Value> {
    let turn = runner
        .turn(TurnRequest::new("t", Message::user("settle my order")))
        .await
        .unwrap();
    let TurnOutcome::Interrupted { interrupts, .. } = turn.finish().await else {
        panic!("the desk asks for approval");
    };
    [(interrupts[0].id.clone(), serde_json::json!("yes"))].into()
}

#[tokio::test]
async fn a_resumed_turn_whose_worker_died_is_recovered_at_every_point() {
    // The reference: the resume runs to its end.
    let work = work_dir("resumed-reference");
    let store = InMemoryStore::new();
    let runner = approving_runner(&store, &work.join("ledger"));
    let answers = asked(&runner).await;
    let reference_events: Vec<AgentEvent> = runner
        .turn(TurnRequest::resume("t", answers))
        .await
        .unwrap()
        .collect()
        .await;
    let reference_events = show(&reference_events);
    let mut records = runner.thread("t").records().await.unwrap();
    assert_eq!(records.len(), 2);
    assert_eq!(paid_once(&work.join("ledger")), (1, 1));
    let reference = resumed_timeless(records.remove(1));
    assert!(reference_events.len() >= 8, "{reference_events:#?}");
    std::fs::remove_dir_all(&work).unwrap();

    // A resuming worker that dies before the resume ran anything leaves nothing to recover:
    // the thread still waits for its answer, which a new resume gives once the dead worker's
    // claim ran out.
    {
        let work = work_dir("resumed-0");
        let ledger = work.join("ledger");
        let store = InMemoryStore::new();
        let runner = approving_runner(&store, &ledger);
        let answers = asked(&runner).await;
        std::mem::forget(
            runner
                .turn(TurnRequest::resume("t", answers.clone()))
                .await
                .unwrap(),
        );
        let other = approving_runner(&store, &ledger);
        assert!(recover(&other).await.is_none());
        let mut resumed = None;
        for _ in 0..500 {
            match other.turn(TurnRequest::resume("t", answers.clone())).await {
                Ok(turn) => {
                    resumed = Some(turn);
                    break;
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
            }
        }
        let events: Vec<AgentEvent> = resumed.expect("the claim runs out").collect().await;
        assert_eq!(show(&events), reference_events);
        assert_eq!(paid_once(&ledger), (1, 1));
        std::fs::remove_dir_all(&work).unwrap();
    }
    for seen in 1..=reference_events.len() {
        let work = work_dir(&format!("resumed-{seen}"));
        let ledger = work.join("ledger");
        let store = InMemoryStore::new();
        let runner = approving_runner(&store, &ledger);
        let answers = asked(&runner).await;
        // The resuming worker dies after `seen` events.
        let mut resumed = runner
            .turn(TurnRequest::resume("t", answers))
            .await
            .unwrap();
        for _ in 0..seen {
            if resumed.next().await.is_none() {
                break;
            }
        }
        std::mem::forget(resumed);
        let other = approving_runner(&store, &ledger);
        let turn = recover(&other).await;
        // (Having seen every event, it died before the record was appended.)
        let turn = turn.unwrap_or_else(|| panic!("point {seen}: nothing to recover"));
        let events: Vec<AgentEvent> = turn.collect().await;
        // The continuation's events are delivered again, with their original run paths.
        assert_eq!(show(&events), reference_events, "point {seen}");
        let records = other.thread("t").records().await.unwrap();
        assert_eq!(records.len(), 2, "point {seen}");
        assert_eq!(
            resumed_timeless(records[1].clone()),
            reference,
            "point {seen}"
        );
        assert_eq!(
            paid_once(&ledger),
            (1, 1),
            "point {seen}: {:?}",
            payments(&ledger)
        );
        // Journaled payments did not run again: each tool ran at most once per key, and
        // `pay` ran once unless it was in flight.
        assert!(other.recover("t").await.unwrap().is_none(), "point {seen}");
        std::fs::remove_dir_all(&work).unwrap();
    }
}

#[tokio::test]
async fn a_resumed_turn_replays_its_journaled_payments() {
    let work = work_dir("resumed-replayed");
    let ledger = work.join("ledger");
    let store = InMemoryStore::new();
    let runner = approving_runner(&store, &ledger);
    let answers = asked(&runner).await;
    let mut resumed = runner
        .turn(TurnRequest::resume("t", answers))
        .await
        .unwrap();
    // Up to the transfer to `settle`: `pay` ran and its result is journaled.
    loop {
        let event = resumed.next().await.unwrap();
        if event
            .action
            .as_ref()
            .is_some_and(|a| matches!(a, agentweave_runtime::Action::TransferToAgent(_)))
        {
            break;
        }
    }
    std::mem::forget(resumed);
    assert_eq!(paid_once(&ledger), (1, 0));
    let other = approving_runner(&store, &ledger);
    let turn = recover(&other).await.unwrap();
    assert!(matches!(turn.finish().await, TurnOutcome::Completed { .. }));
    assert_eq!(paid_once(&ledger), (1, 1));
    let calls = support::processes::lines(&support::ledger::calls_of(&ledger));
    let pays = calls.iter().filter(|c| c.ends_with(" pay")).count();
    assert_eq!(pays, 1, "`pay` is replayed from the journal: {calls:?}");
    std::fs::remove_dir_all(&work).unwrap();
}

/// A runner of the clerk desk (an agent tool that pays) on `store`.
fn clerk_runner(store: &InMemoryStore, ledger: &Path) -> Runner {
    Runner::builder(support::ledger::clerk_desk(
        ledger.to_path_buf(),
        Duration::ZERO,
    ))
    .stores(store.clone())
    .journal_store(store.clone())
    .durability(Durability::Sync)
    .lease(LEASE)
    .build()
}

#[tokio::test]
async fn a_turn_that_died_inside_an_agent_tool_is_recovered_with_its_nested_run_paths() {
    let work = work_dir("clerk-reference");
    let store = InMemoryStore::new();
    let runner = clerk_runner(&store, &work.join("ledger"));
    let turn = runner
        .turn(TurnRequest::new("t", Message::user("settle my order")))
        .await
        .unwrap();
    let reference_events = show(&turn.collect::<Vec<AgentEvent>>().await);
    let reference = timeless(runner.thread("t").records().await.unwrap().remove(0));
    assert_eq!(paid_once(&work.join("ledger")), (1, 1));
    assert!(
        reference_events.iter().any(|e| e.contains("desk/clerk")),
        "the clerk's events are surfaced with their nested run paths: {reference_events:#?}"
    );
    std::fs::remove_dir_all(&work).unwrap();

    for seen in 1..=reference_events.len() {
        let work = work_dir(&format!("clerk-{seen}"));
        let ledger = work.join("ledger");
        let store = InMemoryStore::new();
        let dead = show(&die_after(&clerk_runner(&store, &ledger), seen).await);
        let other = clerk_runner(&store, &ledger);
        let turn = recover(&other)
            .await
            .unwrap_or_else(|| panic!("point {seen}: nothing to recover"));
        let events: Vec<AgentEvent> = turn.collect().await;
        // Every event, the clerk's nested ones included, is delivered again with its
        // original run path.
        assert_eq!(show(&events), reference_events, "point {seen}");
        let records = other.thread("t").records().await.unwrap();
        assert_eq!(timeless(records[0].clone()), reference, "point {seen}");
        assert_eq!(
            paid_once(&ledger),
            (1, 1),
            "point {seen}: {:?}",
            payments(&ledger)
        );
        // Once the clerk's `refund` result was seen (so journaled, Sync), the recovery
        // replays it: the tool does not run again.
        let calls = support::processes::lines(&support::ledger::calls_of(&ledger));
        let refunds = calls.iter().filter(|c| c.ends_with(" refund")).count();
        if dead.iter().any(|e| e.contains("refund: 5 paid")) {
            assert_eq!(refunds, 1, "point {seen}: {calls:?}");
        }
        std::fs::remove_dir_all(&work).unwrap();
    }
}

/// The bug this guards: `update_state` took a thread once its dead turn's lease ran out, and
/// the dead turn's recovery then failed as a "corrupt" start mark (its version no longer fit).
#[tokio::test]
async fn a_dead_turn_whose_thread_moved_on_is_reported_superseded_not_corrupt() {
    let work = work_dir("superseded");
    let ledger = work.join("ledger");
    let store = InMemoryStore::new();
    let live = runner(&store, &ledger, true);
    let first = live
        .turn(TurnRequest::new("t", Message::user("settle my order")))
        .await
        .unwrap();
    assert!(matches!(
        first.finish().await,
        TurnOutcome::Completed { .. }
    ));
    // Turn 1 (at the refunder, where turn 0 ended) dies once `refund`'s result was seen (so
    // journaled: Sync).
    let dead = die_after(&runner(&store, &ledger, true), 2).await;
    assert!(show(&dead)[1].contains("refund: 5 paid"), "{dead:#?}");
    assert_eq!(
        store.journal_len(&turn_mark_id("t", 1)).await.unwrap(),
        1,
        "the dead turn's start mark is open"
    );
    let paid = payments(&ledger);
    // Once the dead worker's lease ran out, `update_state` takes the thread.
    let other = runner(&store, &ledger, true);
    let mut values = serde_json::Map::new();
    values.insert("tier".into(), serde_json::json!("gold"));
    let mut updated = None;
    for _ in 0..500 {
        match other.thread("t").update_state(values.clone()).await {
            Err(agentweave_runtime::TimeTravelError::Thread(
                agentweave_runtime::store::ThreadError::Busy { .. },
            )) => tokio::time::sleep(Duration::from_millis(10)).await,
            done => {
                updated = Some(done.unwrap());
                break;
            }
        }
    }
    let updated = updated.expect("the dead worker's lease ran out");
    let before = other.thread("t").records().await.unwrap();
    assert_eq!(before.len(), 2, "turn 0's record and the values step");
    // Recovery reports the dead turn as superseded, with what it did, and runs nothing.
    match other.recover("t").await {
        Err(RecoverError::Superseded {
            thread,
            turn,
            started_at,
            version,
            unrecorded,
        }) => {
            assert_eq!((thread.as_str(), turn), ("t", 1));
            assert_eq!((started_at, version), (1, updated.version));
            // The journaled `pay` result, with the key its ledger line carries.
            let key = unrecorded
                .iter()
                .find_map(|s| s.idempotency_key.clone())
                .expect("the paid tool's result is journaled");
            assert!(
                paid.iter().any(|line| line.starts_with(&key)),
                "{key} in {paid:?}"
            );
        }
        other => panic!("expected Superseded, got {:?}", other.map(|t| t.is_some())),
    }
    // Nothing ran again, nothing of the thread changed, the values step is kept.
    assert_eq!(payments(&ledger), paid);
    assert_eq!(other.thread("t").records().await.unwrap(), before);
    assert_eq!(
        other.thread("t").values().await.unwrap().get("tier"),
        Some(&serde_json::json!("gold"))
    );
    // The mark is removed: reported once, then nothing to recover.
    assert_eq!(store.journal_len(&turn_mark_id("t", 1)).await.unwrap(), 0);
    assert!(other.recover("t").await.unwrap().is_none());
    // The thread goes on: its next turn is turn 1, recorded after the values step.
    let next = other
        .turn(TurnRequest::new("t", Message::user("settle my order")))
        .await
        .unwrap();
    assert!(matches!(next.finish().await, TurnOutcome::Completed { .. }));
    let records = other.thread("t").records().await.unwrap();
    assert_eq!(records.len(), 3);
    assert_eq!(records[2].turn, 1);
    assert!(other.recover("t").await.unwrap().is_none());
    std::fs::remove_dir_all(&work).unwrap();
}

/// Starts a turn of thread `t` for `request` and lets its worker "die" after `seen` events.
async fn die_after_request(runner: &Runner, request: TurnRequest, seen: usize) {
    let mut turn = runner.turn(request).await.unwrap();
    for _ in 0..seen {
        if turn.next().await.is_none() {
            break;
        }
    }
    std::mem::forget(turn);
}

/// Runs `request` on `runner` once the dead worker's lease ran out.
async fn turn_when_free(runner: &Runner, request: TurnRequest) -> Turn {
    for _ in 0..500 {
        match runner.turn(request.clone()).await {
            Err(agentweave_runtime::ThreadError::Busy { .. }) => {
                tokio::time::sleep(Duration::from_millis(10)).await
            }
            other => return other.unwrap(),
        }
    }
    panic!("the dead worker's lease never ran out");
}

#[tokio::test]
async fn a_request_sent_again_under_its_run_id_gets_its_dead_turn_back() {
    let (reference_events, reference) = uninterrupted("again-reference").await;
    for seen in [2, 4, 6] {
        let work = work_dir(&format!("again-{seen}"));
        let ledger = work.join("ledger");
        let store = InMemoryStore::new();
        let request = TurnRequest::new("t", Message::user("settle my order")).run_id("order-7");
        die_after_request(&runner(&store, &ledger, true), request.clone(), seen).await;
        // The client sends the same request again, to another worker: it gets the turn its
        // first send started, recovered, and the tool is not paid again.
        let other = runner(&store, &ledger, true);
        let turn = turn_when_free(&other, request).await;
        assert!(
            turn.recovered(),
            "point {seen}: the dead turn is given back"
        );
        let events: Vec<AgentEvent> = turn.collect().await;
        assert_eq!(show(&events), reference_events, "point {seen}");
        let records = other.thread("t").records().await.unwrap();
        assert_eq!(records.len(), 1, "point {seen}: one turn, not two");
        // Recorded as the uninterrupted turn, under the run id it was requested with.
        let mut expected = reference.clone();
        expected.run_id = Some("order-7".into());
        assert_eq!(timeless(records[0].clone()), expected, "point {seen}");
        assert_eq!(paid_once(&ledger), (1, 1), "point {seen}");
    }
}

#[tokio::test]
async fn a_new_message_finishes_a_dead_turn_before_it_runs() {
    let work = work_dir("finish-first");
    let ledger = work.join("ledger");
    let store = InMemoryStore::new();
    die_after_request(
        &runner(&store, &ledger, true),
        TurnRequest::new("t", Message::user("settle my order")),
        3,
    )
    .await;
    // Another message on the thread (not the same request): the dead turn is finished and
    // recorded first, paying once, then the new message runs as the next turn.
    let other = runner(&store, &ledger, true);
    let turn = turn_when_free(&other, TurnRequest::new("t", Message::user("thanks"))).await;
    assert!(!turn.recovered(), "the new message runs as a new turn");
    assert_eq!(turn.number(), 1, "the dead turn is turn 0, recorded first");
    turn.finish().await;
    let records = other.thread("t").records().await.unwrap();
    assert_eq!(records.len(), 2);
    assert_eq!(timeless(records[0].clone()).turn, 0);
    assert_eq!(paid_once(&ledger).0, 1, "{:?}", payments(&ledger));
    // Nothing is left to recover.
    assert!(other.recover("t").await.unwrap().is_none());
}

#[tokio::test]
async fn a_dropped_turn_gives_its_thread_back_to_its_runner() {
    let work = work_dir("dropped");
    let store = InMemoryStore::new();
    let runner = runner(&store, &work.join("ledger"), true);
    // Dropped before it ran, and dropped mid-way.
    let turn = runner
        .turn(TurnRequest::new("t", Message::user("settle my order")))
        .await
        .unwrap();
    drop(turn);
    let mut turn = runner
        .turn(TurnRequest::new("t", Message::user("settle my order")))
        .await
        .expect("a dropped turn holds nothing");
    turn.next().await;
    drop(turn);
    let clone = runner.clone();
    let turn = clone
        .turn(TurnRequest::new("t", Message::user("settle my order")))
        .await
        .expect("a turn dropped mid-way holds nothing either, in clones too");
    turn.finish().await;
}
