//! The run queue: background runs waiting in the store until a worker (any server process
//! on the same store) takes them. [`RunQueue`] is the contract; each store has a queue beside
//! it ([`InMemoryRunQueue`], [`FileRunQueue`], and `SqliteRunQueue` and `PostgresRunQueue`
//! behind the `sqlite` and `postgres` features).
//!
//! - `rows.rs`: the queue's rows and their transitions, kept in memory (what the in-memory
//!   and file queues share: one list changed under one lock);
//! - `memory.rs`: [`InMemoryRunQueue`], for tests and one process;
//! - `file.rs`: [`FileRunQueue`], one JSON file changed under a `flock`, and a file of events
//!   per run;
//! - `sqlite.rs`, `postgres.rs`: the SQL queues, a table of runs and one of their events; a
//!   claim is one `UPDATE` (SQLite in a `BEGIN IMMEDIATE` transaction; PostgreSQL with
//!   `FOR UPDATE SKIP LOCKED`);
//! - this file: the contract, its types and its errors.
//!
//! The cron schedules that start runs are kept beside the runs, in the same store
//! ([`RunQueue::schedules`], `store/schedule/`).
//!
//! The contract is [`RunQueue`]'s.

mod file;
mod memory;
#[cfg(feature = "postgres")]
mod postgres;
mod rows;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) mod sql;
#[cfg(feature = "sqlite")]
mod sqlite;

use std::error::Error as StdError;
use std::io;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use file::FileRunQueue;
pub use memory::InMemoryRunQueue;
#[cfg(feature = "postgres")]
pub use postgres::PostgresRunQueue;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub use sql::SqlRunQueue;
#[cfg(feature = "sqlite")]
pub use sqlite::SqliteRunQueue;

/// The largest input a queued run may carry (its JSON): 1 MiB.
pub const MAX_QUEUED_INPUT_BYTES: usize = 1024 * 1024;

/// A run to add to the queue ([`RunQueue::enqueue`]).
#[derive(Debug, Clone, PartialEq)]
pub struct NewRun {
    /// The run's id (the caller makes it: 1 to 160 characters of `A-Z a-z 0-9 . _ -`).
    pub run_id: String,
    /// The flow that runs it.
    pub flow: String,
    /// The thread it is a turn of (a thread id of the thread store).
    pub thread: String,
    /// What the worker needs to run it: the input messages and options, as JSON.
    pub input: Value,
}

/// Whether [`RunQueue::enqueue`] waits behind the thread's other runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Enqueue {
    /// Always add it: it runs after the thread's earlier runs, in order.
    Always,
    /// Add it only if the thread has no run waiting or running ([`QueueError::Busy`]).
    IfIdle,
}

/// A bound on a group of threads' runs, kept by [`RunQueue::enqueue_within`]: at most
/// `limit` runs not ended (waiting or running) whose thread id starts with `prefix`.
///
/// The count and the insert are one step in the store, so the bound is exact among all the
/// processes enqueueing with the same prefix at the same moment (one lock held across both:
/// the in-memory queue's mutex, the file queue's `flock`, SQLite's write lock, a PostgreSQL
/// advisory lock on the prefix).
///
/// ```
/// use agentweave_runtime::store::{Enqueue, InMemoryRunQueue, NewRun, QueueCap, QueueError, RunQueue};
/// # futures::executor::block_on(async {
/// let queue = InMemoryRunQueue::new();
/// let cap = QueueCap { prefix: "desk.acme.".into(), limit: 1 };
/// let run = |id: &str| NewRun {
///     run_id: id.into(),
///     flow: "desk".into(),
///     thread: "desk.acme.t-1".into(),
///     input: serde_json::json!({"message": "hi"}),
/// };
/// queue.enqueue_within(run("r1"), Enqueue::Always, &cap).await.unwrap();
/// assert!(matches!(
///     queue.enqueue_within(run("r2"), Enqueue::Always, &cap).await,
///     Err(QueueError::Full { limit: 1, .. })
/// ));
/// # });
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueCap {
    /// The group's threads' common prefix (a server's `FLOW.TENANT.`); the run's thread must
    /// start with it.
    pub prefix: String,
    /// The most runs not ended the group may have, the new one included.
    pub limit: usize,
}

