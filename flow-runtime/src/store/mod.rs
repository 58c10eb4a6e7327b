//! Checkpoints, threads and journals, and where they are kept: the [`Checkpoint`] format, the
//! [`CheckpointStore`] contract with its atomic claim, the [`ThreadStore`] contract of
//! conversations, the [`JournalStore`] contract of run journals (the steps a run appends as it
//! proceeds), and the stores that ship with the runtime ([`InMemoryStore`], [`FileStore`],
//! and `SqliteStore` and `PostgresStore` behind the `sqlite` and `postgres` features: each
//! implements the three traits). Beside them, the [`RunQueue`] contract of background runs
//! waiting for a worker, with a queue for each store (`queue/`), the [`ScheduleStore`] contract
//! of cron schedules kept beside the queue's runs (`schedule/`), the [`SpendingStore`] contract
//! of what threads and tenants spent and the usage report, kept there too (`spending/`), and
//! long-term memory
//! ([`memory_items`]: the [`MemoryStore`](memory_items::MemoryStore) contract of items keyed by
//! tenant, scope, namespace and key, with an in-memory, a SQLite and a PostgreSQL store).
//!
//! A checkpoint is what an interrupted run saves so it can resume, even in another process.
//!
//! # The format
//!
//! A checkpoint holds the run's input, its session (events and values), the interrupts it
//! stopped at and the fingerprint of the flow's shape. It is encoded as
//!
//! ```text
//! agentflow-checkpoint <version>\n
//! <FNV-1a 64 of the body, 16 hex digits>\n
//! <body: JSON>
//! ```
//!
//! so foreign bytes, an unknown version, a truncated or corrupted file and a checkpoint of a
//! different flow are each told apart and reported as a [`CheckpointError`].
//!
//! # The contract: what runs once, and what may run again
//!
//! A store keeps, under each checkpoint id, the **history** of one run: a chain of records,
//! each linked to its parent ([`CheckpointStore::history`]). The last record is the *head*.
//! A head is [`Pending`](CheckpointState::Pending) while the run waits for its resume.
//!
//! - **Saving never silently replaces a waiting run.** [`SaveMode::Create`] on an id whose head
//!   is pending (or being resumed) fails with [`StoreError::Pending`]; only
//!   [`SaveMode::Replace`] replaces it, and the replaced record stays in the history.
//! - **The resume claim is exactly-once.** [`CheckpointStore::claim`] takes the pending head
//!   atomically (in the store itself: a lock file, a row update that checks the state, ...). Of
//!   any number of claimants, in threads, processes or machines, exactly one gets the
//!   [`Claim`]; every other gets [`StoreError::Claimed`] (someone holds it) or
//!   [`StoreError::AlreadyResumed`] (its resume is complete) and must run nothing.
//! - **A claim is a lease.** It holds for the duration the claimant asked for, and can be
//!   renewed ([`CheckpointStore::renew`]). If the claimant dies, its lease runs out and another
//!   worker may claim the same record again (a *takeover*; [`Claim::attempt`] counts them). The
//!   old holder can then no longer complete it: [`StoreError::ClaimLost`].
//! - **Workers claim in batches.** [`CheckpointStore::claim_pending`] claims up to `n` pending
//!   heads no live claim holds, each with its own [`Claim`] and lease, in one call (one
//!   statement in SQL, `FOR UPDATE SKIP LOCKED` on PostgreSQL): concurrent workers get
//!   disjoint batches, and a claimed head is not claimed again until it is released or its
//!   lease runs out.
//! - **Completing ends the claim.** [`CheckpointStore::complete`] records the outcome of the
//!   resumed run, atomically with checking that the claim is still held: either the run
//!   finished ([`Completion::Finished`], the head becomes [`Finished`](CheckpointState::Finished))
//!   or it was interrupted again ([`Completion::Interrupted`]: a new pending record, child of the
//!   claimed one). [`CheckpointStore::release`] gives a claim back unused.
//!
//! What is therefore **at-least-once**: the work a claimant did before it died (or lost its
//! lease). When a worker dies while a tool call is in flight, the worker that takes the claim
//! over resumes the same checkpoint and runs that call again. Each call gets an idempotency key
//! ([`ToolContext::idempotency_key`](crate::ToolContext::idempotency_key)), the same for every
//! resume of the same checkpoint, so a tool with side effects (a payment) can deduplicate.
//!
//! # Choosing a store
//!
//! | store | survives the process | shared by | use for |
//! | --- | --- | --- | --- |
//! | [`InMemoryStore`] | no | tasks of one process | tests |
//! | [`FileStore`] | yes | processes of one machine (lock files) | a directory you can inspect |
//! | `SqliteStore` (feature `sqlite`) | yes | processes of one machine (WAL) | the durable default |
//! | `PostgresStore` (feature `postgres`) | yes | workers on many machines | a service |
//!
//! Any of them can be sealed at rest: [`SealedStore`] wraps a store and seals thread records,
//! checkpoints and journal steps with AES-256-GCM ([`SealingKeys`], keys by id so they rotate;
//! `sealing.rs` the keys and format, `sealed.rs` the wrapper); under the key-value front,
//! [`backend::SealedBackend`] seals every value a backend keeps.
//!
//! `rules.rs` holds the checks every store makes before it writes (ids, sizes, step kinds,
//! the journal's expected length), called by the front;
//! `records.rs` the state machine of a run's checkpoint history.
//!
//! A store of your own needs only three primitives: [`backend`]'s `KeyValueBackend` (read,
//! compare-and-swap write, scan), under the front `KeyValueStore` that keeps every rule;
//! [`InMemoryStore`] is that same front over values kept in memory, [`FileStore`] over a
//! directory (`file/` is its disk layer only: paths, atomic writes, locks, journal frames),
//! and the SQL stores over their tables' rows (`sql/`: the keeper's rows and statements).
//! Whether a store keeps its contract is checked by [`conformance`], the suite every store
//! of ours passes and that a store of your own can run from its tests.
//!
//! `SqliteStore` and `PostgresStore` are one store, `SqlStore<DB>` (`sql/`), as are
//! their run queues (`queue/sql.rs`, with `schedule/sql.rs` and `spending/sql.rs`) and memory
//! stores (`memory_items/sql.rs`): what differs between the two databases is data, a `Dialect`
//! (in `sqlite.rs` and `postgres.rs`), and a test prepares every statement on both.
//! `sqlite_journal.rs` (a child module of `sqlite.rs`) holds SQLite's journal appends: one group
//! writer per store, whose transactions commit every append waiting at once.

