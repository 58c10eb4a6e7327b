//! [`JournalStore`]: the contract of run journals, the append-only lists of steps a run writes
//! as it proceeds (see `runner::journal` for what a step holds and when it is written).
//!
//! A journal is keyed by a run id (the ids of checkpoints: [`validate_id`](super::validate_id)).
//! Its steps are numbered from 0 with no gap; a step is opaque bytes to the store, with a short
//! `kind` label (`model_reply`, `tool_result`, ...) and the time it was written, so a history
//! can be listed without decoding. Storage is linear in the steps: an append writes only its
//! new steps, never the journal again.
//!
//! The contract:
//! - **An append is atomic and conditional.** [`JournalStore::append_steps`] adds its steps
//!   (all or none) only if the journal holds exactly `expected` steps; else
//!   [`JournalError::Conflict`] and nothing is written. The run that appends holds the claim or
//!   lease of its run (a checkpoint's claim, a thread's turn lease), so the condition only
//!   refuses a writer whose lease was taken over.
//! - **Reads see whole steps**, in order; a step torn by a crash during its append is never
//!   returned (it was never acknowledged), and a step whose bytes do not check is
//!   [`JournalError::Corrupt`].
//! - [`truncate_steps`](JournalStore::truncate_steps) drops the steps from a position on (a run
//!   taken over discards what its dead worker wrote after the state it restarts from);
//!   [`delete_journal`](JournalStore::delete_journal) removes them all.

use std::sync::Arc;

use async_trait::async_trait;

use super::StoreError;

/// One stored step of a journal.
#[derive(Clone, PartialEq, Eq)]
pub struct StoredStep {
    /// Its position, from 0.
    pub seq: u64,
    /// When it was appended, in milliseconds since the Unix epoch.
    pub at_ms: u64,
    /// What kind of step it is (a short label, at most 64 bytes of `a-z _`).
    pub kind: String,
    /// Its bytes.
    pub bytes: Vec<u8>,
}

impl std::fmt::Debug for StoredStep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoredStep")
            .field("seq", &self.seq)
            .field("at_ms", &self.at_ms)
            .field("kind", &self.kind)
            .field("bytes", &self.bytes.len())
            .finish()
    }
}

/// A step whose bytes are made only when it is read: what a run hands a store that keeps its
/// steps in memory ([`JournalStore::keeps_deferred`]), so a step costs no encoding until
/// someone reads the journal (most journals in memory are never read).
pub trait DeferredStep: Send + Sync + 'static {
    /// Its kind label (as [`StoredStep::kind`]).
    fn kind(&self) -> &str;
    /// Its bytes (as [`StoredStep::bytes`]); made again at each read.
    fn encode(&self) -> Vec<u8>;
}

/// Steps handed over together, whose bytes are made only when they are read: what a run in
/// [`Async`](crate::Durability::Async) hands a store that keeps its steps in memory
/// ([`JournalStore::append_deferred_batch`]), one batch at a time, so a step costs neither an
/// encoding nor an allocation of its own.
pub trait DeferredSteps: Send + Sync + 'static {
    /// How many steps the batch holds.
    fn len(&self) -> usize;
    /// Whether it holds none.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The kind label of step `index` of the batch (as [`StoredStep::kind`]).
    fn kind(&self, index: usize) -> &str;
    /// The bytes of step `index` of the batch (as [`StoredStep::bytes`]); made again at each
    /// read.
    fn encode(&self, index: usize) -> Vec<u8>;
}

/// A [`DeferredStep`] as it is appended: when it was handed over, and the step.
#[derive(Clone)]
pub struct PendingStep {
    /// When it was appended, in milliseconds since the Unix epoch.
    pub at_ms: u64,
    /// The step.
    pub step: Arc<dyn DeferredStep>,
}

impl PendingStep {
    /// The step encoded, at position `seq`.
    pub fn stored(&self, seq: u64) -> StoredStep {
        StoredStep {
            seq,
            at_ms: self.at_ms,
            kind: self.step.kind().to_owned(),
            bytes: self.step.encode(),
        }
    }
}

impl std::fmt::Debug for PendingStep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PendingStep")
            .field("at_ms", &self.at_ms)
            .field("kind", &self.step.kind())
            .finish()
    }
}

/// A journal as [`JournalStore::idle_journals`] lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JournalSummary {
    /// The run the journal belongs to (its id).
    pub run: String,
    /// How many steps it holds.
    pub steps: u64,
    /// When its last step was appended, in milliseconds since the Unix epoch.
    pub last_at_ms: u64,
}

/// Why a journal could not be read or written. Nothing stored is changed when one is returned.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum JournalError {
    /// The journal does not hold the number of steps the writer expected: another writer
    /// appended (its lease was taken over) or the journal was truncated.
    #[error(
        "journal of run '{run}' holds {found} steps, not the {expected} this writer expected: \
         another worker took the run over (or it was truncated); nothing was written"
    )]
    Conflict {
        /// The run.
        run: String,
        /// The steps the writer expected.
        expected: u64,
        /// The steps the journal holds.
        found: u64,
    },
    /// A stored step does not read as a step (a forged or damaged journal).
    #[error("step {seq} of the journal of run '{run}' is corrupt: {reason}")]
    Corrupt {
        /// The run.
        run: String,
        /// The step's position.
        seq: u64,
        /// What is wrong with it.
        reason: String,
    },
    /// A step's kind is not 1 to 64 bytes of `a-z _`.
    #[error("step kind '{kind}' is not valid: use 1 to 64 characters of a-z and '_'")]
    InvalidKind {
        /// The kind given.
        kind: String,
    },
    /// The store failed (or the run id is invalid: [`StoreError::InvalidId`]).
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Checks a step's kind label.
pub(crate) fn check_kind(kind: &str) -> Result<(), JournalError> {
    if !kind.is_empty()
        && kind.len() <= 64
        && kind.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')
    {
        Ok(())
    } else {
        Err(JournalError::InvalidKind {
            kind: kind.chars().take(80).collect(),
        })
    }
}