impl QueueCap {
    /// Checks that `run`'s thread is of the group.
    pub(crate) fn check(&self, run: &NewRun) -> Result<(), QueueError> {
        if run.thread.starts_with(&self.prefix) {
            Ok(())
        } else {
            Err(QueueError::InvalidId {
                what: "thread id",
                id: shown(&run.thread),
                rule: "a run enqueued within a cap must be of a thread starting with the \
                       cap's prefix",
            })
        }
    }

    /// The error when the group holds `unfinished` runs already.
    pub(crate) fn full(&self, unfinished: usize) -> Result<(), QueueError> {
        if unfinished < self.limit {
            Ok(())
        } else {
            Err(QueueError::Full {
                prefix: shown(&self.prefix),
                limit: self.limit,
            })
        }
    }
}

/// Where a queued run is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum QueueStatus {
    /// Waiting for a worker.
    Pending,
    /// Held by a worker (whose lease may have run out: then another may take it over).
    Running,
    /// Ended; its outcome is recorded.
    Done,
}

impl QueueStatus {
    /// The status's name: `pending`, `running`, `done`.
    pub fn as_str(self) -> &'static str {
        match self {
            QueueStatus::Pending => "pending",
            QueueStatus::Running => "running",
            QueueStatus::Done => "done",
        }
    }

    /// The status named `name`.
    pub fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "pending" => QueueStatus::Pending,
            "running" => QueueStatus::Running,
            "done" => QueueStatus::Done,
            _ => return None,
        })
    }
}

/// A run in the queue, as [`RunQueue::get`] reads it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QueuedRun {
    /// The run's id.
    pub run_id: String,
    /// The flow that runs it.
    pub flow: String,
    /// Its thread.
    pub thread: String,
    /// Its input, as enqueued.
    pub input: Value,
    /// Its place in the queue: larger is later.
    pub seq: u64,
    /// Where it is.
    pub status: QueueStatus,
    /// How many claims it had: 0 while never claimed, 1 for the first, one more per takeover
    /// or claim after a release.
    pub attempt: u64,
    /// The worker that holds it (or held it last).
    pub worker: Option<String>,
    /// When the holder's lease runs out (ms since the Unix epoch; 0 when not held).
    pub lease_until_ms: u64,
    /// When it was enqueued (ms since the Unix epoch).
    pub created_ms: u64,
    /// When it was first claimed.
    pub started_ms: Option<u64>,
    /// When it ended.
    pub ended_ms: Option<u64>,
    /// Its outcome, once done (the JSON the worker recorded).
    pub outcome: Option<Value>,
    /// What its worker noted while running it ([`RunQueue::note`]), for a worker that takes
    /// it over: e.g. the thread's turn it started.
    #[serde(default)]
    pub note: Option<Value>,
    /// The sequence number of its last stored event ([`RunQueue::append_events`]); 0 before
    /// the first.
    #[serde(default)]
    pub events: u64,
    /// Whether its events were trimmed ([`RunQueue::trim_events`]): they cannot be read any
    /// more.
    #[serde(default)]
    pub events_trimmed: bool,
    /// The cancel request recorded while it ran ([`RunQueue::cancel`]), for its worker to
    /// apply.
    #[serde(default)]
    pub cancel: Option<Value>,
}

/// One stored event of a queued run ([`RunQueue::events_after`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QueuedEvent {
    /// Its sequence number in its run: 1 for the first, one more for each next.
    pub seq: u64,
    /// Its kind (the server's SSE event name, e.g. `chunk` or `done`).
    pub kind: String,
    /// Its data.
    pub data: Value,
}

/// What [`RunQueue::cancel`] did.
#[derive(Debug, Clone, PartialEq)]
pub enum CancelState {
    /// The run was waiting: it is ended now, cancelled, and never runs.
    Ended(QueuedRun),
    /// The run is running: the request is recorded; its worker applies it.
    Requested(QueuedRun),
}

