//! The thread store contract: conversations (threads) as ordered, append-only records.
//!
//! A thread is a conversation of many user turns. Its store keeps, per thread id, an ordered
//! list of [`ThreadRecord`]s: one per turn, plus one per resumed continuation of a turn that
//! was interrupted. Each record holds the recorded events of its part of the turn, in the same
//! serde form as a checkpoint's ([`RecordedEvent`]), where the part started, and how it ended
//! (who answered last, or which interrupts it waits on).
//!
//! The thread's **version** is its number of records. A record is appended only if the version
//! the writer loaded is still current ([`ThreadStore::append`] is a compare-and-swap): of two
//! turns that loaded the same thread, one appends and the other gets
//! [`ThreadError::Conflict`], so records of two turns are never interleaved.
//!
//! Records serialise to JSON like this (one record of turn 0, started at `triage`, answered by
//! `complaint`):
//!
//! ```json
//! {"seq":0,"turn":0,"at_ms":1764763200000,
//!  "start":{"turn":{"input":[{"role":"user","content":"My kettle broke"}]}},
//!  "started_at":["triage"],
//!  "events":[{"agent_name":"triage","run_path":["triage"],
//!             "message":{"role":"tool","content":"successfully transferred to agent [complaint]",
//!                        "tool_call_id":"transfer-complaint","tool_name":"transfer_to_agent"},
//!             "action":{"transfer_to_agent":"complaint"}}],
//!  "end":{"completed":{"answered_by":"complaint"}}}
//! ```

use std::ops::Range;
use std::sync::Arc;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use super::{CheckpointError, RecordedEvent, StoreError};
use crate::event::InterruptInfo;
use crate::message::Message;
use crate::run_path::RunPath;

/// The longest thread id: room for agentweave-server's `FLOW.TENANT.THREAD` (24 + 32 + 40 characters
/// and two dots, so every id its documented limits allow fits), while an interrupted turn's
/// checkpoint id `THREAD.turn-N.NONCE` (see [`turn_checkpoint_id`]) stays a valid checkpoint id
/// (at most [`MAX_ID_LEN`](crate::store::MAX_ID_LEN) characters).
pub const MAX_THREAD_ID_LEN: usize = 100;

/// Checks that `id` can name a thread: 1 to [`MAX_THREAD_ID_LEN`] characters of
/// `A-Z a-z 0-9 . _ -`, not starting with `.` (the rules of checkpoint ids, shorter).
///
/// ```
/// use agentweave_runtime::store::validate_thread_id;
/// assert!(validate_thread_id("customer-42").is_ok());
/// assert!(validate_thread_id("../etc").is_err());
/// ```
pub fn validate_thread_id(id: &str) -> Result<(), ThreadError> {
    if super::is_valid_key(id, MAX_THREAD_ID_LEN) {
        Ok(())
    } else {
        Err(ThreadError::InvalidId { id: id.to_owned() })
    }
}

/// A new id for the checkpoint of an interrupted part of turn `turn`:
/// `THREAD.turn-N.NONCE`, with a nonce (16 hex digits) unique to this call, so two processes
/// racing on one turn never write the same checkpoint (only the one whose record is appended
/// is ever resumed).
pub fn turn_checkpoint_id(thread_id: &str, turn: u64) -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let mut seed = [0u8; 24];
    seed[..8].copy_from_slice(&nanos.to_le_bytes());
    seed[8..16].copy_from_slice(&COUNTER.fetch_add(1, Ordering::Relaxed).to_le_bytes());
    seed[16..20].copy_from_slice(&std::process::id().to_le_bytes());
    let nonce = crate::ids::fnv1a_extend(crate::ids::FNV_OFFSET, &seed);
    format!("{thread_id}.turn-{turn}.{nonce:016x}")
}

