//! Schedules: cron schedules that start runs of a served flow, on a new thread each firing or
//! on one thread, kept in the run queue's store
//! ([`RunQueue::schedules`](agentweave_runtime::store::RunQueue::schedules)) so they survive
//! restarts and every process of a service shares them.
//!
//! - `cron`: a cron expression parsed and checked (UTC only), and its due times;
//! - `manage`: what both doors do (create, read, list, count, change, delete) under the
//!   caller's principal and tenant, and a schedule's JSON;
//! - `fire`: the firing loop each process with queue workers runs: a due schedule's run is
//!   enqueued under an id made of the schedule's id and its due time (the queue's unique run
//!   id lets one process win), then the schedule is moved on by a compare-and-swap on its due
//!   time; the missed-firing policy after downtime;
//! - `http`: the native routes, `/v1/flows/{flow}/schedules[/{id}]`.
//!
//! The Agent Protocol's cron routes (`/runs/crons`, for `langgraph-sdk`) are in
//! `agent_protocol/crons.rs`, over `manage`.
//!
//! # Using schedules
//!
//! A server needs a run queue ([`ServerBuilder::run_queue`](crate::ServerBuilder::run_queue))
//! for schedules: they live in its store.
//!
//! | route | scope | does |
//! | --- | --- | --- |
//! | `POST /v1/flows/{flow}/schedules` | `chat` | creates one: `cron`, `message`, and optionally `thread`, `missed`, `paused`, `timezone`, `metadata` |
//! | `GET /v1/flows/{flow}/schedules` | `read` or `chat` | lists the tenant's (`?thread=`, `limit`, `offset`) |
//! | `GET /v1/flows/{flow}/schedules/{id}` | `read` or `chat` | one |
//! | `PATCH /v1/flows/{flow}/schedules/{id}` | `chat` | changes it; `{"paused": true}` pauses, `false` resumes |
//! | `DELETE /v1/flows/{flow}/schedules/{id}` | `chat` | deletes it |
//!
//! LangGraph's clients reach the same schedules as crons (`client.crons.create`,
//! `create_for_thread`, `search`, `count`, `update`, `delete`).
//!
//! - **Cron expressions** have 5 fields (minute, hour, day of month, month, day of week; `0`
//!   and `7` are Sunday; names, ranges, steps, `L`, `W` and `#` work), or 6 with seconds first.
//!   They are read in UTC, the only time zone taken: another `timezone` is a 400, as is an
//!   expression that does not parse or never fires.
//! - **Who runs it**: a principal sees and changes only its tenant's schedules (another
//!   tenant's id is a 404). A schedule's runs run as the principal that created it, with the
//!   scopes it had then.
//! - **Exactly once**: every process with queue workers looks for due schedules (each
//!   [`QueueOptions::schedule_poll`](crate::QueueOptions::schedule_poll), 1 s by default). A
//!   firing is a queued run whose id is the schedule's id and the due time, so the queue takes
//!   it once however many processes find it due; the schedule then moves on by a
//!   compare-and-swap in the store. A firing a process was already enqueueing when a pause or a
//!   delete landed may still run, once.
//! - **Missed firings** (no process ran at a due time): `missed` is `catch_up` (the default:
//!   the latest missed firing runs once) or `skip` (none runs). A firing found less than a
//!   minute late counts as on time. Resuming a paused schedule, or changing its expression,
//!   starts from the next due time after now.
//! - **Testing**: [`QueueOptions::schedule_clock`](crate::QueueOptions::schedule_clock) takes a
//!   [`ManualHost`](agentweave_runtime::host::ManualHost) moved by hand, and
//!   [`fire_schedules`](crate::fire_schedules) runs one pass, so a test fires a year of
//!   schedules in milliseconds.

mod cron;
mod fire;
mod http;
mod manage;

use std::fmt;
use std::sync::Arc;

use agentweave_runtime::host::{Host, StdHost};

pub use fire::fire_due;
pub(crate) use fire::fire_loop;
pub(crate) use http::routes;
pub(crate) use manage::{count, create, delete, list, update, Change, NewScheduleSpec};

/// The clock schedules are read against (which firings are due): the system clock by default
/// ([`StdHost`]); a test gives a [`ManualHost`](agentweave_runtime::host::ManualHost) it moves by hand
/// through [`QueueOptions::schedule_clock`](crate::QueueOptions::schedule_clock).
#[derive(Clone)]
pub struct ScheduleClock(Arc<dyn Host>);

impl ScheduleClock {
    /// The clock of `host`.
    pub fn new(host: impl Host) -> Self {
        ScheduleClock(Arc::new(host))
    }

    /// The time now, in milliseconds since the Unix epoch.
    pub fn now_ms(&self) -> u64 {
        self.0
            .now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64)
    }
}

impl Default for ScheduleClock {
    fn default() -> Self {
        ScheduleClock::new(StdHost)
    }
}

impl fmt::Debug for ScheduleClock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("ScheduleClock")
            .field(&self.now_ms())
            .finish()
    }
}
