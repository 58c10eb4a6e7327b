//! The in-process host: what the engine's runs get from this process (see
//! [`agentweave_core::host`]). Every run the [`Runner`](crate::Runner) starts waits on tokio's timer
//! ([`TokioHost`]), reads the system clock and draws random ids.
//!
//! The engine's other hosts are re-exported here: [`StdHost`] (any executor) and
//! [`ManualHost`] (deterministic, stepped by hand in tests).

use std::time::{Duration, SystemTime};

use futures::future::BoxFuture;

pub use agentweave_core::host::{within, Host, ManualHost, StdHost};

/// The host of runs in this process: tokio's timer (so a run honours tokio's paused test clock
/// and needs a tokio runtime with time enabled when it waits), the system clock and random ids.
#[derive(Debug, Clone, Copy, Default)]
pub struct TokioHost;

impl Host for TokioHost {
    fn sleep(&self, wait: Duration) -> BoxFuture<'static, ()> {
        Box::pin(tokio::time::sleep(wait))
    }

    fn now(&self) -> SystemTime {
        SystemTime::now()
    }

    fn new_id(&self) -> String {
        agentweave_core::ids::unique_token()
    }
}

/// The tokio host, shared (a run allocates nothing for it).
pub(crate) fn tokio_host() -> std::sync::Arc<dyn Host> {
    static HOST: std::sync::OnceLock<std::sync::Arc<dyn Host>> = std::sync::OnceLock::new();
    std::sync::Arc::clone(HOST.get_or_init(|| std::sync::Arc::new(TokioHost)))
}