pub mod backend;
mod checkpoint;
pub mod conformance;
mod file;
mod journal;
mod memory;
pub mod memory_items;
#[cfg(feature = "postgres")]
mod postgres;
pub(crate) mod queue;
mod records;
mod rules;
pub(crate) mod schedule;
mod sealed;
mod sealing;
pub(crate) mod spending;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod sql;
#[cfg(feature = "sqlite")]
mod sqlite;
mod thread;

use std::error::Error as StdError;
use std::fmt;
use std::io;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use async_trait::async_trait;

pub use crate::event::RecordedEvent;
pub(crate) use crate::ids::unique_token;
pub use checkpoint::{
    Checkpoint, CheckpointCodec, CheckpointError, CheckpointStatus, ThreadPart, FORMAT_VERSION,
};
pub use file::{FileStore, DEFAULT_CHECKPOINT_DIR};
pub use journal::{
    DeferredStep, DeferredSteps, JournalError, JournalStore, JournalSummary, PendingStep,
    StoredStep,
};
pub use memory::InMemoryStore;
#[cfg(feature = "postgres")]
pub use postgres::{PostgresOptions, PostgresStore};
#[cfg(feature = "postgres")]
pub use queue::PostgresRunQueue;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub use queue::SqlRunQueue;
#[cfg(feature = "sqlite")]
pub use queue::SqliteRunQueue;
pub use queue::{
    CancelState, Enqueue, FileRunQueue, InMemoryRunQueue, NewRun, QueueCap, QueueClaim, QueueError,
    QueueStatus, QueuedEvent, QueuedRun, RunQueue, MAX_QUEUED_INPUT_BYTES,
};
pub use schedule::{MissedPolicy, Schedule, ScheduleFilter, ScheduleStore};
pub(crate) use sealed::OpenedOnly;
pub use sealed::SealedStore;
pub use sealing::{SealError, SealingKeys};
pub use spending::{
    crossed, usage_kept_from, Crossed, Spending, SpendingScope, SpendingStore, UsageFilter,
    UsageRow,
};
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub use sql::{Dialect, SqlDatabase, SqlStore};
#[cfg(feature = "sqlite")]
pub use sqlite::{SqliteFile, SqliteOptions, SqliteStore, DEFAULT_SQLITE_PATH};

