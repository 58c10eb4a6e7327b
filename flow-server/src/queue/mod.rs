//! Many servers, one queue: with a run queue ([`ServerBuilder::run_queue`](crate::ServerBuilder::run_queue)),
//! a background run (`POST .../runs` without `stream`) waits in the store's
//! [`RunQueue`](agentweave_runtime::store::RunQueue) and answers its id at once; every server process
//! (and every `worker` process) runs workers that claim queued runs and run them with the
//! flow's runner. Status, wait and list read the queue, so any process answers for any run.
//!
//! - `http`: what the run endpoints do with a queue (enqueue, status, wait, list);
//! - `worker`: the claim loops ([`Workers`]): claim (runs of the flows this process serves),
//!   run, renew the lease, apply a cancel recorded in the queue, record the outcome and send
//!   its webhook; take over a run whose worker died (recover it from its journal, or run it
//!   again from its start and say so); stop claiming and finish or hand back on shutdown;
//! - `events`: a queued run's events in the queue: stored by its worker, streamed by any
//!   process (with `Last-Event-ID`), trimmed after a retention.

mod events;
mod http;
mod worker;

use std::sync::Arc;
use std::time::Duration;

use agentweave_runtime::store::RunQueue;
use tokio::sync::watch;

pub(crate) use http::{
    cancel_queued, enqueue, queued_info, queued_runs, stream_queued, wait_queued,
};
pub use worker::{run_workers, Workers};

/// How a server uses its run queue (see [`ServerBuilder::run_queue`](crate::ServerBuilder::run_queue)).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct QueueOptions {
    /// Runs this process runs at once (default 4); 0: this process only enqueues.
    pub workers: usize,
    /// How long a claim holds before another process may take the run over (default 30 s);
    /// it is renewed every third of it while the run goes on.
    pub lease: Duration,
    /// How long an idle worker waits before it looks at the queue again (default 50 ms).
    pub poll: Duration,
    /// How long shutdown waits for running runs to end before it hands them back (default
    /// 30 s).
    pub drain: Duration,
    /// How long a queued run's events are kept after it ended (default 1 hour); then they
    /// are removed and attaching to the run answers `410 event_expired`.
    pub event_retention: Duration,
    /// The most events kept for one queued run (default 10,000); past it an `error` event
    /// says so and only the run's `done` event is stored.
    pub max_events: u64,
    /// How often this process looks for due schedules (default 1 s); each process with
    /// workers does (see [`crate::schedules`]).
    pub schedule_poll: Duration,
    /// The clock schedules are read against (the system clock by default; a test's
    /// [`ManualHost`](agentweave_runtime::host::ManualHost) to move it by hand); the usage retention
    /// counts its days on it too.
    pub schedule_clock: crate::schedules::ScheduleClock,
    /// How many UTC days of the usage report (`GET /v1/usage`) the store keeps: today and the
    /// days before it, up to this many in all (`None`, the default: every day). The sweeper
    /// that removes ended runs' events deletes older rows, every quarter of
    /// [`event_retention`](QueueOptions::event_retention) (at least every second, at most every
    /// 10 minutes). Budgets are not affected: a tenant's month counts in its own row.
    pub usage_retention_days: Option<u32>,
}

impl Default for QueueOptions {
    fn default() -> Self {
        QueueOptions {
            workers: 4,
            lease: Duration::from_secs(30),
            poll: Duration::from_millis(50),
            drain: Duration::from_secs(30),
            event_retention: Duration::from_secs(3600),
            max_events: 10_000,
            schedule_poll: Duration::from_secs(1),
            schedule_clock: crate::schedules::ScheduleClock::default(),
            usage_retention_days: None,
        }
    }
}

/// A server's queue and how it uses it.
#[derive(Clone)]
pub(crate) struct QueueSettings {
    pub queue: Arc<dyn RunQueue>,
    pub options: QueueOptions,
    /// This process's name in the queue's rows (`host-pid-random`).
    pub worker: String,
    /// Bumped each time a worker of this process stored events: its readers look at once.
    pub appended: Arc<watch::Sender<u64>>,
}

impl QueueSettings {
    pub fn new(queue: Arc<dyn RunQueue>, options: QueueOptions) -> Self {
        let token = uuid::Uuid::new_v4().simple().to_string();
        QueueSettings {
            queue,
            options,
            worker: format!("pid{}-{}", std::process::id(), &token[..8]),
            appended: Arc::new(watch::channel(0).0),
        }
    }
}
