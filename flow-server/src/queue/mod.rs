//! Many servers, one queue: with a run queue ([`ServerBuilder::run_queue`](crate::ServerBuilder::run_queue)),
//! a background run (`POST .../runs` without `stream`) waits in the store's
//! [`RunQueue`](flow_runtime::store::RunQueue) and answers its id at once; every server process
//! (and every `worker` process) runs workers that claim queued runs and run them with the
//! flow's runner. Status, wait and list read the queue, so any process answers for any run.
//!
//! - `http`: what the run endpoints do with a queue (enqueue, status, wait, list);
//! - `worker`: the claim loops ([`Workers`]): claim, run, renew the lease, record the
//!   outcome; take over a run whose worker died (recover it from its journal, or run it again
//!   from its start and say so); stop claiming and finish or hand back on shutdown.

mod http;
mod worker;

use std::sync::Arc;
use std::time::Duration;

use flow_runtime::store::RunQueue;

pub(crate) use http::{enqueue, queued_info, queued_runs, wait_queued};
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
}

impl Default for QueueOptions {
    fn default() -> Self {
        QueueOptions {
            workers: 4,
            lease: Duration::from_secs(30),
            poll: Duration::from_millis(50),
            drain: Duration::from_secs(30),
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
}

impl QueueSettings {
    pub fn new(queue: Arc<dyn RunQueue>, options: QueueOptions) -> Self {
        let token = uuid::Uuid::new_v4().simple().to_string();
        QueueSettings {
            queue,
            options,
            worker: format!("pid{}-{}", std::process::id(), &token[..8]),
        }
    }
}
