//! Workers that drain a store in batches: [`Checkpoints::claim`](crate::Checkpoints::claim) claims up to `n` pending
//! checkpoints in one store call ([`CheckpointStore::claim_pending`](crate::CheckpointStore::claim_pending)),
//! and [`ResumeRequest::claimed`](crate::ResumeRequest::claimed) resumes one whose claim the caller holds ([`HeldClaim`]).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use super::claims::{ClaimGuard, HeldClaim};
use super::runs::Runner;
use crate::agent::EventStream;
use crate::store::{CheckpointError, StoreError};

impl Runner {
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
    pub(crate) async fn claim_pending(
        &self,
        limit: usize,
    ) -> Result<Vec<HeldClaim>, CheckpointError> {
        let store = self.store.as_ref().ok_or(CheckpointError::NoStore)?;
        // Before the store call: the store starts each lease no earlier than this.
        let taken = Instant::now();
        let claims = store.claim_pending(limit, self.lease).await?;
        Ok(claims
            .into_iter()
            .map(|claim| HeldClaim {
                guard: ClaimGuard::new(Arc::clone(store), claim),
                taken,
                lease: self.lease,
            })
            .collect())
    }

    /// Resumes the checkpoint `held` claims, answering its interrupts with `targets`, as
    /// [`resume`](Runner::resume) does once it holds the claim: the run's claim is completed
    /// when it ends (or is interrupted again), and dropping the event stream before the end
    /// gives it back.
    ///
    /// Exactly-once holds as for [`resume`](Runner::resume): if the claim is old enough that
    /// its lease may have run out, it is renewed first, and if another worker took it over
    /// meanwhile this returns the claim-lost error
    /// ([`CheckpointError::Store`] of [`StoreError::ClaimLost`]) and runs nothing. A
    /// checkpoint that cannot resume here (it does not decode, was taken in another flow,
    /// `targets` names an unknown interrupt) is given back with its error; it stays pending,
    /// so a worker that drains the store should set it aside (delete it, or move it) or it
    /// will be claimed again.
    ///
    /// `held` comes from [`Checkpoints::claim`](crate::Checkpoints::claim) of this runner, or of one
    /// on the same store. See [`Checkpoints::claim`](crate::Checkpoints::claim) for an example.
    pub(crate) async fn resume_claimed(
        &self,
        held: HeldClaim,
        targets: HashMap<String, serde_json::Value>,
    ) -> Result<EventStream, CheckpointError> {
        let HeldClaim {
            mut guard,
            taken,
            lease,
        } = held;
        let claim = guard
            .claim()
            .cloned()
            .expect("a held claim is held until it is used");
        // A lease older than half its length is renewed, as a running resume renews it:
        // the run then has at least half a lease before its next renewal.
        if taken.elapsed() >= lease / 2 {
            let store = self.store.as_ref().ok_or(CheckpointError::NoStore)?;
            if let Err(e) = store.renew(&claim, self.lease).await {
                if matches!(e, StoreError::ClaimLost { .. }) {
                    // Not ours any more: nothing to give back.
                    guard.disarm();
                }
                return Err(e.into());
            }
        }
        let (checkpoint, guard) = self
            .check_claimed(guard, &targets, self.agent.name())
            .await?;
        let id = claim.id;
        let restored = self.restore(checkpoint, guard, &targets, self.agent.name(), |c| {
            format!("{}.{}", super::runs::run_id_of(&id, c), c.resumes)
        });
        Ok(self.resume_restored(&id, restored))
    }
}
