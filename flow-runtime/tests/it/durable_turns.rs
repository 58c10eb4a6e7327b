//! A resumed turn is recorded exactly once however its worker stops: completing the
//! checkpoint's claim and appending the thread's record are two writes, and a worker that
//! stops between them (here: the append fails, as if the process died) leaves the thread one
//! record short. The next resume of the thread appends the missing record from the checkpoint
//! before it runs anything. (`thread_processes.rs` kills real worker processes at random
//! points of such turns.)

use crate::support;

use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use agentweave_runtime::store::{RecordEnd, RecordStart, ThreadHead, ThreadRecord};
use agentweave_runtime::TurnRequest;
use agentweave_runtime::{
    Checkpoint, CheckpointStore, Durability, InMemoryStore, Message, RecoverError, Runner,
    StoreError, ThreadError, ThreadStore, TurnOutcome,
};
use async_trait::async_trait;
use futures::StreamExt;
use support::processes::lines;
use support::steps::{audit, drive, step_desk, Audit};

/// A thread store whose worker "dies" at its first append of one kind of record.
#[derive(Clone)]
struct DiesBeforeAppend {
    inner: InMemoryStore,
    armed: Arc<AtomicBool>,
    death: Death,
}

/// Where a [`DiesBeforeAppend`] store's worker dies.
#[derive(Clone, Copy)]
enum Death {
    /// The append of a resumed part fails, as if the worker died right after completing the
    /// checkpoint's claim.
    ResumedAppendFails,
    /// The append of an interrupted new turn never returns, as if the worker died right after
    /// saving the turn's checkpoint and before recording it.
    HangsAfterSave,
}

#[async_trait]
impl ThreadStore for DiesBeforeAppend {
    async fn head(&self, id: &str) -> Result<Option<ThreadHead>, ThreadError> {
        self.inner.head(id).await
    }
    async fn read(&self, id: &str, turns: Range<u64>) -> Result<Vec<ThreadRecord>, ThreadError> {
        self.inner.read(id, turns).await
    }
    async fn append(&self, id: &str, v: u64, record: ThreadRecord) -> Result<u64, ThreadError> {
        let dies = match self.death {
            Death::ResumedAppendFails => matches!(record.start, RecordStart::Resume { .. }),
            Death::HangsAfterSave => matches!(record.end, RecordEnd::Interrupted { .. }),
        };
        if dies && self.armed.swap(false, Ordering::SeqCst) {
            if let Death::HangsAfterSave = self.death {
                futures::future::pending::<()>().await;
            }
            return Err(ThreadError::Store(StoreError::Other {
                id: id.to_owned(),
                message: "the worker died".into(),
            }));
        }
        self.inner.append(id, v, record).await
    }
    async fn list(&self) -> Result<Vec<String>, ThreadError> {
        self.inner.list().await
    }
    async fn delete(&self, id: &str) -> Result<bool, ThreadError> {
        ThreadStore::delete(&self.inner, id).await
    }
    async fn lease_thread(
        &self,
        id: &str,
        owner: &str,
        lease: Duration,
    ) -> Result<(), ThreadError> {
        self.inner.lease_thread(id, owner, lease).await
    }
    async fn renew_thread_lease(
        &self,
        id: &str,
        owner: &str,
        lease: Duration,
    ) -> Result<(), ThreadError> {
        self.inner.renew_thread_lease(id, owner, lease).await
    }
    async fn release_thread_lease(&self, id: &str, owner: &str) -> Result<(), ThreadError> {
        self.inner.release_thread_lease(id, owner).await
    }
}

fn work_dir(name: &str) -> std::path::PathBuf {
    crate::support::dirs::fresh_dir("durable", name)
}