/// Why a thread could not be read, written or served. Nothing stored is changed when one is
/// returned.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum ThreadError {
    /// The id cannot name a thread.
    #[error(
        "thread id '{id}' is not valid: use 1 to 100 characters of A-Z, a-z, 0-9, '.', '_' or \
         '-', not starting with '.'"
    )]
    InvalidId {
        /// The id given.
        id: String,
    },
    /// Another turn appended to the thread since this one loaded it; this turn's records were
    /// not appended.
    #[error(
        "thread '{id}' changed while this turn ran (it loaded version {expected}, the store has \
         version {found}): another turn was recorded first, so this turn was not recorded; \
         send the message again to run it on the new thread"
    )]
    Conflict {
        /// The thread.
        id: String,
        /// The version the turn loaded.
        expected: u64,
        /// The version in the store.
        found: u64,
    },
    /// A turn of this thread is running right now, in this runner or in another process on
    /// the same store (it holds the thread's lease); this turn ran nothing.
    #[error(
        "thread '{id}' has a turn running (in this process or another one on the same store); \
         wait for it to end before sending the next message (if its worker died, its lease \
         runs out and the thread is free again)"
    )]
    Busy {
        /// The thread.
        id: String,
    },
    /// The thread has runs of this runner ([`Runner::start`](crate::Runner::start)) waiting or
    /// running: it cannot be deleted under them. Nothing was changed.
    #[error(
        "thread '{id}' has {runs} run(s) waiting or running (the oldest: '{run_id}'); cancel \
         them or wait for them to end, then delete the thread"
    )]
    RunsGoing {
        /// The thread.
        id: String,
        /// How many of its runs wait or run.
        runs: usize,
        /// The oldest of them.
        run_id: String,
    },
    /// The turn's lease on its thread ran out and another turn took the thread over; this
    /// turn was not recorded.
    #[error(
        "the lease of this turn on thread '{id}' ran out and another turn took the thread \
         over; this turn was not recorded: send the message again (and give turns a longer \
         lease, RunnerBuilder::lease, if they stay silent that long)"
    )]
    LeaseLost {
        /// The thread.
        id: String,
    },
    /// The thread's last turn was interrupted and waits to be resumed.
    #[error(
        "thread '{id}' waits for turn {turn} to be resumed (interrupts: {interrupts}); resume \
         it with TurnRequest::resume before sending a new message"
    )]
    AwaitingResume {
        /// The thread.
        id: String,
        /// The interrupted turn.
        turn: u64,
        /// Its interrupt ids, comma-separated.
        interrupts: String,
    },
    /// Resume was asked for a thread whose last turn is not interrupted.
    #[error("thread '{id}' has no interrupted turn to resume")]
    NotInterrupted {
        /// The thread.
        id: String,
    },
    /// A stored record does not decode.
    #[error("record {seq} of thread '{id}' is corrupt: {reason}")]
    Corrupt {
        /// The thread.
        id: String,
        /// The record's position.
        seq: u64,
        /// What is wrong with it.
        reason: String,
    },
    /// The turn failed (an error event); nothing of it was recorded.
    #[error(
        "turn {turn} of thread '{id}' failed and was not recorded (the thread is as it was \
         before it): {error}"
    )]
    TurnFailed {
        /// The thread.
        id: String,
        /// The turn.
        turn: u64,
        /// The first error the turn reported.
        error: crate::event::AgentError,
    },
    /// The runner has no thread store.
    #[error("this runner has no thread store; give it one with RunnerBuilder::thread_store")]
    NoStore,
    /// The turn's checkpoint could not be saved, read or resumed.
    #[error(transparent)]
    Checkpoint(#[from] CheckpointError),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The turn's journal could not be written or read.
    #[error(transparent)]
    Journal(#[from] super::JournalError),
    /// The request may not answer the interrupts the thread waits on (the runner's
    /// [`AnswerRule`](crate::AnswerRule)): nothing ran.
    #[error("thread '{id}' refused the answers: {refusal}")]
    Forbidden {
        /// The thread.
        id: String,
        /// Why.
        refusal: Refusal,
    },
}

/// Why a request may not answer a thread's interrupts ([`ThreadError::Forbidden`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Refusal {
    /// The request names nobody ([`TurnRequest::by`](crate::TurnRequest::by)); answers are
    /// always given by someone.
    #[error(
        "the answers name nobody: give who answers with TurnRequest::by (a Caller with the \
         grants answering needs)"
    )]
    Nobody,
    /// The caller lacks the grant answering needs.
    #[error("'{caller}' may not answer: answering these interrupts needs the `{grant}` grant")]
    MissingGrant {
        /// Who asked.
        caller: std::sync::Arc<str>,
        /// The grant answering needs.
        grant: std::sync::Arc<str>,
    },
    /// The caller started the turn, and the rule wants another approver.
    #[error(
        "'{caller}' started this turn and may not approve it: the flow needs the approval of \
         someone else"
    )]
    OwnRequest {
        /// Who asked (and started the turn).
        caller: std::sync::Arc<str>,
    },
}

