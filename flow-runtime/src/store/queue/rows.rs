//! The queue's rows in memory and their transitions: what [`InMemoryRunQueue`](super::InMemoryRunQueue)
//! and [`FileRunQueue`](super::FileRunQueue) share (one list, changed under one lock).

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{
    check_name, check_new, check_run_id, lease_ms, CancelState, Enqueue, NewRun, QueueCap,
    QueueClaim, QueueError, QueueStatus, QueuedEvent, QueuedRun,
};

/// Every run of a queue, in enqueue order.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
pub(crate) struct Rows {
    /// The seq the next run gets.
    pub next_seq: u64,
    /// The runs, oldest first.
    pub runs: Vec<QueuedRun>,
    /// The runs' events, by run id (kept here by the in-memory queue only: the file queue
    /// keeps them in files of their own).
    #[serde(skip)]
    pub events: HashMap<String, Vec<QueuedEvent>>,
}

impl Rows {
    fn find(&mut self, run_id: &str) -> Option<&mut QueuedRun> {
        self.runs.iter_mut().find(|r| r.run_id == run_id)
    }

    /// Adds `run` at `now` (ms), within `cap` if given (counted and added under the caller's
    /// one lock).
    pub fn enqueue(
        &mut self,
        run: NewRun,
        mode: Enqueue,
        now: u64,
        cap: Option<&QueueCap>,
    ) -> Result<QueuedRun, QueueError> {
        check_new(&run)?;
        if let Some(cap) = cap {
            cap.check(&run)?;
        }
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
        if let Some(cap) = cap {
            cap.full(self.unfinished_with_prefix(&cap.prefix))?;
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
            events: 0,
            events_trimmed: false,
            cancel: None,
        };
        self.runs.push(row.clone());
        Ok(row)
    }

    /// Claims the oldest runnable run (of `flows`, if given) for `worker` at `now`.
    pub fn claim(
        &mut self,
        worker: &str,
        lease: std::time::Duration,
        now: u64,
        flows: Option<&[String]>,
    ) -> Result<Option<QueueClaim>, QueueError> {
        check_name("worker name", worker)?;
        // Runs held by a live lease, by group: the fair choice prefers the group with fewest.
        let mut running: HashMap<&str, usize> = HashMap::new();
        for r in &self.runs {
            if r.status == QueueStatus::Running && r.lease_until_ms >= now {
                *running.entry(super::claim_group(&r.thread)).or_default() += 1;
            }
        }
        let mut blocked: std::collections::HashSet<&str> = std::collections::HashSet::new();
        // (running runs of its group, index): the smallest wins; the index breaks ties by age.
        let mut chosen: Option<(usize, usize)> = None;
        for (i, r) in self.runs.iter().enumerate() {
            if r.status == QueueStatus::Done {
                continue;
            }
            if !blocked.insert(r.thread.as_str()) {
                // Not the thread's first unfinished run: it waits for that one.
                continue;
            }
            let runnable = r.status == QueueStatus::Pending
                || (r.status == QueueStatus::Running && r.lease_until_ms < now);
            let served = flows.map_or(true, |f| f.contains(&r.flow));
            if runnable && served {
                let load = running
                    .get(super::claim_group(&r.thread))
                    .copied()
                    .unwrap_or(0);
                if chosen.map_or(true, |(best, _)| load < best) {
                    chosen = Some((load, i));
                    if load == 0 {
                        break;
                    }
                }
            }
        }
        let Some((_, i)) = chosen else {
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
        match self.find(&claim.run.run_id) {
            Some(r) if r.status == QueueStatus::Running && r.attempt == claim.attempt => Ok(r),
            _ => Err(claim.lost()),
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

    /// Records the run's end; numbers its `done` event (answered; the caller keeps it).
    pub fn complete(
        &mut self,
        claim: &QueueClaim,
        outcome: Value,
        now: u64,
    ) -> Result<u64, QueueError> {
        let r = self.held(claim)?;
        r.status = QueueStatus::Done;
        r.lease_until_ms = 0;
        r.ended_ms = Some(now);
        r.outcome = Some(outcome);
        r.events += 1;
        Ok(r.events)
    }

    /// Numbers `count` new events of the claimed run: answers the first one's number.
    pub fn reserve_events(&mut self, claim: &QueueClaim, count: u64) -> Result<u64, QueueError> {
        let r = self.held(claim)?;
        let first = r.events + 1;
        r.events += count;
        Ok(first)
    }

    /// Keeps `events` (numbered from `first`) of run `run_id` in memory.
    pub fn keep_events(&mut self, run_id: &str, first: u64, events: Vec<(String, Value)>) {
        let kept = self.events.entry(run_id.to_owned()).or_default();
        for (i, (kind, data)) in events.into_iter().enumerate() {
            kept.push(QueuedEvent {
                seq: first + i as u64,
                kind,
                data,
            });
        }
    }

    /// The events of `run_id` kept in memory after `after`, at most `limit`.
    pub fn events_after(&self, run_id: &str, after: u64, limit: usize) -> Vec<QueuedEvent> {
        self.events.get(run_id).map_or_else(Vec::new, |events| {
            let start = events.partition_point(|e| e.seq <= after);
            events[start..].iter().take(limit).cloned().collect()
        })
    }

    /// Marks the runs that ended before `before` trimmed; answers their ids.
    pub fn trim(&mut self, before: u64) -> Vec<String> {
        let mut trimmed = Vec::new();
        for r in &mut self.runs {
            if r.status == QueueStatus::Done
                && !r.events_trimmed
                && r.ended_ms.is_some_and(|t| t < before)
            {
                r.events_trimmed = true;
                trimmed.push(r.run_id.clone());
            }
        }
        for id in &trimmed {
            self.events.remove(id);
        }
        trimmed
    }

    /// Cancels `run_id` at `now` (see [`RunQueue::cancel`](super::RunQueue::cancel)); a
    /// waiting run's `done` event is numbered (its row's `events`), not kept: the caller keeps
    /// it.
    pub fn cancel(
        &mut self,
        run_id: &str,
        request: Value,
        outcome: Value,
        now: u64,
    ) -> Result<Option<CancelState>, QueueError> {
        check_run_id(run_id)?;
        let Some(r) = self.find(run_id) else {
            return Ok(None);
        };
        Ok(Some(match r.status {
            QueueStatus::Done => {
                return Err(QueueError::Ended {
                    run_id: run_id.to_owned(),
                })
            }
            QueueStatus::Pending => {
                r.status = QueueStatus::Done;
                r.ended_ms = Some(now);
                r.outcome = Some(outcome);
                r.cancel = Some(request);
                r.events += 1;
                CancelState::Ended(r.clone())
            }
            QueueStatus::Running => {
                r.cancel = Some(request);
                CancelState::Requested(r.clone())
            }
        }))
    }

    /// The cancel request on the claimed run.
    pub fn cancel_requested(&mut self, claim: &QueueClaim) -> Option<Value> {
        self.find(&claim.run.run_id)
            .filter(|r| r.attempt == claim.attempt)
            .and_then(|r| r.cancel.clone())
    }

    /// The run `run_id`.
    pub fn get(&self, run_id: &str) -> Option<QueuedRun> {
        self.runs.iter().find(|r| r.run_id == run_id).cloned()
    }

    /// Runs not ended whose thread starts with `prefix`.
    pub fn unfinished_with_prefix(&self, prefix: &str) -> usize {
        self.runs
            .iter()
            .filter(|r| r.status != QueueStatus::Done && r.thread.starts_with(prefix))
            .count()
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
