//! The step journal: each durability mode writes what it promises, a resume continues its
//! run's journal, a thread's turn is journaled under its turn id, and a journal of another
//! flow, a forged step, or a missing journal store are typed errors.

use crate::support;

use std::sync::Arc;

use agentweave_runtime::store::{JournalStore, StoredStep};
use agentweave_runtime::RunnerBuilder;
use agentweave_runtime::{
    turn_journal_id, Durability, FlowAgent, FnAgent, InMemoryStore, JournalError, Message, Runner,
    Session, StepKind,
};
use agentweave_runtime::{ResumeRequest, RunRequest, TurnRequest};
use futures::StreamExt;
use support::steps::{drive, step_desk};

fn approve() -> std::collections::HashMap<String, serde_json::Value> {
    [("desk".to_owned(), serde_json::json!("yes"))].into()
}

fn temp_ledger(name: &str) -> std::path::PathBuf {
    crate::support::dirs::fresh_dir("journal", name).join("ledger")
}

fn runner(ledger: &std::path::Path, store: &InMemoryStore, mode: Durability) -> Runner {
    Runner::builder(step_desk(ledger.to_path_buf()))
        .stores(store.clone())
        .journal_store(store.clone())
        .durability(mode)
        .build()
}

/// Starts run `id` of `runner` on a new session with the user's "go"; returns the session
/// and the run's events.
fn start(runner: &Runner, id: &str) -> (Arc<Session>, agentweave_runtime::EventStream) {
    let session = Session::new();
    let events = runner.run(
        RunRequest::new([Message::user("go")])
            .session(Arc::clone(&session))
            .checkpoint(id),
    );
    (session, events)
}

/// Resumes run `id` of `runner` with the desk's approval, to its next stop, without an error.
async fn resume_approved(runner: &Runner, id: &str) {
    let resumed: Vec<_> = runner
        .resume(ResumeRequest::new(id, approve()))
        .await
        .unwrap()
        .collect()
        .await;
    assert!(resumed.iter().all(|e| e.error.is_none()), "{resumed:?}");
}

#[tokio::test]
async fn in_sync_mode_each_step_is_stored_before_its_event_reaches_the_caller() {
    let ledger = temp_ledger("sync");
    let store = InMemoryStore::new();
    let runner = runner(&ledger, &store, Durability::Sync);
    let (session, mut events) = start(&runner, "run-1");
    while let Some(event) = events.next().await {
        assert!(event.error.is_none(), "{:?}", event.error);
        // Every event recorded so far (this one included) is a stored step already.
        assert_eq!(
            store.journal_len("run-1").await.unwrap(),
            session.len() as u64,
            "when {} reached the caller",
            support::line(&event)
        );
    }
    let steps = runner.journal("run-1").await.unwrap();
    let kinds: Vec<StepKind> = steps.iter().map(|s| s.kind).collect();
    // The interrupt itself is the checkpoint (saved before its event reaches the caller).
    assert_eq!(kinds, [StepKind::ModelReply]);
    // The journal is the run's record.
    let recorded: Vec<_> = session.events();
    assert_eq!(steps.len(), recorded.len());
    for (step, event) in steps.iter().zip(&recorded) {
        assert_eq!(&*step.event.agent_name, event.agent_name());
        assert_eq!(&step.event.run_path, event.run_path());
    }

    // The resume continues the same journal; tool results carry their idempotency key.
    resume_approved(&runner, "run-1").await;
    let steps = runner.journal("run-1").await.unwrap();
    let kinds: Vec<StepKind> = steps.iter().map(|s| s.kind).collect();
    assert_eq!(
        kinds[..3],
        [
            StepKind::ModelReply,
            StepKind::ToolResult,
            StepKind::ModelReply
        ]
    );
    let paid = std::fs::read_to_string(&ledger).unwrap();
    let key = steps[1]
        .idempotency_key
        .as_deref()
        .expect("a tool result's key");
    assert_eq!(paid.trim(), format!("0 {key}"), "the key the tool ran with");
    assert!(steps.windows(2).all(|w| w[1].seq == w[0].seq + 1));
}

#[tokio::test]
async fn in_async_mode_in_memory_the_steps_before_an_interrupt_are_stored_with_its_checkpoint() {
    let ledger = temp_ledger("async-interrupt");
    let store = InMemoryStore::new();
    let runner = runner(&ledger, &store, Durability::Async);
    let (session, mut events) = start(&runner, "run-1");
    let mut interrupts = 0;
    while let Some(event) = events.next().await {
        assert!(event.error.is_none(), "{:?}", event.error);
        if event.is_interrupt() {
            interrupts += 1;
            // The steps kept in the writer were handed over before the checkpoint was saved.
            assert_eq!(
                store.journal_len("run-1").await.unwrap(),
                session.len() as u64
            );
        }
    }
    assert_eq!(interrupts, 1);
    // A resume continues the journal at once (the first run's writer holds nothing back).
    resume_approved(&runner, "run-1").await;
    let kinds: Vec<StepKind> = runner
        .journal("run-1")
        .await
        .unwrap()
        .iter()
        .map(|s| s.kind)
        .collect();
    assert_eq!(
        kinds[..3],
        [
            StepKind::ModelReply,
            StepKind::ToolResult,
            StepKind::ModelReply
        ]
    );
}

