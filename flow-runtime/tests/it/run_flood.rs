//! A thread flooded with runs that enqueue (issue 39, point 3): every run registered together
//! with the runs it waits for, so no two wait for each other; all of them end, in order; a
//! cancel of a run still waiting ends it at once, whatever its mode.

use std::sync::{Arc, Mutex};

use agentweave_runtime::{
    CancelMode, DoubleText, FlowAgent, FnAgent, InMemoryStore, Message, RunOutcome, RunStatus,
    Runner, TurnRequest,
};
use tokio::sync::Semaphore;

/// A runner whose agent notes each message it runs, after taking a place from `gate` (closed:
/// the first run waits there until the test opens it).
fn runner(gate: Arc<Semaphore>, seen: Arc<Mutex<Vec<String>>>) -> Runner {
    let agent = FnAgent::new("desk", move |cx, input| {
        let (gate, seen) = (Arc::clone(&gate), Arc::clone(&seen));
        async move {
            gate.acquire().await.unwrap().forget();
            let text = input
                .messages
                .last()
                .map(|m| m.content.clone())
                .unwrap_or_default();
            seen.lock().unwrap().push(text.clone());
            cx.say(format!("done {text}"));
            Ok(())
        }
    });
    Runner::builder(FlowAgent::new(agent))
        .stores(InMemoryStore::new())
        .build()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_hundred_concurrent_enqueues_on_one_thread_all_end_in_order() {
    let gate = Arc::new(Semaphore::new(0));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let runner = runner(Arc::clone(&gate), Arc::clone(&seen));
    // The first run holds the thread while 300 more register at the same time.
    let first = runner
        .start(TurnRequest::new("t", Message::user("m0")))
        .await
        .unwrap();
    let starts = (1..=300).map(|i| {
        let runner = runner.clone();
        tokio::spawn(async move {
            runner
                .start(
                    TurnRequest::new("t", Message::user(format!("m{i}")))
                        .if_busy(DoubleText::Enqueue),
                )
                .await
                .unwrap()
        })
    });
    let runs: Vec<_> = futures::future::join_all(starts)
        .await
        .into_iter()
        .map(Result::unwrap)
        .collect();
    assert!(runs.iter().all(|r| r.status() == RunStatus::Pending));
    gate.add_permits(1_000);
    assert!(matches!(first.wait().await, RunOutcome::Success { .. }));
    for run in &runs {
        assert!(
            matches!(run.wait().await, RunOutcome::Success { .. }),
            "run {} did not succeed",
            run.id()
        );
    }
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 301, "every run ran once");
    assert_eq!(seen[0], "m0");
}

#[tokio::test]
async fn a_cancel_of_a_waiting_run_ends_it_at_once_in_any_mode() {
    let gate = Arc::new(Semaphore::new(0));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let runner = runner(Arc::clone(&gate), Arc::clone(&seen));
    let first = runner
        .start(TurnRequest::new("t", Message::user("first")))
        .await
        .unwrap();
    let mut waiting = Vec::new();
    for mode in ["immediate", "after_model", "after_tools"] {
        let run = runner
            .start(TurnRequest::new("t", Message::user(mode)).if_busy(DoubleText::Enqueue))
            .await
            .unwrap();
        run.cancel(mode.parse::<CancelMode>().unwrap(), None)
            .unwrap();
        waiting.push(run);
    }
    // Each ends cancelled while the first still holds the thread.
    for run in &waiting {
        assert!(
            matches!(run.wait().await, RunOutcome::Cancelled { .. }),
            "{:?}",
            run.outcome()
        );
    }
    assert_eq!(first.status(), RunStatus::Running);
    gate.add_permits(10);
    assert!(matches!(first.wait().await, RunOutcome::Success { .. }));
    assert_eq!(*seen.lock().unwrap(), ["first"], "no cancelled run ran");
}
