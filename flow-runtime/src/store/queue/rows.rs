//! The queue's rows in memory and their transitions: what [`InMemoryRunQueue`](super::InMemoryRunQueue)
//! and [`FileRunQueue`](super::FileRunQueue) share (one list, changed under one lock).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{
    check_name, check_new, lease_ms, Enqueue, NewRun, QueueClaim, QueueError, QueueStatus,
    QueuedRun,
};

/// Every run of a queue, in enqueue order.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
pub(crate) struct Rows {
    /// The seq the next run gets.
    pub next_seq: u64,
    /// The runs, oldest first.
    pub runs: Vec<QueuedRun>,
}

impl Rows {
    fn find(&mut self, run_id: &str) -> Option<&mut QueuedRun> {
        self.runs.iter_mut().find(|r| r.run_id == run_id)
    }

    /// Adds `run` at `now` (ms).
    pub fn enqueue(
        &mut self,
        run: NewRun,
        mode: Enqueue,
        now: u64,
    ) -> Result<QueuedRun, QueueError> {
        check_new(&run)?;
        if self.runs.iter().any(|r| r.run_id == run.run_id) {
            return Err(QueueError::Duplicate { run_id: run.run_id });
        }
        if mode == Enqueue::IfIdle {
            if let Some(busy) = self
                .runs
                .iter()
                .find(|r| r.thread == run.thread && r.status != QueueStatus::Done)
            {
                return Err(QueueError::Busy {
                    thread: run.thread,
                    run_id: busy.run_id.clone(),
                });
            }
        }
        self.next_seq += 1;
        let row = QueuedRun {
            run_id: run.run_id,
            flow: run.flow,
            thread: run.thread,
            input: run.input,
            seq: self.next_seq,
            status: QueueStatus::Pending,
            attempt: 0,
            worker: None,
            lease_until_ms: 0,
            created_ms: now,
            started_ms: None,
            ended_ms: None,
            outcome: None,
            note: None,
        };
        self.runs.push(row.clone());
        Ok(row)
    }

    /// Claims the oldest runnable run for `worker` at `now`.
    pub fn claim(
        &mut self,
        worker: &str,
        lease: std::time::Duration,
        now: u64,
    ) -> Result<Option<QueueClaim>, QueueError> {
        check_name("worker name", worker)?;
        let mut blocked: std::collections::HashSet<&str> = std::collections::HashSet::new();
        let mut chosen = None;
        for (i, r) in self.runs.iter().enumerate() {
            if r.status == QueueStatus::Done {
                continue;
            }
            if blocked.contains(r.thread.as_str()) {
                continue;
            }
            let runnable = r.status == QueueStatus::Pending
                || (r.status == QueueStatus::Running && r.lease_until_ms < now);
            if runnable {
                chosen = Some(i);
                break;
            }
            blocked.insert(r.thread.as_str());
        }
        let Some(i) = chosen else {
            return Ok(None);
        };
        let r = &mut self.runs[i];
        let takeover = r.status == QueueStatus::Running;
        r.status = QueueStatus::Running;
        r.attempt += 1;
        r.worker = Some(worker.to_owned());
        r.lease_until_ms = now.saturating_add(lease_ms(lease));
        r.started_ms.get_or_insert(now);
        Ok(Some(QueueClaim {
            run: r.clone(),
            worker: worker.to_owned(),
            attempt: r.attempt,
            takeover,
        }))
    }

    /// The claimed run, if the claim is still held.
    fn held(&mut self, claim: &QueueClaim) -> Result<&mut QueuedRun, QueueError> {
        let lost = || QueueError::ClaimLost {
            run_id: claim.run.run_id.clone(),
            attempt: claim.attempt,
        };
        match self.find(&claim.run.run_id) {
            Some(r) if r.status == QueueStatus::Running && r.attempt == claim.attempt => Ok(r),
            _ => Err(lost()),
        }
    }

    /// Extends the claim's lease.
    pub fn renew(
        &mut self,
        claim: &QueueClaim,
        lease: std::time::Duration,
        now: u64,
    ) -> Result<(), QueueError> {
        let r = self.held(claim)?;
        r.lease_until_ms = now.saturating_add(lease_ms(lease));
        Ok(())
    }

    /// Notes `note` on the claimed run.
    pub fn note(&mut self, claim: &QueueClaim, note: Value) -> Result<(), QueueError> {
        self.held(claim)?.note = Some(note);
        Ok(())
    }

    /// Hands the claim back (nothing if it is not held).
    pub fn release(&mut self, claim: &QueueClaim) {
        if let Ok(r) = self.held(claim) {
            r.status = QueueStatus::Pending;
            r.lease_until_ms = 0;
        }
    }

    /// Records the run's end.
    pub fn complete(
        &mut self,
        claim: &QueueClaim,
        outcome: Value,
        now: u64,
    ) -> Result<(), QueueError> {
        let r = self.held(claim)?;
        r.status = QueueStatus::Done;
        r.lease_until_ms = 0;
        r.ended_ms = Some(now);
        r.outcome = Some(outcome);
        Ok(())
    }

    /// The run `run_id`.
    pub fn get(&self, run_id: &str) -> Option<QueuedRun> {
        self.runs.iter().find(|r| r.run_id == run_id).cloned()
    }

    /// The runs of `thread`, oldest first.
    pub fn thread_runs(&self, thread: &str) -> Vec<QueuedRun> {
        self.runs
            .iter()
            .filter(|r| r.thread == thread)
            .cloned()
            .collect()
    }
}