/// What started a record: a user turn, or the resume of an interrupted one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RecordStart {
    /// A new user turn, with the user's messages.
    Turn {
        /// The messages the user sent.
        input: Vec<Message>,
    },
    /// The resume of the turn's interrupt(s).
    Resume {
        /// The checkpoint it resumed.
        checkpoint_id: String,
        /// The resume data, by interrupt id.
        #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
        targets: serde_json::Map<String, serde_json::Value>,
    },
    /// A change of the thread's values by `ThreadHandle::update_state` (no events; the record
    /// belongs to the turn before it and keeps that turn's end). A `null` value removed its
    /// key.
    Values {
        /// The values set, by key, as given.
        values: serde_json::Map<String, serde_json::Value>,
    },
}

/// How a record ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RecordEnd {
    /// The turn ended; `answered_by` is the agent that recorded the turn's last event (the one
    /// the next turn may go back to).
    Completed {
        /// The agent that answered last.
        answered_by: Arc<str>,
    },
    /// The turn stopped for outside input; resume it with `TurnRequest::resume`.
    Interrupted {
        /// The checkpoint it saved.
        checkpoint_id: String,
        /// The interrupts it waits on.
        interrupts: Vec<InterruptInfo>,
    },
}

/// One record of a thread: a turn, or the continuation of an interrupted turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThreadRecord {
    /// Its position in the thread, from 0 (the thread's version before it was appended).
    pub seq: u64,
    /// The turn it belongs to, from 0. A turn's continuations share its number.
    pub turn: u64,
    /// When it was appended, in milliseconds since the Unix epoch.
    pub at_ms: u64,
    /// What started it.
    pub start: RecordStart,
    /// The run path the turn started at: `[agent]` for the agent the turn was routed to.
    pub started_at: RunPath,
    /// The events the turn recorded in this part, in order (streams materialised).
    pub events: Vec<RecordedEvent>,
    /// How it ended.
    pub end: RecordEnd,
    /// Who started this part, as the service running the turn names its caller (a principal
    /// id: [`TurnRequest::by`](crate::TurnRequest::by),
    /// [`TurnRequest::resume`](crate::TurnRequest::resume)); `None` when not given. For
    /// a resume, this is who answered the interrupt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<Arc<str>>,
    /// The thread's values after this record (the session values of its part, without the
    /// framework's own `agentflow.` keys), sorted by key: what the thread's next turn starts
    /// with. `None` when there are none. A snapshot, not a delta, so the head alone says the
    /// thread's values and pruning older records loses none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub values: Option<serde_json::Map<String, serde_json::Value>>,
    /// The id of the run this part belongs to, when one was given: a turn requested with
    /// [`TurnRequest::run_id`](crate::TurnRequest::run_id) or started as a run
    /// ([`Runner::start`](crate::Runner::start)) keeps it here, so the run can be found in the
    /// thread after its process ended (a service's run ids and idempotency keys answer after
    /// a restart). `None` for a turn without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// The record's content sealed at rest (by [`SealedStore`](crate::store::SealedStore)):
    /// then every field but `seq`, `turn` and `at_ms` is a placeholder, and the store's
    /// reader opens it with its [`SealingKeys`](crate::store::SealingKeys). `None` for a
    /// record kept in plain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sealed: Option<String>,
}

impl ThreadRecord {
    /// The record as JSON bytes.
    pub fn encode(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("a thread record always serialises")
    }

    /// Decodes a record read at position `seq` of thread `id`.
    pub fn decode(id: &str, seq: u64, bytes: &[u8]) -> Result<ThreadRecord, ThreadError> {
        let record: ThreadRecord =
            serde_json::from_slice(bytes).map_err(|e| ThreadError::Corrupt {
                id: id.to_owned(),
                seq,
                reason: format!("it does not decode: {e}"),
            })?;
        if record.seq != seq {
            return Err(ThreadError::Corrupt {
                id: id.to_owned(),
                seq,
                reason: format!("it says it is record {}", record.seq),
            });
        }
        Ok(record)
    }

    /// Whether this record starts a turn (rather than continuing an interrupted one).
    pub fn starts_turn(&self) -> bool {
        matches!(self.start, RecordStart::Turn { .. })
    }
}

/// A thread's current state: its version, its number of turns and its last record.
#[derive(Debug, Clone, PartialEq)]
pub struct ThreadHead {
    /// The thread id.
    pub id: String,
    /// Its number of records; the next record is appended at this position.
    pub version: u64,
    /// Its number of turns (the next turn's number).
    pub turns: u64,
    /// Its last record.
    pub last: ThreadRecord,
}