#[tokio::test]
async fn an_async_run_in_memory_dropped_midway_keeps_every_step_it_made() {
    let ledger = temp_ledger("async-dropped");
    let store = InMemoryStore::new();
    let runner = runner(&ledger, &store, Durability::Async);
    let (session, mut events) = start(&runner, "run-1");
    let first = events.next().await.unwrap();
    assert!(first.error.is_none(), "{:?}", first.error);
    // The caller stops reading: the run is dropped with the steps its writer kept.
    drop(events);
    let steps = runner.journal("run-1").await.unwrap();
    let recorded = session.events();
    assert!(!recorded.is_empty());
    assert_eq!(steps.len(), recorded.len());
    for (step, event) in steps.iter().zip(&recorded) {
        assert_eq!(&*step.event.agent_name, event.agent_name());
        assert_eq!(&step.event.run_path, event.run_path());
    }
    assert_eq!(steps[0].kind, StepKind::ModelReply);
}

#[tokio::test]
async fn async_mode_stores_every_step_by_the_end_and_exit_mode_writes_none() {
    let ledger = temp_ledger("async");
    let store = InMemoryStore::new();
    let runner = runner(&ledger, &store, Durability::Async);
    drive(&runner, "t").await.unwrap();
    let turn0 = runner.journal(&turn_journal_id("t", 0)).await.unwrap();
    // The turn's record, resumes included, step by step: 3 approvals, 3 results, the answer.
    let records = runner.thread("t").records().await.unwrap();
    let recorded: usize = records.iter().map(|r| r.events.len()).sum();
    assert_eq!(turn0.len(), recorded);
    let results = turn0
        .iter()
        .filter(|s| s.kind == StepKind::ToolResult)
        .count();
    assert_eq!(results, 3);
    let answer = turn0.last().unwrap().event.message.as_ref().unwrap();
    assert_eq!(answer.content, "all steps done");

    // Deleting the thread deletes every turn's journal.
    assert!(runner.thread("t").delete().await.unwrap());
    assert_eq!(
        store.journal_len(&turn_journal_id("t", 0)).await.unwrap(),
        0
    );

    let quiet = InMemoryStore::new();
    let exit = self::runner(&temp_ledger("exit"), &quiet, Durability::Exit);
    drive(&exit, "t").await.unwrap();
    assert_eq!(
        quiet.journal_len(&turn_journal_id("t", 0)).await.unwrap(),
        0
    );
}

#[tokio::test]
async fn a_journal_of_another_flow_or_a_forged_step_is_refused_and_left_as_it_is() {
    let ledger = temp_ledger("foreign");
    let store = InMemoryStore::new();
    let runner = runner(&ledger, &store, Durability::Sync);
    let _: Vec<_> = runner
        .run(RunRequest::new([Message::user("go")]).checkpoint("run-2"))
        .collect()
        .await;
    let before = store.read_steps("run-2", 0).await.unwrap();
    // Another flow's runner reads it.
    let other = Runner::builder(FlowAgent::new(FnAgent::new("other", |_, _| async {
        Ok(())
    })))
    .journal_store(store.clone())
    .build();
    match other.journal("run-2").await {
        Err(JournalError::Corrupt { seq: 0, reason, .. }) => {
            assert!(reason.contains("another flow"), "{reason}")
        }
        r => panic!("expected Corrupt, got {r:?}"),
    }
    // A forged step (its bytes not a step, or a kind that does not match what it records).
    store
        .append_steps(
            "run-2",
            before.len() as u64,
            vec![StoredStep {
                seq: 0,
                at_ms: 0,
                kind: "tool_result".into(),
                bytes: b"{\"flow\":\"x\"".to_vec(),
            }],
        )
        .await
        .unwrap();
    match runner.journal("run-2").await {
        Err(JournalError::Corrupt { seq, reason, .. }) => {
            assert_eq!(seq, before.len() as u64);
            assert!(reason.contains("does not decode"), "{reason}");
        }
        r => panic!("expected Corrupt, got {r:?}"),
    }
    let mut lying = before[0].clone();
    lying.kind = "tool_result".into();
    let forged = InMemoryStore::new();
    forged.append_steps("run-3", 0, vec![lying]).await.unwrap();
    let reader = RunnerBuilder::from(runner.clone())
        .journal_store(forged.clone())
        .build();
    assert!(matches!(
        reader.journal("run-3").await,
        Err(JournalError::Corrupt { seq: 0, .. })
    ));
    assert_eq!(
        store.read_steps("run-2", 0).await.unwrap()[..before.len()],
        before[..]
    );
}

