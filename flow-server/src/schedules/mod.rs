//! Schedules: cron schedules that start runs of a served flow, on a new thread each firing or
//! on one thread, kept in the run queue's store
//! ([`RunQueue::schedules`](flow_runtime::store::RunQueue::schedules)) so they survive
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

mod cron;
mod fire;
mod http;
mod manage;

use std::fmt;
use std::sync::Arc;

use flow_runtime::host::{Host, StdHost};

pub use fire::fire_due;
pub(crate) use fire::fire_loop;
pub(crate) use http::routes;
pub(crate) use manage::{count, create, delete, list, update, Change, NewScheduleSpec};

/// The clock schedules are read against (which firings are due): the system clock by default
/// ([`StdHost`]); a test gives a [`ManualHost`](flow_runtime::host::ManualHost) it moves by hand
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