/// How long a claim lasts when the caller does not say (see [`RunnerBuilder::lease`](crate::RunnerBuilder::lease)).
pub const DEFAULT_LEASE: Duration = Duration::from_secs(300);

/// The largest checkpoint a store reads unless configured otherwise: 64 MiB.
pub const DEFAULT_MAX_CHECKPOINT_BYTES: u64 = 64 * 1024 * 1024;

/// Whether [`CheckpointStore::save`] may replace a run that waits for its resume.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SaveMode {
    /// Start a run's history under the id, or continue one whose head is no longer pending
    /// (finished). Fails with [`StoreError::Pending`] if the head is pending or claimed.
    Create,
    /// Replace whatever the head is: a pending head becomes
    /// [`Replaced`](CheckpointState::Replaced) (a claim on it is lost) and the new record is
    /// its child.
    Replace,
}

/// The state of one record in a run's history.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum CheckpointState {
    /// Waiting for its resume.
    Pending,
    /// Being resumed by the holder of claim `attempt`, whose lease ends at `lease_until`.
    Claimed {
        /// The claim's number: 1 for the first claim, one more for each takeover.
        attempt: u64,
        /// When another worker may take it over.
        lease_until: SystemTime,
    },
    /// Its resume completed and was interrupted again: its child is the next record.
    Resumed,
    /// Its resume ran to the end (this record holds the run's final session).
    Finished,
    /// Replaced by a [`SaveMode::Replace`] before it was resumed.
    Replaced,
}

/// One record of a run's history (see [`CheckpointStore::history`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckpointMeta {
    /// The checkpoint id (the run's).
    pub id: String,
    /// Its place in the history: 1, 2, ...
    pub version: u64,
    /// The record it continues (the one whose resume wrote it, or the one it replaced).
    pub parent: Option<u64>,
    /// Its state.
    pub state: CheckpointState,
    /// When it was written.
    pub created_at: SystemTime,
    /// Its size in bytes.
    pub size: u64,
}

/// A pending checkpoint, as [`CheckpointStore::pending`] lists it.
#[derive(Clone, PartialEq, Eq)]
pub struct PendingCheckpoint {
    /// The checkpoint id.
    pub id: String,
    /// The pending record's version.
    pub version: u64,
    /// When it was written.
    pub created_at: SystemTime,
    /// Its bytes (decode with [`Checkpoint::decode`]).
    pub bytes: Vec<u8>,
}

impl fmt::Debug for PendingCheckpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PendingCheckpoint")
            .field("id", &self.id)
            .field("version", &self.version)
            .field("created_at", &self.created_at)
            .field("bytes", &self.bytes.len())
            .finish()
    }
}

/// A claim on a pending checkpoint: the right, until the lease ends, to resume it and to
/// [complete](CheckpointStore::complete) it. Made by [`CheckpointStore::claim`].
#[derive(Clone, PartialEq, Eq)]
pub struct Claim {
    /// The checkpoint id.
    pub id: String,
    /// The version of the claimed record.
    pub version: u64,
    /// The claim token: 1 for the first claim of this record, one more for each takeover.
    /// Only the holder of the latest attempt can renew, release or complete.
    pub attempt: u64,
    /// The claimed record's bytes.
    pub bytes: Vec<u8>,
}

impl fmt::Debug for Claim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Claim")
            .field("id", &self.id)
            .field("version", &self.version)
            .field("attempt", &self.attempt)
            .field("bytes", &self.bytes.len())
            .finish()
    }
}

/// How a claimed resume ended (see [`CheckpointStore::complete`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Completion {
    /// The run ended; the bytes are its final record.
    Finished(Vec<u8>),
    /// The run was interrupted again; the bytes are the new pending checkpoint.
    Interrupted(Vec<u8>),
}

pub(crate) use thread::now_ms;
pub use thread::{
    turn_checkpoint_id, validate_thread_id, RecordEnd, RecordStart, Refusal, ThreadError,
    ThreadHead, ThreadRecord, ThreadStore, MAX_THREAD_ID_LEN,
};

