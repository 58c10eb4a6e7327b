//! Schedules: cron schedules that start runs, kept in the run queue's store so they survive
//! restarts and every process of a service sees the same ones. [`ScheduleStore`] is the
//! contract; the queues that keep schedules answer it through
//! [`RunQueue::schedules`](crate::store::RunQueue::schedules) ([`InMemoryRunQueue`], and
//! `SqliteRunQueue` and `PostgresRunQueue` behind their features; the file queue keeps none).
//!
//! - `memory.rs`: the schedules of [`InMemoryRunQueue`], a map under one lock;
//! - `sql.rs`: the table `agentflow_schedules` and the SQL queues' implementation;
//! - this file: the contract, its types and its rules.
//!
//! The store knows nothing of cron: a service computes each schedule's next due time and
//! stores it ([`Schedule::next_due_ms`]). Firing a schedule exactly once across processes is
//! two steps every firing process may try: enqueue the run under an id made of the schedule's
//! id and the due time (the queue's unique run id lets one enqueue win:
//! [`QueueError::Duplicate`] for the others), then move the schedule on with
//! [`advance_schedule`](ScheduleStore::advance_schedule), a compare-and-swap on its due time
//! (one process wins; the others see `false`). A process that dies between the two leaves the
//! schedule due: the next one enqueues (a duplicate, refused) and moves it on.
//!
//! [`InMemoryRunQueue`]: crate::store::InMemoryRunQueue
//! [`QueueError::Duplicate`]: crate::store::QueueError::Duplicate

mod memory;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) mod sql;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub(crate) use memory::InMemorySchedules;

use super::QueueError;

/// What a schedule does about firings missed while no process ran (downtime), when a process
/// finds it late.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MissedPolicy {
    /// Run the latest missed firing once (the earlier ones are not run), then go on from now:
    /// the default.
    #[default]
    CatchUp,
    /// Run none of the missed firings: go on with the next one after now.
    Skip,
}

impl MissedPolicy {
    /// The policy's name: `catch_up` or `skip`.
    pub fn as_str(self) -> &'static str {
        match self {
            MissedPolicy::CatchUp => "catch_up",
            MissedPolicy::Skip => "skip",
        }
    }

    /// The policy named `name`.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "catch_up" => Some(MissedPolicy::CatchUp),
            "skip" => Some(MissedPolicy::Skip),
            _ => None,
        }
    }
}

/// A cron schedule of a flow: each firing starts a run of `flow` with `input`, on `thread` or,
/// without one, on a new thread.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Schedule {
    /// Its id (1 to 160 characters of `A-Z a-z 0-9 . _ -`, not starting with `.`).
    pub id: String,
    /// The flow its runs run.
    pub flow: String,
    /// The tenant it belongs to: only its principals see and change it.
    pub tenant: String,
    /// The thread (the caller's id, not the store's key) its runs are turns of; `None`: a new
    /// thread for each firing.
    pub thread: Option<String>,
    /// The cron expression, as given.
    pub cron: String,
    /// What each run gets (the service's JSON: the message, for instance).
    pub input: Value,
    /// The principal that created it: its runs run as them.
    pub by: String,
    /// That principal's grants (scopes) when it created the schedule: its runs have these.
    pub grants: Vec<String>,
    /// What to do about firings missed during downtime.
    pub missed: MissedPolicy,
    /// Whether it is paused (a paused schedule does not fire).
    pub paused: bool,
    /// When it fires next (ms since the Unix epoch).
    pub next_due_ms: u64,
    /// The due time of its last firing, if it fired.
    pub last_due_ms: Option<u64>,
    /// When it was created (ms since the Unix epoch).
    pub created_ms: u64,
    /// When it was last changed.
    pub updated_ms: u64,
    /// The caller's metadata (JSON).
    pub metadata: Value,
}

/// Which schedules [`ScheduleStore::list_schedules`] and
/// [`count_schedules`](ScheduleStore::count_schedules) read: one tenant's, of one flow and
/// one thread if given.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ScheduleFilter {
    /// The tenant.
    pub tenant: String,
    /// Only this flow's.
    pub flow: Option<String>,
    /// Only this thread's (the caller's thread id).
    pub thread: Option<String>,
}

