//! [`Checkpoints`]: the checkpoints of a runner's store outside threads: loading one, the
//! runs waiting for their resume (what an approvals screen lists), and claiming them in
//! batches (workers that drain a store).

use super::claims::HeldClaim;
use super::runs::Runner;
use crate::store::{Checkpoint, CheckpointError, PendingInterrupt};

/// The checkpoints of a runner's [`CheckpointStore`](crate::CheckpointStore), from
/// [`Runner::checkpoints`].
#[derive(Debug, Clone, Copy)]
pub struct Checkpoints<'a> {
    pub(super) runner: &'a Runner,
}

impl Runner {
    /// The checkpoints of this runner's checkpoint store outside threads (see
    /// [`Checkpoints`]).
    pub fn checkpoints(&self) -> Checkpoints<'_> {
        Checkpoints { runner: self }
    }
}

impl Checkpoints<'_> {
    /// Loads and checks a checkpoint without claiming it: it exists, decodes, was taken in
    /// this flow, and has not been resumed to its end.
    pub async fn load(&self, checkpoint_id: &str) -> Result<Checkpoint, CheckpointError> {
        self.runner.load_checkpoint(checkpoint_id).await
    }

    /// The runs waiting for their resume in this runner's store, oldest first, at most
    /// `limit`: each with its id, the flow it was taken in, its interrupts (ids and infos)
    /// and when it was saved. What an approvals screen lists. Checkpoints that do not decode
    /// are left out (and stay in the store).
    pub async fn pending(&self, limit: usize) -> Result<Vec<PendingInterrupt>, CheckpointError> {
        self.runner.pending_interrupts(limit).await
    }

    /// Claims up to `limit` pending checkpoints of this runner's store that no live claim
    /// holds, oldest first, each for this runner's [lease](crate::RunnerBuilder::lease): one store call
    /// (on PostgreSQL one statement that passes over the rows other workers are claiming).
    /// Of any number of workers calling this at once, each checkpoint goes to exactly one.
    /// An empty result means nothing is claimable now.
    ///
    /// Resume each with [`ResumeRequest::claimed`](crate::ResumeRequest::claimed): it is what a worker
    /// loop calls instead of listing [`Checkpoints::pending`](crate::Checkpoints::pending) and
    /// racing the other workers to [`resume`](Runner::resume) each. The store's pending
    /// checkpoints are those of runs and of thread turns alike: a worker of this kind should
    /// have a store of its own runs (thread turns resume with
    /// [`TurnRequest::resume`](crate::TurnRequest::resume)).
    ///
    /// A held claim keeps the exactly-once promise: if it is old enough for its lease to have
    /// run out it is renewed first, and if another worker took it over meanwhile
    /// `ResumeRequest::claimed` gives `StoreError::ClaimLost` and runs nothing; an unused
    /// [`HeldClaim`](crate::HeldClaim) is given back when dropped (or its lease runs out). Keep
    /// batches small next to the lease (a batch of 32 resumes of a second each with the default
    /// five-minute lease), so the last claim of a batch is not stale by the time its turn comes.
    /// W8 in BENCHMARKS.md measures what batches buy.
    ///
    /// ```
    /// use std::collections::HashMap;
    /// use std::sync::Arc;
    /// use agentweave_runtime::{FlowAgent, FnAgent, InMemoryStore, Message, ResumeRequest, RunRequest, Runner, Session};
    /// use futures::StreamExt;
    /// # futures::executor::block_on(async {
    /// let desk = FlowAgent::new(
    ///     FnAgent::new("refund", |cx, _| async move {
    ///         cx.interrupt(serde_json::json!("approve?"));
    ///         Ok(())
    ///     })
    ///     .on_resume(|cx, _, _| async move {
    ///         cx.say("refunded");
    ///         Ok(())
    ///     }),
    /// );
    /// let runner = Runner::builder(desk).checkpoint_store(InMemoryStore::new()).build();
    /// for k in 0..5 {
    ///     let order = [Arc::new(Message::user("refund"))];
    ///     let _: Vec<_> = runner.run(RunRequest::new(order).session(Session::new()).checkpoint(format!("order-{k}"))).collect().await;
    /// }
    /// // A worker: claim a batch, resume each, until nothing is left.
    /// let mut resumed = 0;
    /// loop {
    ///     let batch = runner.checkpoints().claim(2).await.unwrap();
    ///     if batch.is_empty() {
    ///         break;
    ///     }
    ///     for held in batch {
    ///         let events: Vec<_> = runner.resume(ResumeRequest::claimed(held, HashMap::new())).await.unwrap().collect().await;
    ///         assert_eq!(events[0].message_output().unwrap().content, "refunded");
    ///         resumed += 1;
    ///     }
    /// }
    /// assert_eq!(resumed, 5);
    /// # });
    /// ```
    pub async fn claim(&self, limit: usize) -> Result<Vec<HeldClaim>, CheckpointError> {
        self.runner.claim_pending(limit).await
    }
}