#[tokio::test]
async fn sync_durability_without_a_journal_store_runs_nothing_and_says_why() {
    let ledger = temp_ledger("nostore");
    let store = InMemoryStore::new();
    let runner = Runner::builder(step_desk(ledger.clone()))
        .stores(store)
        .durability(Durability::Sync)
        .build();
    let events: Vec<_> = runner
        .run(RunRequest::new([Message::user("go")]).checkpoint("run-4"))
        .collect()
        .await;
    assert_eq!(events.len(), 1);
    let error = events[0].error.as_ref().unwrap().to_string();
    assert!(error.contains("journal_store"), "{error}");
    assert!(!ledger.exists());
}

/// A streaming `Sync` turn run as a background run, and as a queued run: its tool call goes
/// through the journal gate (the streamed reply that asked for it is stored first; it joins
/// the session only when its stream ends, after its event passed the turn) and reaches the
/// tool, which asks for approval. This hung before the gate could ask the turn to store.
#[tokio::test]
async fn a_streaming_sync_run_reaches_its_tool_as_a_background_and_as_a_queued_run() {
    let ledger = temp_ledger("sync-runs");
    let store = InMemoryStore::new();
    let runner = RunnerBuilder::from(runner(&ledger, &store, Durability::Sync))
        .streaming(true)
        .build();
    let run = runner
        .start(TurnRequest::new("bg", Message::user("go")).if_busy(Default::default()))
        .await
        .unwrap();
    let outcome = tokio::time::timeout(std::time::Duration::from_secs(20), run.wait())
        .await
        .expect("a Sync background run ends");
    assert!(
        matches!(outcome, agentweave_runtime::RunOutcome::Interrupted { .. }),
        "{outcome:?}"
    );
    let run = runner
        .start(TurnRequest::new("queued", Message::user("go")).run_id("run-q"))
        .await
        .unwrap();
    let outcome = tokio::time::timeout(std::time::Duration::from_secs(20), run.wait())
        .await
        .expect("a Sync queued run ends");
    assert!(
        matches!(outcome, agentweave_runtime::RunOutcome::Interrupted { .. }),
        "{outcome:?}"
    );
}

#[tokio::test]
async fn in_async_mode_in_memory_a_streamed_reply_reaches_the_caller_before_it_ends() {
    use agentweave_runtime::{EventOutput, MessageStreamSender};
    // The test holds the stream's sender: the reply ends only when the test says so.
    let sender: Arc<std::sync::Mutex<Option<MessageStreamSender>>> = Arc::default();
    let held = Arc::clone(&sender);
    let agent = FnAgent::new("desk", move |cx, _| {
        let held = Arc::clone(&held);
        async move {
            let (tx, stream) = agentweave_runtime::MessageStream::channel();
            tx.send(Message::assistant("refund "));
            *held.lock().unwrap() = Some(tx);
            cx.send_stream(stream);
            Ok(())
        }
    });
    let store = InMemoryStore::new();
    let runner = Runner::builder(FlowAgent::new(agent))
        .stores(store.clone())
        .journal_store(store.clone())
        .durability(Durability::Async)
        .streaming(true)
        .build();
    let mut turn = runner
        .turn(TurnRequest::new("t", Message::user("go")))
        .await
        .unwrap();
    // Bounded only so that a regression fails instead of hanging: the reply has not ended.
    let first = tokio::time::timeout(std::time::Duration::from_secs(20), turn.next())
        .await
        .expect("the streamed reply's event comes while the reply is still streaming")
        .unwrap();
    let Some(EventOutput::Stream(mut stream)) = first.output.clone() else {
        panic!("expected a streamed message: {first:?}");
    };
    assert_eq!(stream.next().await.unwrap().unwrap().content, "refund ");
    let tx = sender
        .lock()
        .unwrap()
        .take()
        .expect("the agent holds the stream");
    tx.send(Message::assistant("sent"));
    drop(tx);
    assert_eq!(stream.next().await.unwrap().unwrap().content, "sent");
    assert!(turn.next().await.is_none());
    // The journal keeps the reply whole.
    let steps = runner.journal(&turn_journal_id("t", 0)).await.unwrap();
    let reply = steps.last().unwrap().event.message.as_ref().unwrap();
    assert_eq!(reply.content, "refund sent");
}