/// A failure of a [`CheckpointStore`].
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The id cannot name a checkpoint (ids are 1 to 160 characters of `A-Z a-z 0-9 . _ -`,
    /// not starting with `.`).
    #[error(
        "checkpoint id '{id}' is not valid: use 1 to 160 characters of A-Z, a-z, 0-9, '.', \
         '_' or '-', not starting with '.'"
    )]
    InvalidId {
        /// The id given (cut to 200 characters).
        id: String,
    },
    /// No checkpoint has this id.
    #[error("no checkpoint '{id}' in the store; check the id the interrupted run printed")]
    NotFound {
        /// The id asked for.
        id: String,
    },
    /// [`SaveMode::Create`] on an id whose run waits for its resume.
    #[error(
        "checkpoint '{id}' holds a run waiting for its resume (version {version}); resume it, \
         delete it, or save with SaveMode::Replace to replace it"
    )]
    Pending {
        /// The id.
        id: String,
        /// The pending record's version.
        version: u64,
    },
    /// The checkpoint's resume already completed: there is nothing pending to claim.
    #[error("checkpoint '{id}' was already resumed; a checkpoint resumes once")]
    AlreadyResumed {
        /// The id.
        id: String,
    },
    /// Another claimant holds the checkpoint; it may be taken over when the lease ends.
    #[error(
        "checkpoint '{id}' is being resumed by another worker (claim {attempt}); it can be \
         taken over only if that worker's lease runs out, in {remaining:?}"
    )]
    Claimed {
        /// The id.
        id: String,
        /// The holder's claim number.
        attempt: u64,
        /// How long the holder's lease still runs.
        remaining: Duration,
    },
    /// The claim is no longer held: its lease ran out and another worker took it over, or the
    /// checkpoint was replaced or deleted. Nothing was written.
    #[error(
        "the claim {attempt} on checkpoint '{id}' (version {version}) is no longer held: its \
         lease ran out and another worker took over, or the checkpoint was replaced or deleted"
    )]
    ClaimLost {
        /// The id.
        id: String,
        /// The claimed version.
        version: u64,
        /// The lost claim's number.
        attempt: u64,
    },
    /// The checkpoint is larger than the store's read limit.
    #[error(
        "checkpoint '{id}' is {size} bytes, over this store's limit of {limit} bytes; raise \
         the limit with max_checkpoint_bytes if it is genuine"
    )]
    TooLarge {
        /// The id.
        id: String,
        /// Its size.
        size: u64,
        /// The limit.
        limit: u64,
    },
    /// The store's schema was written by a newer build.
    #[error(
        "the checkpoint store's schema is version {found}; this build knows versions up to \
         {supported}: upgrade agentflow or use another database"
    )]
    Schema {
        /// The version found.
        found: i64,
        /// The latest version this build knows.
        supported: i64,
    },
    /// Reading or writing failed.
    #[error("checkpoint store could not {operation} '{id}': {source}")]
    Io {
        /// What the store was doing: `read`, `write`, `claim`, ...
        operation: &'static str,
        /// The checkpoint id (or the store's path).
        id: String,
        /// The underlying error.
        #[source]
        source: Arc<io::Error>,
    },
    /// The database failed.
    #[error("checkpoint database could not {operation} '{id}': {source}")]
    Database {
        /// What the store was doing.
        operation: &'static str,
        /// The checkpoint id (or the database).
        id: String,
        /// The driver's error.
        #[source]
        source: Arc<dyn StdError + Send + Sync>,
    },
    /// Any other failure of a store of your own.
    #[error("checkpoint store failed on '{id}': {message}")]
    Other {
        /// The checkpoint id.
        id: String,
        /// What went wrong.
        message: String,
    },
    /// Sealed data (encrypted at rest) could not be opened: an unknown key id, the wrong key,
    /// or altered bytes. What is stored is unchanged.
    #[error(transparent)]
    Sealed(#[from] SealError),
}