#[tokio::test]
async fn a_resumed_part_whose_append_was_lost_is_appended_by_the_next_resume() {
    let work = work_dir("lost-append");
    let ledger = work.join("ledger");
    let memory = InMemoryStore::new();
    let threads = DiesBeforeAppend {
        inner: memory.clone(),
        armed: Arc::new(AtomicBool::new(true)),
        death: Death::ResumedAppendFails,
    };
    let runner = Runner::builder(step_desk(ledger.clone()))
        .checkpoint_store(memory.clone())
        .thread_store(threads)
        .build();

    // Turn 0 stops at step 0; its resume runs step 0, stops at step 1, completes the claim
    // and then "dies" before appending its record.
    let first = runner
        .turn(TurnRequest::new("t", Message::user("go")))
        .await
        .unwrap()
        .finish()
        .await;
    assert!(
        matches!(first, TurnOutcome::Interrupted { .. }),
        "{first:?}"
    );
    let approve = || [("desk".to_owned(), serde_json::json!("yes"))];
    let resumed = runner
        .turn(TurnRequest::resume("t", approve()))
        .await
        .unwrap()
        .finish()
        .await;
    assert!(matches!(resumed, TurnOutcome::Failed(_)), "{resumed:?}");
    assert_eq!(lines(&ledger).len(), 1, "step 0 ran");
    assert_eq!(
        runner.thread("t").records().await.unwrap().len(),
        1,
        "its record is missing"
    );

    // The next resume appends the missing record (step 0's result) before it runs step 1.
    drive(&runner, "t").await.unwrap();
    assert_eq!(
        audit(&runner, "t", &ledger).await,
        Audit::default(),
        "every step once in the thread and in the ledger"
    );
    let records = runner.thread("t").records().await.unwrap();
    let ends: Vec<&str> = records
        .iter()
        .map(|r| match &r.end {
            RecordEnd::Completed { .. } => "completed",
            RecordEnd::Interrupted { .. } => "interrupted",
        })
        .collect();
    assert_eq!(
        ends,
        ["interrupted", "interrupted", "interrupted", "completed"]
    );
    assert!(records.iter().all(|r| r.turn == 0));
    // The replayed record is the one the worker would have appended: step 0's result, ending
    // at step 1's interrupt.
    let replayed: Vec<&str> = records[1]
        .events
        .iter()
        .filter_map(|e| e.message.as_ref().map(|m| m.content.as_str()))
        .collect();
    assert!(replayed.contains(&"step 0 done"), "{replayed:?}");
    assert!(!replayed.contains(&"step 1 done"), "{replayed:?}");
    std::fs::remove_dir_all(&work).unwrap();
}

#[tokio::test]
async fn a_checkpoint_whose_thread_part_does_not_fit_the_thread_is_refused_and_nothing_is_written()
{
    let work = work_dir("forged-part");
    let ledger = work.join("ledger");
    let memory = InMemoryStore::new();
    let threads = DiesBeforeAppend {
        inner: memory.clone(),
        armed: Arc::new(AtomicBool::new(true)),
        death: Death::ResumedAppendFails,
    };
    let runner = Runner::builder(step_desk(ledger.clone()))
        .checkpoint_store(memory.clone())
        .thread_store(threads)
        .build();
    runner
        .turn(TurnRequest::new("t", Message::user("go")))
        .await
        .unwrap()
        .finish()
        .await;
    let approve = || [("desk".to_owned(), serde_json::json!("yes"))];
    runner
        .turn(TurnRequest::resume("t", approve()))
        .await
        .unwrap()
        .finish()
        .await;

    // The checkpoint now says its record goes with another thread.
    let records = runner.thread("t").records().await.unwrap();
    let RecordEnd::Interrupted { checkpoint_id, .. } = &records[0].end else {
        panic!("an interrupted turn")
    };
    let bytes = memory.get(checkpoint_id).await.unwrap().unwrap();
    let mut forged = Checkpoint::decode(checkpoint_id, &bytes).unwrap();
    forged
        .thread_part
        .as_mut()
        .expect("a resumed part's checkpoint")
        .thread = "other".into();
    memory.set(checkpoint_id, forged.encode()).await.unwrap();

    match runner.turn(TurnRequest::resume("t", approve())).await {
        Err(ThreadError::Corrupt { id, seq: 1, reason }) => {
            assert_eq!(id, "t");
            assert!(reason.contains("does not fit"), "{reason}");
        }
        other => panic!("expected Corrupt, got {:?}", other.map(|_| ())),
    }
    assert_eq!(
        runner.thread("t").records().await.unwrap().len(),
        1,
        "nothing written"
    );
    assert_eq!(lines(&ledger).len(), 1, "nothing ran");
    // The claim was given back: the checkpoint waits for its resume.
    assert!(memory
        .claim(checkpoint_id, Duration::from_secs(1))
        .await
        .is_ok());
    std::fs::remove_dir_all(&work).unwrap();
}

