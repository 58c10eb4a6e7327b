//! [`InMemoryRunQueue`]: the run queue of one process, for tests.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::Value;

use super::rows::Rows;
use super::{
    check_name, check_run_id, check_thread, CancelState, Enqueue, NewRun, QueueCap, QueueClaim,
    QueueError, QueuedEvent, QueuedRun, RunQueue,
};
use crate::store::now_ms;
use crate::store::schedule::InMemorySchedules;

/// A run queue in memory: shared by the tasks of one process (clones share it); gone when
/// the process ends.
#[derive(Debug, Clone, Default)]
pub struct InMemoryRunQueue {
    rows: Arc<Mutex<Rows>>,
    schedules: InMemorySchedules,
    spending: crate::store::spending::InMemorySpending,
}

impl InMemoryRunQueue {
    /// An empty queue.
    pub fn new() -> Self {
        Self::default()
    }

    /// Its spending (the store the queue answers [`RunQueue::spending`] with).
    pub(crate) fn spending_rows(&self) -> &crate::store::spending::InMemorySpending {
        &self.spending
    }

    fn rows(&self) -> std::sync::MutexGuard<'_, Rows> {
        self.rows.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[async_trait]
impl RunQueue for InMemoryRunQueue {
    async fn enqueue(&self, run: NewRun, mode: Enqueue) -> Result<QueuedRun, QueueError> {
        self.rows().enqueue(run, mode, now_ms(), None)
    }

    async fn enqueue_within(
        &self,
        run: NewRun,
        mode: Enqueue,
        cap: &QueueCap,
    ) -> Result<QueuedRun, QueueError> {
        // Counted and added under the one lock of the rows.
        self.rows().enqueue(run, mode, now_ms(), Some(cap))
    }

    async fn claim(&self, worker: &str, lease: Duration) -> Result<Option<QueueClaim>, QueueError> {
        self.rows().claim(worker, lease, now_ms(), None)
    }

    async fn renew(&self, claim: &QueueClaim, lease: Duration) -> Result<(), QueueError> {
        self.rows().renew(claim, lease, now_ms())
    }

    async fn note(&self, claim: &QueueClaim, note: Value) -> Result<(), QueueError> {
        self.rows().note(claim, note)
    }

    async fn release(&self, claim: &QueueClaim) -> Result<(), QueueError> {
        self.rows().release(claim);
        Ok(())
    }

    async fn complete(&self, claim: &QueueClaim, outcome: Value) -> Result<(), QueueError> {
        let mut rows = self.rows();
        let seq = rows.complete(claim, outcome.clone(), now_ms())?;
        rows.keep_events(&claim.run.run_id, seq, vec![("done".to_owned(), outcome)]);
        Ok(())
    }

    async fn get(&self, run_id: &str) -> Result<Option<QueuedRun>, QueueError> {
        check_run_id(run_id)?;
        Ok(self.rows().get(run_id))
    }

    async fn thread_runs(&self, thread: &str) -> Result<Vec<QueuedRun>, QueueError> {
        check_thread(thread)?;
        Ok(self.rows().thread_runs(thread))
    }

    async fn unfinished_with_prefix(&self, prefix: &str) -> Result<usize, QueueError> {
        Ok(self.rows().unfinished_with_prefix(prefix))
    }

    fn spending(&self) -> Option<&dyn crate::store::SpendingStore> {
        Some(&self.spending)
    }

    fn schedules(&self) -> Option<&dyn crate::store::ScheduleStore> {
        Some(&self.schedules)
    }

    async fn claim_among(
        &self,
        worker: &str,
        lease: Duration,
        flows: &[String],
    ) -> Result<Option<QueueClaim>, QueueError> {
        self.rows().claim(worker, lease, now_ms(), Some(flows))
    }

    async fn append_events(
        &self,
        claim: &QueueClaim,
        events: Vec<(String, Value)>,
    ) -> Result<u64, QueueError> {
        let mut rows = self.rows();
        let count = events.len() as u64;
        let first = rows.reserve_events(claim, count)?;
        rows.keep_events(&claim.run.run_id, first, events);
        Ok(first + count - 1)
    }

    async fn events_after(
        &self,
        run_id: &str,
        after: u64,
        limit: usize,
    ) -> Result<Vec<QueuedEvent>, QueueError> {
        check_run_id(run_id)?;
        Ok(self.rows().events_after(run_id, after, limit))
    }

    async fn trim_events(&self, ended_before_ms: u64) -> Result<usize, QueueError> {
        Ok(self.rows().trim(ended_before_ms).len())
    }

    async fn cancel(
        &self,
        run_id: &str,
        request: Value,
        outcome: Value,
    ) -> Result<Option<CancelState>, QueueError> {
        let mut rows = self.rows();
        let state = rows.cancel(run_id, request, outcome.clone(), now_ms())?;
        if let Some(CancelState::Ended(row)) = &state {
            rows.keep_events(run_id, row.events, vec![("done".to_owned(), outcome)]);
        }
        Ok(state)
    }

    async fn cancel_requested(&self, claim: &QueueClaim) -> Result<Option<Value>, QueueError> {
        check_name("worker name", &claim.worker)?;
        Ok(self.rows().cancel_requested(claim))
    }
}