/// Where conversations are kept: an append-only list of [`ThreadRecord`]s per thread id, and
/// each thread's turn lease.
///
/// Implementations must make [`append`](ThreadStore::append) atomic and conditional: it adds
/// the record only if the thread's version is still `expected_version`, so of two writers that
/// loaded the same version exactly one succeeds, across threads and, for durable stores,
/// processes. Reads see whole records only.
///
/// A turn first takes the thread's **lease** ([`lease_thread`](ThreadStore::lease_thread)),
/// before it runs anything: of two turns on one thread, in any processes, one gets it and the
/// other gets [`ThreadError::Busy`] and runs nothing. The lease is given back when the turn
/// ends, and runs out if its worker dies, so the thread is never stuck. The compare-and-swap
/// append stays the final guard (a turn whose lease ran out is not recorded).
///
/// ```
/// # futures::executor::block_on(async {
/// use agentweave_runtime::store::{RecordEnd, RecordStart, ThreadRecord, ThreadStore, ThreadError};
/// use agentweave_runtime::{InMemoryStore, Message, RunPath};
/// let store = InMemoryStore::new();
/// let record = |seq| ThreadRecord {
///     seq,
///     turn: seq,
///     at_ms: 0,
///     start: RecordStart::Turn { input: vec![Message::user("hi")] },
///     started_at: RunPath::root("bot"),
///     events: vec![],
///     end: RecordEnd::Completed { answered_by: "bot".into() },
///     by: None,
///     values: None,
///     run_id: None,
///     sealed: None,
/// };
/// assert_eq!(store.append("t1", 0, record(0)).await.unwrap(), 1);
/// // A writer that loaded version 0 too is refused.
/// assert!(matches!(
///     store.append("t1", 0, record(0)).await,
///     Err(ThreadError::Conflict { expected: 0, found: 1, .. })
/// ));
/// assert_eq!(store.head("t1").await.unwrap().unwrap().version, 1);
///
/// // One turn at a time: the lease refuses a second owner until the first gives it back.
/// let minute = std::time::Duration::from_secs(60);
/// store.lease_thread("t1", "turn-a", minute).await.unwrap();
/// assert!(matches!(
///     store.lease_thread("t1", "turn-b", minute).await,
///     Err(ThreadError::Busy { .. })
/// ));
/// store.release_thread_lease("t1", "turn-a").await.unwrap();
/// store.lease_thread("t1", "turn-b", minute).await.unwrap();
/// # });
/// ```
#[async_trait]
pub trait ThreadStore: Send + Sync + 'static {
    /// The thread's head, or `None` if it has no records.
    async fn head(&self, id: &str) -> Result<Option<ThreadHead>, ThreadError>;

    /// The records of the turns in `turns` (by turn number), in order. Turns past the end are
    /// simply not there.
    async fn read(&self, id: &str, turns: Range<u64>) -> Result<Vec<ThreadRecord>, ThreadError>;

    /// Appends `record` if the thread's version is `expected_version`; returns the new
    /// version. The store sets the record's `seq` to `expected_version`. Errors with [`ThreadError::Conflict`] (and stores nothing) otherwise.
    async fn append(
        &self,
        id: &str,
        expected_version: u64,
        record: ThreadRecord,
    ) -> Result<u64, ThreadError>;

    /// The ids of the threads in the store, sorted.
    async fn list(&self) -> Result<Vec<String>, ThreadError>;

    /// Deletes a thread; returns whether it existed.
    async fn delete(&self, id: &str) -> Result<bool, ThreadError>;

    /// Takes the thread's lease for `owner` (a token unique to one turn) for `lease`: while it
    /// holds, every other owner gets [`ThreadError::Busy`]. Atomic across the store's users
    /// (tasks, and for durable stores processes): of any number of concurrent takers exactly
    /// one succeeds. A lease that ran out (its holder died) is taken over.
    async fn lease_thread(
        &self,
        id: &str,
        owner: &str,
        lease: std::time::Duration,
    ) -> Result<(), ThreadError>;

    /// Extends `owner`'s lease on the thread to `lease` from now; [`ThreadError::LeaseLost`]
    /// if `owner` no longer holds it (it ran out and another owner took it).
    async fn renew_thread_lease(
        &self,
        id: &str,
        owner: &str,
        lease: std::time::Duration,
    ) -> Result<(), ThreadError>;

    /// Gives `owner`'s lease on the thread back; does nothing if `owner` does not hold it.
    async fn release_thread_lease(&self, id: &str, owner: &str) -> Result<(), ThreadError>;
}

/// Checks that the thread's version `found` is the `expected` one of an `append`.
pub(crate) fn check_version(id: &str, expected: u64, found: u64) -> Result<(), ThreadError> {
    if found != expected {
        return Err(ThreadError::Conflict {
            id: id.to_owned(),
            expected,
            found,
        });
    }
    Ok(())
}

/// The number of milliseconds since the Unix epoch, now.
pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}