/// Where interrupted runs wait for their resume: the contract every store implements (see
/// the [module docs](self) for what it guarantees).
///
/// Every method validates the id ([`validate_id`]) and refuses checkpoints larger than the
/// store's read limit ([`StoreError::TooLarge`]).
///
/// ```
/// use std::time::Duration;
/// use agentweave_runtime::store::{CheckpointStore, Completion, InMemoryStore, SaveMode, StoreError};
/// # futures::executor::block_on(async {
/// let store = InMemoryStore::new();
/// store.save("order-7", b"waiting".to_vec(), SaveMode::Create).await.unwrap();
/// // A second run under the same id is refused while the first waits.
/// assert!(matches!(
///     store.save("order-7", b"other".to_vec(), SaveMode::Create).await,
///     Err(StoreError::Pending { .. })
/// ));
/// let claim = store.claim("order-7", Duration::from_secs(60)).await.unwrap();
/// assert_eq!(claim.bytes, b"waiting");
/// // Nobody else gets it.
/// assert!(matches!(
///     store.claim("order-7", Duration::from_secs(60)).await,
///     Err(StoreError::Claimed { .. })
/// ));
/// store.complete(&claim, Completion::Finished(b"done".to_vec())).await.unwrap();
/// assert!(matches!(
///     store.claim("order-7", Duration::from_secs(60)).await,
///     Err(StoreError::AlreadyResumed { .. })
/// ));
/// assert_eq!(store.history("order-7").await.unwrap().len(), 2);
/// # });
/// ```
#[async_trait]
pub trait CheckpointStore: Send + Sync + 'static {
    /// The bytes of the head record under `id` (whatever its state), if any.
    async fn get(&self, id: &str) -> Result<Option<Vec<u8>>, StoreError>;

    /// Appends `bytes` as the new head of `id`'s history, as [`mode`](SaveMode) allows;
    /// returns its version. Atomic: afterwards `get` returns the new bytes; if it fails, the
    /// store is as it was.
    async fn save(&self, id: &str, bytes: Vec<u8>, mode: SaveMode) -> Result<u64, StoreError>;

    /// Takes the pending head of `id` for `lease`: exactly one concurrent claimant succeeds.
    /// A claimed head whose lease has run out is taken over (with the next
    /// [`attempt`](Claim::attempt)).
    ///
    /// Errors: [`StoreError::NotFound`], [`StoreError::Claimed`] (held by another),
    /// [`StoreError::AlreadyResumed`] (nothing pending).
    async fn claim(&self, id: &str, lease: std::time::Duration) -> Result<Claim, StoreError>;

    /// Extends a held claim's lease to `lease` from now; [`StoreError::ClaimLost`] if the
    /// claim is no longer held.
    async fn renew(&self, claim: &Claim, lease: std::time::Duration) -> Result<(), StoreError>;

    /// Gives a held claim back: the record is pending again, for anyone to claim. Does
    /// nothing if the claim is no longer held.
    async fn release(&self, claim: &Claim) -> Result<(), StoreError>;

    /// Records how the claimed resume ended, if the claim is still held (else
    /// [`StoreError::ClaimLost`], and nothing is written); returns the new record's version.
    async fn complete(&self, claim: &Claim, completion: Completion) -> Result<u64, StoreError>;

    /// The records of `id`'s run, oldest first (empty if there are none).
    async fn history(&self, id: &str) -> Result<Vec<CheckpointMeta>, StoreError>;

    /// Pending heads (claimed ones included: a claim may be lost), oldest first, at most
    /// `limit`: what an approvals screen lists, and what workers drain.
    async fn pending(&self, limit: usize) -> Result<Vec<PendingCheckpoint>, StoreError>;

    /// Claims up to `limit` pending heads that no live claim holds, oldest first, each for
    /// `lease` with its own [`Claim`] (a head whose lease ran out is taken over, as
    /// [`claim`](CheckpointStore::claim) does): what a worker draining the store calls. Of
    /// any number of concurrent callers, each head goes to exactly one; an empty result means
    /// nothing is claimable right now. A head larger than the store's read limit is left for
    /// [`claim`](CheckpointStore::claim) to report.
    ///
    /// The SQL stores take the batch in one statement that skips the rows other workers hold
    /// (PostgreSQL: `FOR UPDATE SKIP LOCKED`) and read only the waiting rows' index; the
    /// in-memory and file stores claim each head in turn. This default, for stores of your
    /// own, lists [`pending`](CheckpointStore::pending) heads and claims each, skipping those
    /// another claimant holds or finished.
    ///
    /// ```
    /// use std::time::Duration;
    /// use agentweave_runtime::store::{CheckpointStore, Completion, InMemoryStore, SaveMode};
    /// # futures::executor::block_on(async {
    /// let store = InMemoryStore::new();
    /// for id in ["a", "b", "c"] {
    ///     store.save(id, b"waiting".to_vec(), SaveMode::Create).await.unwrap();
    /// }
    /// let lease = Duration::from_secs(60);
    /// let mine = store.claim_pending(2, lease).await.unwrap();
    /// let theirs = store.claim_pending(2, lease).await.unwrap();
    /// assert_eq!((mine.len(), theirs.len()), (2, 1)); // "c" only: the others are held
    /// for claim in mine.iter().chain(&theirs) {
    ///     store.complete(claim, Completion::Finished(b"done".to_vec())).await.unwrap();
    /// }
    /// assert!(store.claim_pending(2, lease).await.unwrap().is_empty());
    /// # });
    /// ```
    async fn claim_pending(
        &self,
        limit: usize,
        lease: std::time::Duration,
    ) -> Result<Vec<Claim>, StoreError> {
        let mut claims = Vec::new();
        if limit == 0 {
            return Ok(claims);
        }
        // Heads held by live claims are listed too: the window of oldest heads grows until it
        // yields `limit` claims or holds every pending head.
        let mut tried = std::collections::HashSet::new();
        let mut window = limit.saturating_mul(2).max(limit + 8);
        loop {
            let listed = self.pending(window).await?;
            let exhausted = listed.len() < window;
            for p in listed {
                if claims.len() == limit {
                    return Ok(claims);
                }
                if !tried.insert(p.id.clone()) {
                    continue;
                }
                match self.claim(&p.id, lease).await {
                    Ok(claim) => claims.push(claim),
                    Err(
                        StoreError::Claimed { .. }
                        | StoreError::AlreadyResumed { .. }
                        | StoreError::NotFound { .. }
                        | StoreError::TooLarge { .. },
                    ) => {}
                    Err(e) => {
                        for claim in &claims {
                            let _ = self.release(claim).await;
                        }
                        return Err(e);
                    }
                }
            }
            if exhausted || claims.len() == limit {
                return Ok(claims);
            }
            window = window.saturating_mul(2);
        }
    }

    /// Deletes the histories of runs that finished at least `age` ago; returns how many runs
    /// were deleted. Pending runs are never deleted by this.
    async fn purge_finished(&self, age: std::time::Duration) -> Result<usize, StoreError>;

    /// Removes `id`'s whole history; removing a missing id is not an error. A claim on it is
    /// lost.
    async fn delete(&self, id: &str) -> Result<(), StoreError>;

    /// Stores `bytes` under `id`, replacing what was there: [`save`](CheckpointStore::save)
    /// with [`SaveMode::Replace`].
    async fn set(&self, id: &str, bytes: Vec<u8>) -> Result<(), StoreError> {
        self.save(id, bytes, SaveMode::Replace).await.map(|_| ())
    }
}