/// A worker's hold on a queued run: the right, until its lease runs out, to run it and
/// record its outcome. Made by [`RunQueue::claim`].
#[derive(Debug, Clone, PartialEq)]
pub struct QueueClaim {
    /// The run as it was claimed (status running, this claim's attempt and worker).
    pub run: QueuedRun,
    /// The worker that holds it.
    pub worker: String,
    /// The claim's number: 1 for the first claim; above 1 the run was held before (its
    /// worker died or handed it back).
    pub attempt: u64,
    /// Whether the run was taken from a worker whose lease ran out while it ran.
    pub takeover: bool,
}

impl QueueClaim {
    /// The error of every write this claim no longer allows (its lease ran out and the run
    /// was taken over, or it ended).
    pub(crate) fn lost(&self) -> QueueError {
        QueueError::ClaimLost {
            run_id: self.run.run_id.clone(),
            attempt: self.attempt,
        }
    }
}

/// A failure of a [`RunQueue`].
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum QueueError {
    /// An id cannot be used (run ids are 1 to 160 characters of `A-Z a-z 0-9 . _ -`, not
    /// starting with `.`; thread ids the thread store's rule; flow and worker names 1 to 200
    /// characters).
    #[error("{what} '{id}' is not valid: {rule}")]
    InvalidId {
        /// What it names: `run id`, `thread id`, `flow name`, `worker name`.
        what: &'static str,
        /// The id given (cut to 200 characters).
        id: String,
        /// The rule it breaks.
        rule: &'static str,
    },
    /// A run with this id is already in the queue.
    #[error("run '{run_id}' is already in the queue; give each run a new id")]
    Duplicate {
        /// The id.
        run_id: String,
    },
    /// [`Enqueue::IfIdle`] on a thread that has a run waiting or running.
    #[error(
        "thread '{thread}' has run '{run_id}' waiting or running; wait for it, or enqueue \
         the new run behind it (multitask strategy `enqueue`)"
    )]
    Busy {
        /// The thread.
        thread: String,
        /// Its run that waits or runs.
        run_id: String,
    },
    /// The claim is no longer held: its lease ran out and another worker took the run over,
    /// or it was released. Nothing was written.
    #[error(
        "the claim {attempt} on queued run '{run_id}' is no longer held: its lease ran out \
         and another worker took it over, or it was handed back; stop running it"
    )]
    ClaimLost {
        /// The run.
        run_id: String,
        /// The lost claim's number.
        attempt: u64,
    },
    /// The run's input is larger than [`MAX_QUEUED_INPUT_BYTES`].
    #[error(
        "run '{run_id}' has {size} bytes of input, over the queue's limit of {limit}; send a \
         shorter message"
    )]
    TooLarge {
        /// The run.
        run_id: String,
        /// The input's size.
        size: usize,
        /// The limit.
        limit: usize,
    },
    /// [`RunQueue::enqueue_within`] of a run whose group already has its cap of runs not
    /// ended: nothing was queued.
    #[error(
        "the queue holds {limit} runs not ended of threads starting with '{prefix}', the most \
         it takes for them; wait for some to end and enqueue again"
    )]
    Full {
        /// The group's prefix (cut to 200 characters).
        prefix: String,
        /// The cap.
        limit: usize,
    },
    /// [`RunQueue::cancel`] of a run that has ended: nothing was changed.
    #[error("run '{run_id}' has ended; there is nothing to cancel (read its outcome instead)")]
    Ended {
        /// The run.
        run_id: String,
    },
    /// A stored row cannot be read (altered by hand, or written by a newer build).
    #[error("queued run '{run_id}' cannot be read: {message}")]
    Corrupt {
        /// The run (or the queue's file).
        run_id: String,
        /// What is wrong.
        message: String,
    },
    /// Reading or writing the queue's files failed.
    #[error("the run queue could not {operation}: {source}")]
    Io {
        /// What it was doing.
        operation: &'static str,
        /// The underlying error.
        #[source]
        source: Arc<io::Error>,
    },
    /// The database failed.
    #[error("the run queue's database could not {operation}: {source}")]
    Database {
        /// What it was doing.
        operation: &'static str,
        /// The driver's error.
        #[source]
        source: Arc<dyn StdError + Send + Sync>,
    },
}