/// The pending checkpoints of `memory`, by id.
async fn pending_ids(runner: &Runner) -> Vec<String> {
    let mut ids: Vec<String> = runner
        .checkpoints()
        .pending(100)
        .await
        .unwrap()
        .into_iter()
        .map(|p| p.id)
        .collect();
    ids.sort();
    ids
}

#[tokio::test]
async fn a_worker_dead_between_a_checkpoints_save_and_its_record_leaves_nothing_to_pay_again() {
    let work = work_dir("save-then-die");
    let ledger = work.join("ledger");
    let memory = InMemoryStore::new();
    let lease = Duration::from_millis(50);
    let dying = Runner::builder(step_desk(ledger.clone()))
        .checkpoint_store(memory.clone())
        .thread_store(DiesBeforeAppend {
            inner: memory.clone(),
            armed: Arc::new(AtomicBool::new(true)),
            death: Death::HangsAfterSave,
        })
        .journal_store(memory.clone())
        .durability(Durability::Sync)
        .lease(lease)
        .build();
    let mut turn = dying
        .turn(TurnRequest::new("t", Message::user("go")))
        .await
        .unwrap();
    // Runs until the record's append never returns: the worker is dead from there on.
    while let Ok(Some(_)) = tokio::time::timeout(Duration::from_millis(300), turn.next()).await {}
    std::mem::forget(turn);
    assert_eq!(
        pending_ids(&dying).await.len(),
        1,
        "the checkpoint was saved"
    );
    assert!(dying.thread("t").records().await.unwrap().is_empty());

    // Another worker recovers the thread once the dead one's lease ran out.
    let other = Runner::builder(step_desk(ledger.clone()))
        .stores(memory.clone())
        .journal_store(memory.clone())
        .durability(Durability::Sync)
        .lease(lease)
        .build();
    let recovered = loop {
        match other.recover("t").await {
            Err(RecoverError::Leased { .. }) => tokio::time::sleep(Duration::from_millis(10)).await,
            other => break other.unwrap(),
        }
    };
    if let Some(turn) = recovered {
        let outcome = turn.finish().await;
        assert!(
            matches!(outcome, TurnOutcome::Interrupted { .. }),
            "{outcome:?}"
        );
    }
    let records = other.thread("t").records().await.unwrap();
    assert_eq!(records.len(), 1, "the turn is recorded once");
    let RecordEnd::Interrupted { checkpoint_id, .. } = &records[0].end else {
        panic!("the turn waits for its approval: {:?}", records[0].end);
    };
    // The only pending checkpoint is the one the record names: no second approval to pay.
    assert_eq!(
        pending_ids(&other).await,
        std::slice::from_ref(checkpoint_id)
    );
    // Approving it runs the step once.
    drive(&other, "t").await.unwrap();
    assert_eq!(
        audit(&other, "t", &ledger).await,
        Audit::default(),
        "every step once in the thread and in the ledger"
    );
    assert!(pending_ids(&other).await.is_empty());
}