/// The longest checkpoint id (a file name of the File store with room to spare; a thread's
/// longest id, [`MAX_THREAD_ID_LEN`], with its turn and nonce fits).
pub const MAX_ID_LEN: usize = 160;

/// Checks that `id` is a valid checkpoint id (see [`StoreError::InvalidId`]): it cannot name
/// a path outside a store (`../x`, `/etc/passwd`), hold a NUL, or be very long.
pub fn validate_id(id: &str) -> Result<(), StoreError> {
    if is_valid_key(id, MAX_ID_LEN) {
        Ok(())
    } else {
        let mut shown: String = id.chars().take(200).collect();
        shown = shown.replace('\0', "\\0");
        Err(StoreError::InvalidId { id: shown })
    }
}

/// Whether `id` is 1 to `max_len` characters of `A-Z a-z 0-9 . _ -`, not starting with `.`:
/// the rule of checkpoint and thread ids.
pub(crate) fn is_valid_key(id: &str, max_len: usize) -> bool {
    !id.is_empty()
        && id.len() <= max_len
        && !id.starts_with('.')
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// `time` as milliseconds since the Unix epoch (0 before it).
pub(crate) fn millis(time: SystemTime) -> u64 {
    time.duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// Milliseconds since the Unix epoch as a time.
pub(crate) fn from_millis(ms: u64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_millis(ms)
}

/// A run waiting for its resume, as an approvals screen shows it (see
/// [`Checkpoints::pending`](crate::Checkpoints::pending)).
#[derive(Debug, Clone, PartialEq)]
pub struct PendingInterrupt {
    /// The checkpoint id to resume.
    pub id: String,
    /// The pending record's version in the id's history.
    pub version: u64,
    /// When it was saved.
    pub created_at: SystemTime,
    /// The shape of the flow it was taken in ([`FlowAgent::shape`](crate::FlowAgent::shape)).
    pub flow: String,
    /// What it waits for: each interrupt's id (to address resume data to) and info.
    pub interrupts: Vec<crate::InterruptInfo>,
}