/// Where background runs wait for a worker: the contract every queue implements.
///
/// - [`enqueue`](RunQueue::enqueue) adds a run (its id, flow, thread and input as JSON) at the
///   end of the queue; with [`Enqueue::IfIdle`] it is refused ([`QueueError::Busy`]) while the
///   thread has a run waiting or running. [`enqueue_within`](RunQueue::enqueue_within) also
///   keeps a group of threads within a [`QueueCap`], exactly ([`QueueError::Full`]).
/// - [`claim`](RunQueue::claim) takes the oldest runnable run for a lease: a pending run, or
///   a running one whose lease ran out (its worker died: a *takeover*, [`QueueClaim::attempt`]
///   above 1). A run is not runnable while an earlier run of its thread waits or runs, so a
///   thread's runs run one at a time, in order. Of any number of concurrent claimants exactly
///   one gets a given run.
/// - [`renew`](RunQueue::renew) extends the lease; [`release`](RunQueue::release) hands the run
///   back (pending again, for anyone); [`complete`](RunQueue::complete) records its outcome
///   (and, in the same step, appends it as the run's last event, of kind `done`).
///   Each of them checks that the claim is still held (same attempt, still running), else
///   [`QueueError::ClaimLost`] and nothing is written: a worker whose lease ran out and whose
///   run was taken over cannot complete it.
/// - [`get`](RunQueue::get) and [`thread_runs`](RunQueue::thread_runs) read the rows, so any
///   process answers for any run.
/// - [`claim_among`](RunQueue::claim_among) claims like `claim`, only runs of the named flows
///   (a process never takes a run of a flow it does not serve; one that serves it does).
/// - Events: the holder of a claim [appends](RunQueue::append_events) the run's events, each
///   numbered (1, 2, ...) after the run's last, across claims; any process
///   [reads](RunQueue::events_after) them after a sequence number, in order, while the run
///   goes on and after it ended, until [`trim_events`](RunQueue::trim_events) removes the
///   events of runs that ended before a time (and marks them trimmed). Readers poll; a
///   writer in the same process may also tell its readers directly.
/// - Cancel: [`cancel`](RunQueue::cancel) ends a waiting run at once (it never runs; its
///   outcome is stored and appended as its one `done` event) or records the request on a
///   running one, which its worker reads with [`cancel_requested`](RunQueue::cancel_requested)
///   and applies; an ended run is refused ([`QueueError::Ended`]).
///
/// What runs at least once is the work of a worker that died: the run is taken over and run
/// again (recovered from its journal when the turn was journaled).
///
/// ```
/// use std::time::Duration;
/// use agentweave_runtime::store::{Enqueue, InMemoryRunQueue, NewRun, QueueStatus, RunQueue};
/// # futures::executor::block_on(async {
/// let queue = InMemoryRunQueue::new();
/// let run = |id: &str| NewRun {
///     run_id: id.into(),
///     flow: "desk".into(),
///     thread: "t-1".into(),
///     input: serde_json::json!({"message": "hi"}),
/// };
/// queue.enqueue(run("r1"), Enqueue::Always).await.unwrap();
/// queue.enqueue(run("r2"), Enqueue::Always).await.unwrap();
/// let lease = Duration::from_secs(30);
/// let first = queue.claim("worker-a", lease).await.unwrap().unwrap();
/// assert_eq!(first.run.run_id, "r1");
/// // r2 waits behind r1: same thread.
/// assert!(queue.claim("worker-b", lease).await.unwrap().is_none());
/// queue.complete(&first, serde_json::json!({"status": "success"})).await.unwrap();
/// assert_eq!(queue.get("r1").await.unwrap().unwrap().status, QueueStatus::Done);
/// let second = queue.claim("worker-b", lease).await.unwrap().unwrap();
/// assert_eq!(second.run.run_id, "r2");
/// # });
/// ```
#[async_trait]
pub trait RunQueue: Send + Sync + 'static {
    /// Adds `run` at the end of the queue; returns its row. Errors: an invalid id, a run id
    /// already queued ([`QueueError::Duplicate`]), a busy thread with [`Enqueue::IfIdle`],
    /// an input over [`MAX_QUEUED_INPUT_BYTES`].
    async fn enqueue(&self, run: NewRun, mode: Enqueue) -> Result<QueuedRun, QueueError>;

    /// Like [`enqueue`](RunQueue::enqueue), within `cap`: refused ([`QueueError::Full`]) when
    /// the runs not ended whose thread starts with `cap.prefix` number `cap.limit` already.
    /// The count and the insert are one atomic step, across processes: of any number of
    /// concurrent enqueuers with the same cap, never more than `cap.limit` runs of the group
    /// wait or run at once. Also [`QueueError::InvalidId`] when the run's thread does not
    /// start with the prefix.
    async fn enqueue_within(
        &self,
        run: NewRun,
        mode: Enqueue,
        cap: &QueueCap,
    ) -> Result<QueuedRun, QueueError>;

    /// Takes a runnable run for `worker`, for `lease`: `None` if no run can be taken now.
    /// A thread's runs are taken in order, one at a time. Among the threads' next runs, the
    /// claim takes one of the group with the fewest runs running (leases not run out), the
    /// oldest first: a group that queued thousands of runs does not hold the others back. A
    /// group is the thread id up to its last `.` (`FLOW.TENANT.` for a server's threads); the
    /// ids without a `.` are one group.
    async fn claim(&self, worker: &str, lease: Duration) -> Result<Option<QueueClaim>, QueueError>;

    /// Extends a held claim's lease to `lease` from now.
    async fn renew(&self, claim: &QueueClaim, lease: Duration) -> Result<(), QueueError>;

    /// Notes `note` on the claimed run (replacing an earlier note), if the claim is still
    /// held: what a worker that takes the run over needs to know (e.g. which turn of the
    /// thread it started).
    async fn note(&self, claim: &QueueClaim, note: Value) -> Result<(), QueueError>;

    /// Hands a held claim back: the run waits again, first in its thread. Does nothing if the
    /// claim is no longer held.
    async fn release(&self, claim: &QueueClaim) -> Result<(), QueueError>;

    /// Records the run's end with `outcome`, if the claim is still held, and appends
    /// `outcome` as its last event, of kind `done` (one step: a reader of its events sees the
    /// `done` event of the outcome recorded, never of a claim that lost the run).
    async fn complete(&self, claim: &QueueClaim, outcome: Value) -> Result<(), QueueError>;

    /// The run `run_id`, if queued.
    async fn get(&self, run_id: &str) -> Result<Option<QueuedRun>, QueueError>;

    /// The runs of `thread`, oldest first.
    async fn thread_runs(&self, thread: &str) -> Result<Vec<QueuedRun>, QueueError>;

    /// Like [`claim`](RunQueue::claim), of the runs of `flows` only. A run of another flow is
    /// left for a process that serves it (and still holds its thread's later runs back).
    async fn claim_among(
        &self,
        worker: &str,
        lease: Duration,
        flows: &[String],
    ) -> Result<Option<QueueClaim>, QueueError>;

    /// Appends `events` (kind, data) to the claimed run's events, numbered after its last,
    /// if the claim is still held (else [`QueueError::ClaimLost`] and nothing is written);
    /// answers the last one's number.
    async fn append_events(
        &self,
        claim: &QueueClaim,
        events: Vec<(String, Value)>,
    ) -> Result<u64, QueueError>;

    /// At most `limit` of run `run_id`'s events numbered above `after`, in order (none if the
    /// run is unknown, has no more yet, or its events were trimmed: its row says which).
    async fn events_after(
        &self,
        run_id: &str,
        after: u64,
        limit: usize,
    ) -> Result<Vec<QueuedEvent>, QueueError>;

    /// Removes the events of the runs that ended before `ended_before_ms` (ms since the Unix
    /// epoch) and marks those runs trimmed; answers how many runs were trimmed.
    async fn trim_events(&self, ended_before_ms: u64) -> Result<usize, QueueError>;

    /// Cancels run `run_id` with `request` (what its worker needs: e.g. a mode): a waiting
    /// run ends at once with `outcome` (also appended as its event of kind `done`) and never
    /// runs; a running one records `request` for its worker. `None` if the run is unknown;
    /// [`QueueError::Ended`] if it has ended.
    async fn cancel(
        &self,
        run_id: &str,
        request: Value,
        outcome: Value,
    ) -> Result<Option<CancelState>, QueueError>;

    /// The cancel request recorded on the claimed run, if any.
    async fn cancel_requested(&self, claim: &QueueClaim) -> Result<Option<Value>, QueueError>;

    /// How many runs not ended (waiting or running) have a thread id starting with `prefix`:
    /// what a service counts to bound one tenant's queued runs (its threads share a prefix).
    async fn unfinished_with_prefix(&self, prefix: &str) -> Result<usize, QueueError>;

    /// The schedules kept in this queue's store, if it keeps them (the in-memory, SQLite and
    /// PostgreSQL queues do; the file queue does not): see [`ScheduleStore`](crate::store::ScheduleStore).
    fn schedules(&self) -> Option<&dyn crate::store::ScheduleStore> {
        None
    }

    /// What threads and tenants have spent, and the usage report, kept in this queue's store
    /// if it keeps them (the in-memory, SQLite and PostgreSQL queues do; the file queue does
    /// not): see [`SpendingStore`](crate::store::SpendingStore).
    fn spending(&self) -> Option<&dyn crate::store::SpendingStore> {
        None
    }
}