/// Where runs' journals are kept: the contract every store implements (the durability modes
/// that write to it: [`Durability`](crate::Durability)).
///
/// ```
/// use agentweave_runtime::store::{InMemoryStore, JournalError, JournalStore, StoredStep};
/// # futures::executor::block_on(async {
/// let store = InMemoryStore::new();
/// let step = |seq| StoredStep { seq, at_ms: 0, kind: "model_reply".into(), bytes: b"{}".to_vec() };
/// assert_eq!(store.append_steps("run-1", 0, vec![step(0), step(1)]).await.unwrap(), 2);
/// // A writer that expected an empty journal is refused.
/// assert!(matches!(
///     store.append_steps("run-1", 0, vec![step(0)]).await,
///     Err(JournalError::Conflict { expected: 0, found: 2, .. })
/// ));
/// assert_eq!(store.read_steps("run-1", 1).await.unwrap().len(), 1);
/// # });
/// ```
#[async_trait]
pub trait JournalStore: Send + Sync + 'static {
    /// Appends `steps` to `run`'s journal if it holds exactly `expected` steps (the store
    /// numbers them `expected`, `expected + 1`, ...); returns the journal's new length.
    /// Atomic: all the steps or none.
    async fn append_steps(
        &self,
        run: &str,
        expected: u64,
        steps: Vec<StoredStep>,
    ) -> Result<u64, JournalError>;

    /// The steps of `run`'s journal from position `from` on, in order (empty for an unknown
    /// run).
    async fn read_steps(&self, run: &str, from: u64) -> Result<Vec<StoredStep>, JournalError>;

    /// The number of steps in `run`'s journal (0 for an unknown run).
    async fn journal_len(&self, run: &str) -> Result<u64, JournalError>;

    /// Drops the steps of `run`'s journal from position `len` on (nothing if it is shorter).
    async fn truncate_steps(&self, run: &str, len: u64) -> Result<(), JournalError>;

    /// Removes `run`'s journal; returns whether it had steps.
    async fn delete_journal(&self, run: &str) -> Result<bool, JournalError>;

    /// The journals whose last step was appended at or before `at_ms` (milliseconds since
    /// the Unix epoch), ordered by run id; journals without steps are not listed. What
    /// housekeeping reads to find the journals of runs that ended long ago
    /// ([`Runner::purge`](crate::Runner::purge)); a store may scan every journal for it.
    async fn idle_journals(&self, at_ms: u64) -> Result<Vec<JournalSummary>, JournalError>;

    /// [`append_steps`](JournalStore::append_steps) without waiting for the steps to reach
    /// the disk: what the [`Async`](crate::Durability::Async) mode appends with. A store may
    /// leave them to its next synced write (SQLite: a commit without an `fsync` of its own,
    /// which the write-ahead log makes durable with the next synced commit): a crash of the
    /// process loses none of them, a power loss may lose the last ones. The default is
    /// `append_steps`.
    async fn append_steps_unsynced(
        &self,
        run: &str,
        expected: u64,
        steps: Vec<StoredStep>,
    ) -> Result<u64, JournalError> {
        self.append_steps(run, expected, steps).await
    }

    /// Whether this store keeps [`DeferredStep`]s as they are, encoding them only when they
    /// are read ([`InMemoryStore`](super::InMemoryStore)): a run then hands its steps over in
    /// line, without encoding them (a `Sync` run each step as it happens, at the cost of a
    /// lock; an `Async` run in batches, [`append_deferred_batch`](JournalStore::append_deferred_batch)).
    /// Default `false`: a run's steps are encoded and appended (`Async`: in batches, by a
    /// background task).
    fn keeps_deferred(&self) -> bool {
        false
    }

    /// [`append_steps`](JournalStore::append_steps) for steps whose bytes are made only when
    /// they are needed. The default encodes them now and appends them.
    async fn append_deferred(
        &self,
        run: &str,
        expected: u64,
        steps: Vec<PendingStep>,
    ) -> Result<u64, JournalError> {
        let stored = steps
            .iter()
            .enumerate()
            .map(|(k, p)| p.stored(expected + k as u64))
            .collect();
        self.append_steps(run, expected, stored).await
    }

    /// [`append_steps`](JournalStore::append_steps) for a batch of steps whose bytes are made
    /// only when they are needed, all appended at `at_ms`. The default encodes them now and
    /// appends them.
    async fn append_deferred_batch(
        &self,
        run: &str,
        expected: u64,
        at_ms: u64,
        steps: Arc<dyn DeferredSteps>,
    ) -> Result<u64, JournalError> {
        let stored = (0..steps.len())
            .map(|k| StoredStep {
                seq: expected + k as u64,
                at_ms,
                kind: steps.kind(k).to_owned(),
                bytes: steps.encode(k),
            })
            .collect();
        self.append_steps(run, expected, stored).await
    }
}
