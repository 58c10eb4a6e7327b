//! Claims a run holds on a stored checkpoint: [`ClaimGuard`] (given back when dropped unless
//! the run completed it) and [`HeldClaim`], one a worker took in a batch
//! ([`Checkpoints::claim`](crate::Checkpoints::claim)) and resumes with
//! [`ResumeRequest::claimed`](crate::ResumeRequest::claimed).

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::store::{CheckpointStore, Claim, Completion, StoreError};

/// A held claim: given back when dropped unless the run completed it.
pub(crate) struct ClaimGuard {
    store: Arc<dyn CheckpointStore>,
    claim: Option<Claim>,
}

impl ClaimGuard {
    /// Holds `claim`, taken in `store`.
    pub(crate) fn new(store: Arc<dyn CheckpointStore>, claim: Claim) -> Self {
        ClaimGuard {
            store,
            claim: Some(claim),
        }
    }

    /// The claim, while held.
    pub(crate) fn claim(&self) -> Option<&Claim> {
        self.claim.as_ref()
    }

    /// Marks the claim as completed (or given back): dropping the guard then does nothing.
    pub(crate) fn disarm(&mut self) {
        self.claim = None;
    }

    /// Gives the claim back now (a failure is logged: the lease then runs out).
    pub(crate) async fn release(mut self) {
        if let Some(claim) = self.claim.take() {
            if let Err(e) = self.store.release(&claim).await {
                tracing::warn!(checkpoint = %claim.id, error = %e, "could not give a claim back");
            }
        }
    }

    /// Completes the claim with `completion`; on success the guard is disarmed.
    pub(crate) async fn complete(&mut self, completion: Completion) -> Result<u64, StoreError> {
        let Some(claim) = &self.claim else {
            return Err(StoreError::Other {
                id: String::new(),
                message: "the claim was already completed".into(),
            });
        };
        let version = self.store.complete(claim, completion).await?;
        self.disarm();
        Ok(version)
    }
}

impl Drop for ClaimGuard {
    fn drop(&mut self) {
        let Some(claim) = self.claim.take() else {
            return;
        };
        // The run was dropped before it ended: give the claim back now if a runtime is here
        // to do it; else its lease runs out.
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            let store = Arc::clone(&self.store);
            handle.spawn(async move {
                let _ = store.release(&claim).await;
            });
        }
    }
}

/// A claim on a pending checkpoint that [`Checkpoints::claim`](crate::Checkpoints::claim) took for this worker: until
/// its lease ends nobody else resumes the checkpoint. Resume it with
/// [`ResumeRequest::claimed`](crate::ResumeRequest::claimed), or give it back with [`release`](HeldClaim::release).
///
/// Dropping an unused `HeldClaim` gives the claim back (when a Tokio runtime is there to do
/// it; else its lease runs out and any worker may then take it).
pub struct HeldClaim {
    pub(super) guard: ClaimGuard,
    /// When the claim was asked for: its lease ends no earlier than `taken + lease`.
    pub(super) taken: Instant,
    pub(super) lease: Duration,
}

impl HeldClaim {
    fn claim(&self) -> &crate::Claim {
        self.guard
            .claim()
            .expect("a held claim is held until it is used")
    }

    /// The checkpoint id.
    pub fn id(&self) -> &str {
        &self.claim().id
    }

    /// The claimed record's version in the id's history.
    pub fn version(&self) -> u64 {
        self.claim().version
    }

    /// The claim's number: 1 for the record's first claim, one more for each takeover.
    pub fn attempt(&self) -> u64 {
        self.claim().attempt
    }

    /// Gives the claim back now, unused: the checkpoint is pending again, for any worker.
    pub async fn release(self) {
        self.guard.release().await;
    }
}

impl fmt::Debug for HeldClaim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HeldClaim")
            .field("claim", self.claim())
            .field("taken", &self.taken)
            .field("lease", &self.lease)
            .finish()
    }
}