/// The group of a thread id, for fair claiming: the id up to and with its last `.` (a
/// server's `FLOW.TENANT.THREAD` ids group by flow and tenant); the ids without one are one
/// group. (The SQL queues compute the same with `rtrim(thread, replace(thread, '.', ''))`.)
pub(crate) fn claim_group(thread: &str) -> &str {
    thread.rfind('.').map_or("", |at| &thread[..=at])
}

/// Checks a new run's ids and input size.
pub(crate) fn check_new(run: &NewRun) -> Result<(), QueueError> {
    check_run_id(&run.run_id)?;
    check_thread(&run.thread)?;
    check_name("flow name", &run.flow)?;
    let size = run.input.to_string().len();
    if size > MAX_QUEUED_INPUT_BYTES {
        return Err(QueueError::TooLarge {
            run_id: run.run_id.clone(),
            size,
            limit: MAX_QUEUED_INPUT_BYTES,
        });
    }
    Ok(())
}

fn shown(id: &str) -> String {
    id.chars()
        .take(200)
        .collect::<String>()
        .replace('\0', "\\0")
}

/// Checks a run id.
pub(crate) fn check_run_id(id: &str) -> Result<(), QueueError> {
    if super::is_valid_key(id, super::MAX_ID_LEN) {
        Ok(())
    } else {
        Err(QueueError::InvalidId {
            what: "run id",
            id: shown(id),
            rule: "use 1 to 160 characters of A-Z, a-z, 0-9, '.', '_' or '-', not starting \
                   with '.'",
        })
    }
}

/// Checks a thread id.
pub(crate) fn check_thread(id: &str) -> Result<(), QueueError> {
    if super::validate_thread_id(id).is_ok() {
        Ok(())
    } else {
        Err(QueueError::InvalidId {
            what: "thread id",
            id: shown(id),
            rule: "use a valid thread id (see validate_thread_id)",
        })
    }
}

/// Checks a flow or worker name.
pub(crate) fn check_name(what: &'static str, name: &str) -> Result<(), QueueError> {
    if !name.is_empty() && name.len() <= 200 && !name.contains('\0') {
        Ok(())
    } else {
        Err(QueueError::InvalidId {
            what,
            id: shown(name),
            rule: "use 1 to 200 characters, no NUL",
        })
    }
}

/// A lease's length in milliseconds (saturating).
pub(crate) fn lease_ms(lease: Duration) -> u64 {
    lease.as_millis().min(i64::MAX as u128) as u64
}
