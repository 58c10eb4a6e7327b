//! Stores: checkpoints and threads ([`CheckpointStore`], [`ThreadStore`]), the step journal
//! ([`JournalStore`]), the run queue ([`RunQueue`]) and the schedules and spending kept beside
//! it ([`ScheduleStore`], [`SpendingStore`]: what threads and tenants spent, and the usage
//! report), with their backends: in memory
//! ([`InMemoryStore`]), files ([`FileStore`]), SQLite (`SqliteStore`, cargo feature `sqlite`,
//! on by default) and PostgreSQL (`PostgresStore`, feature `postgres`); encryption at rest
//! ([`SealedStore`]). Long-term memory has its own stores, in [`memory`](crate::memory).

/// A store of your own in three primitives: the `KeyValueBackend` trait and the front
/// `KeyValueStore` that keeps every rule of the contracts over it.
pub use agentweave_runtime::store::backend;
/// The conformance suite of the store contracts: run it from the tests of a store of your
/// own (see the module's docs).
pub use agentweave_runtime::store::conformance;
pub use agentweave_runtime::store::{
    crossed, usage_kept_from, Crossed, Spending, SpendingScope, SpendingStore, UsageFilter,
    UsageRow,
};
pub use agentweave_runtime::store::{
    turn_checkpoint_id, validate_id, validate_thread_id, CancelState, Checkpoint, CheckpointCodec,
    CheckpointError, CheckpointMeta, CheckpointState, CheckpointStatus, CheckpointStore, Claim,
    Completion, DeferredStep, DeferredSteps, Enqueue, FileRunQueue, FileStore, InMemoryRunQueue,
    InMemoryStore, JournalError, JournalStore, JournalSummary, NewRun, PendingCheckpoint,
    PendingInterrupt, PendingStep, QueueClaim, QueueError, QueueStatus, QueuedEvent, QueuedRun,
    RecordEnd, RecordStart, Refusal, RunQueue, SaveMode, SealError, SealedStore, SealingKeys,
    StoreError, StoredStep, ThreadError, ThreadHead, ThreadPart, ThreadRecord, ThreadStore,
    DEFAULT_CHECKPOINT_DIR, DEFAULT_LEASE, DEFAULT_MAX_CHECKPOINT_BYTES, FORMAT_VERSION,
    MAX_ID_LEN, MAX_QUEUED_INPUT_BYTES, MAX_THREAD_ID_LEN,
};
pub use agentweave_runtime::store::{MissedPolicy, Schedule, ScheduleFilter, ScheduleStore};
#[cfg(feature = "postgres")]
pub use agentweave_runtime::store::{PostgresOptions, PostgresRunQueue, PostgresStore};
#[cfg(feature = "sqlite")]
pub use agentweave_runtime::store::{
    SqliteOptions, SqliteRunQueue, SqliteStore, DEFAULT_SQLITE_PATH,
};