impl ScheduleFilter {
    pub(crate) fn matches(&self, s: &Schedule) -> bool {
        s.tenant == self.tenant
            && self.flow.as_ref().map_or(true, |f| *f == s.flow)
            && self
                .thread
                .as_ref()
                .map_or(true, |t| s.thread.as_ref() == Some(t))
    }
}

/// Schedules kept in a run queue's store (see the module's guide for how a firing is made
/// exactly once).
///
/// ```
/// use agentweave_runtime::store::{InMemoryRunQueue, MissedPolicy, RunQueue, Schedule};
/// # futures::executor::block_on(async {
/// let queue = InMemoryRunQueue::new();
/// let schedules = queue.schedules().expect("the in-memory queue keeps schedules");
/// let schedule = Schedule {
///     id: "s1".into(),
///     flow: "desk".into(),
///     tenant: "acme".into(),
///     thread: None,
///     cron: "0 * * * *".into(),
///     input: serde_json::json!({"message": "report"}),
///     by: "ana".into(),
///     grants: vec!["chat".into()],
///     missed: MissedPolicy::CatchUp,
///     paused: false,
///     next_due_ms: 3_600_000,
///     last_due_ms: None,
///     created_ms: 0,
///     updated_ms: 0,
///     metadata: serde_json::json!({}),
/// };
/// schedules.create_schedule(&schedule).await.unwrap();
/// assert_eq!(schedules.due_schedules(3_600_000, 10).await.unwrap().len(), 1);
/// // Two processes move it on from the same due time: one wins.
/// assert!(schedules.advance_schedule("s1", 3_600_000, 7_200_000, Some(3_600_000)).await.unwrap());
/// assert!(!schedules.advance_schedule("s1", 3_600_000, 7_200_000, Some(3_600_000)).await.unwrap());
/// assert!(schedules.due_schedules(3_600_000, 10).await.unwrap().is_empty());
/// # });
/// ```
#[async_trait]
pub trait ScheduleStore: Send + Sync {
    /// Stores a new schedule ([`QueueError::Duplicate`] if its id is taken, named as a run id
    /// would be; [`QueueError::InvalidId`] for a bad id).
    async fn create_schedule(&self, schedule: &Schedule) -> Result<(), QueueError>;

    /// The schedule `id`, if stored.
    async fn schedule(&self, id: &str) -> Result<Option<Schedule>, QueueError>;

    /// At most `limit` of the schedules `filter` selects, after `offset` of them, oldest first.
    async fn list_schedules(
        &self,
        filter: &ScheduleFilter,
        limit: usize,
        offset: usize,
    ) -> Result<Vec<Schedule>, QueueError>;

    /// How many schedules `filter` selects.
    async fn count_schedules(&self, filter: &ScheduleFilter) -> Result<u64, QueueError>;

    /// Replaces what a caller may change of schedule `schedule.id` (cron, input, missed
    /// policy, paused, next due time, metadata, updated time); `false` if it is not stored.
    async fn update_schedule(&self, schedule: &Schedule) -> Result<bool, QueueError>;

    /// Removes schedule `id`; `false` if it was not stored.
    async fn delete_schedule(&self, id: &str) -> Result<bool, QueueError>;

    /// At most `limit` schedules not paused whose next due time is at or before `now_ms`,
    /// the most overdue first.
    async fn due_schedules(&self, now_ms: u64, limit: usize) -> Result<Vec<Schedule>, QueueError>;

    /// Moves schedule `id` on to `next_due_ms` if its next due time is still `from_due_ms`
    /// (and records `fired_due_ms` as its last firing, if given): a compare-and-swap, so of
    /// the processes moving it on from the same due time exactly one gets `true`.
    async fn advance_schedule(
        &self,
        id: &str,
        from_due_ms: u64,
        next_due_ms: u64,
        fired_due_ms: Option<u64>,
    ) -> Result<bool, QueueError>;
}

/// Checks a schedule's id and names.
pub(crate) fn check_schedule(schedule: &Schedule) -> Result<(), QueueError> {
    super::queue::check_run_id(&schedule.id).map_err(|_| QueueError::InvalidId {
        what: "schedule id",
        id: schedule.id.chars().take(200).collect(),
        rule: "use 1 to 160 characters of A-Z, a-z, 0-9, '.', '_' or '-', not starting with '.'",
    })?;
    super::queue::check_name("flow name", &schedule.flow)?;
    super::queue::check_name("tenant", &schedule.tenant)?;
    Ok(())
}
