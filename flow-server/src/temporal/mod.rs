//! Temporal as the executor of a server's turns (feature `temporal`): every door (the HTTP
//! API's turns, runs and resumes, A2A, AG-UI, the Agent Protocol, MCP) runs a thread's turns as
//! the thread's workflow on Temporal workers, through the same runner, requests and event
//! stream as without it.
//!
//! - [`TemporalExecutor`]: the Temporal client, the task queue the workers poll, and the URL
//!   workers reach this server process at (for streamed model output).
//!   [`ServerBuilder::temporal`](crate::ServerBuilder::temporal) serves each flow through it.
//! - `agent`: [`TemporalAgent`], the root a served flow's runner runs in place of the flow's
//!   tree. Its run sends the turn to the thread workflow (started if need be) and streams the
//!   workflow's events back as they are made; its resume answers the workflow's question and
//!   streams the rest. The runner around it records the thread, leases it, checks who may
//!   answer, and maps the events to every protocol, as for a tree run in the process.
//! - `live`: the sink (`POST /v1/temporal/live/{token}`) a turn's model calls post their
//!   streamed pieces to (see `agentweave_temporal::live` for the mechanism and its guarantees).
//!
//! How a client sees a turn's events as they are made, each once even when a worker dies:
//! the server reads the workflow's `progress` query every
//! [`TemporalExecutor::poll_every`] (20 ms by default; a query enters no history), from the
//! count of events it has passed on, and a worker that takes a dead worker's place replays
//! the history and makes the same events under the same numbers. A turn's model calls post
//! their streamed pieces to the turn's sink (its random token its only credential), numbered
//! by call and piece; a call run again posts them again from the first and the sink drops the
//! ones it has; each piece says its call's place among the turn's events, so the first opens
//! the call's streamed message with no reading of the workflow; the reply's event then goes
//! out without its message, which streamed. A call
//! whose pieces never arrive (the sink unreachable from the worker) has its stream failed when
//! the workflow says the call ended. A dead worker's activity is noticed after its
//! start-to-close timeout ([`TemporalExecutor::model_timeout`], `tool_timeout`), its workflow
//! task after `task_timeout`; meanwhile the server's reading waits (a query no worker answers
//! is asked again, for up to 30 s at the default poll). `tests/temporal_kill.rs` SIGKILLs a
//! worker at random moments of a multi-agent turn with a paid tool and an approval: each
//! payment once, every client stream the in-process server's frames.
//!
//! The workers (any number of processes, on any machines) hold the flows' real trees
//! (`agentweave_temporal::worker_flows`) under the names the server serves them by; the server
//! processes (any number) hold no tree of their own. The thread's records, checkpoints and
//! journals stay in the server's store, so every read route works as without Temporal.

mod agent;
mod live;

pub use agent::TemporalAgent;
pub(crate) use live::routes;

use std::sync::Arc;
use std::time::Duration;

/// Where and how a server's turns run on Temporal: see the [module docs](self).
#[derive(Clone)]
pub struct TemporalExecutor {
    pub(crate) client: temporalio_client::Client,
    pub(crate) task_queue: Arc<str>,
    pub(crate) public_url: Arc<str>,
    pub(crate) poll: Duration,
    pub(crate) tool_timeout_ms: Option<u64>,
    pub(crate) model_timeout_ms: Option<u64>,
    pub(crate) task_timeout: Option<Duration>,
}

impl std::fmt::Debug for TemporalExecutor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TemporalExecutor")
            .field("task_queue", &self.task_queue)
            .field("public_url", &self.public_url)
            .finish_non_exhaustive()
    }
}

impl TemporalExecutor {
    /// Turns run on the workers of `task_queue`, reached through `client`
    /// (`agentweave_temporal::connect`); `public_url` is this server process's base URL as the
    /// workers reach it (`http://10.0.0.5:8080`): their model calls post streamed pieces to
    /// `{public_url}/v1/temporal/live/...`.
    pub fn new(
        client: temporalio_client::Client,
        task_queue: impl Into<Arc<str>>,
        public_url: impl Into<Arc<str>>,
    ) -> Self {
        TemporalExecutor {
            client,
            task_queue: task_queue.into(),
            public_url: Arc::from(public_url.into().trim_end_matches('/')),
            poll: Duration::from_millis(20),
            tool_timeout_ms: None,
            model_timeout_ms: None,
            task_timeout: None,
        }
    }

    /// How often a streaming turn reads the workflow's events (default 20 ms; a piece of
    /// streamed model output does not wait for it, it is pushed; the first piece of a call
    /// says the call's place among the turn's events, and opens its streamed message at once
    /// when the turn has passed that place, or else makes it read at once).
    pub fn poll_every(mut self, every: Duration) -> Self {
        self.poll = every.max(Duration::from_millis(1));
        self
    }

    /// How long one attempt of a tool call may take on a worker (default 10 s): a worker that
    /// dies during a call is noticed after it (see `agentweave_temporal::ThreadStart`).
    pub fn tool_timeout(mut self, timeout: Duration) -> Self {
        self.tool_timeout_ms = Some(timeout.as_millis() as u64);
        self
    }

    /// How long one attempt of a model call may take on a worker (default 120 s): a worker
    /// that dies during a call is noticed after it, and the call runs again elsewhere.
    pub fn model_timeout(mut self, timeout: Duration) -> Self {
        self.model_timeout_ms = Some(timeout.as_millis() as u64);
        self
    }

    /// How long a workflow task may take on a worker before another worker gets it (Temporal's
    /// workflow task timeout, default 10 s): how soon a thread goes on after its worker died
    /// between calls. Set on the threads' workflows when this server starts them.
    pub fn task_timeout(mut self, timeout: Duration) -> Self {
        self.task_timeout = Some(timeout);
        self
    }

    /// The root a runner of flow `flow` (its root agent named `root`) runs in its place.
    pub fn agent(&self, flow: &str, root: &str) -> TemporalAgent {
        TemporalAgent::new(self.clone(), flow, root)
    }
}

/// Has the model activities of `flows` (a worker's, `agentweave_temporal::worker_flows()`)
/// reserve flow `flow`'s calls in a server's spending `budgets` as the server counts them: the
/// thread is the workflow's id (the thread's store id), its tenant the one the server gave it,
/// the usage report's flow `flow` (see `agentweave_temporal::spending`). A server built with
/// [`ServerBuilder::spending`](crate::ServerBuilder::spending) and
/// [`temporal`](crate::ServerBuilder::temporal) does it for the workers of its own process;
/// a worker process of its own calls it for each flow, with budgets on the server's store.
///
/// ```no_run
/// # fn flow() -> agentweave_runtime::FlowAgent { unimplemented!() }
/// use std::sync::Arc;
/// use agentweave_runtime::store::InMemoryRunQueue;
/// use agentweave_runtime::{SpendingBudgets, SpendingLimits};
/// let budgets = SpendingBudgets::new(Arc::new(InMemoryRunQueue::new()))
///     .thread(SpendingLimits::default().max_model_calls(50));
/// let flows = agentweave_temporal::worker_flows();
/// flows.insert("desk", flow());
/// agentweave_server::temporal::worker_spending(flows, "desk", &budgets);
/// ```
pub fn worker_spending(
    flows: &agentweave_temporal::Flows,
    flow: &str,
    budgets: &agentweave_runtime::SpendingBudgets,
) {
    flows.spending(flow, crate::state::flow_spending(flow, budgets));
}
