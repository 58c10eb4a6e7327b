//! [`CapacityModel`]: a model behind a concurrency cap and a rate limit.

use std::fmt;
use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use futures::StreamExt;
use governor::middleware::NoOpMiddleware;
use governor::state::{InMemoryState, NotKeyed};
use governor::{Quota, RateLimiter};
use tokio::sync::Semaphore;

use crate::host::Host;
use crate::message::Message;
use crate::model::{ChatModel, ChatRequest, ModelError, ModelStream};

/// The host's clock, as the rate limiter reads it.
#[derive(Clone)]
struct HostClock(Arc<dyn Host>);

impl governor::clock::Clock for HostClock {
    type Instant = SystemTime;

    fn now(&self) -> SystemTime {
        self.0.now()
    }
}

type Limiter = RateLimiter<NotKeyed, InMemoryState, HostClock, NoOpMiddleware<SystemTime>>;

/// A model behind a concurrency cap and a rate limit, shared by every agent that calls it: at
/// most so many calls at once, and at most so many started per period.
///
/// Wrap a model once and give the same `Arc<CapacityModel>` to every agent (of every run) that
/// should share its limits: a provider's rate limit is per key, not per agent. A call beyond the
/// concurrency cap waits for a running one to end; a call beyond the rate waits until the rate
/// allows it (the [GCRA](https://en.wikipedia.org/wiki/Generic_cell_rate_algorithm) of the
/// `governor` crate, read on the host's clock, so a test drives it with a
/// [`ManualHost`](crate::host::ManualHost)). A call that still meets a 429 or a 5xx is retried
/// by the agent's [`RetryPolicy`](crate::model::RetryPolicy) (backoff and jitter), inside the
/// same step of the run: the steps that finished before it, parallel tool calls included, are
/// not run again.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// use std::num::NonZeroU32;
/// use std::sync::Arc;
/// use agentweave_runtime::model::{CapacityModel, ChatModel, ChatRequest, ScriptStep, ScriptedModel};
/// use agentweave_runtime::Message;
///
/// let model = Arc::new(
///     CapacityModel::new(ScriptedModel::new([ScriptStep::text("hi")]))
///         .max_concurrent(8)
///         .per_minute(NonZeroU32::new(600).unwrap()),
/// );
/// let reply = model.generate(&ChatRequest::new([Arc::new(Message::user("hello"))])).await;
/// assert_eq!(reply.unwrap().content, "hi");
/// # }
/// ```
pub struct CapacityModel<M> {
    inner: M,
    permits: Option<Arc<Semaphore>>,
    rate: Option<(Quota, Limiter)>,
    host: Arc<dyn Host>,
}

impl<M: ChatModel> fmt::Debug for CapacityModel<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CapacityModel")
            .field("model", &self.inner.model_name())
            .field(
                "available",
                &self.permits.as_ref().map(|p| p.available_permits()),
            )
            .field("quota", &self.rate.as_ref().map(|(q, _)| q))
            .finish()
    }
}

impl<M: ChatModel> CapacityModel<M> {
    /// `inner` with no cap and no rate limit yet, on the tokio host.
    pub fn new(inner: M) -> Self {
        CapacityModel {
            inner,
            permits: None,
            rate: None,
            host: crate::host::tokio_host(),
        }
    }

    /// At most `calls` calls at once (a streamed call holds its place until its stream ends).
    /// 0 is taken as 1.
    pub fn max_concurrent(mut self, calls: usize) -> Self {
        self.permits = Some(Arc::new(Semaphore::new(calls.max(1))));
        self
    }

    /// At most `quota` calls started (its burst at once, then one per its period).
    pub fn rate(mut self, quota: Quota) -> Self {
        let limiter = RateLimiter::direct_with_clock(quota, HostClock(Arc::clone(&self.host)));
        self.rate = Some((quota, limiter));
        self
    }

    /// At most `calls` calls started per minute, in a burst of up to `calls`.
    pub fn per_minute(self, calls: NonZeroU32) -> Self {
        self.rate(Quota::per_minute(calls))
    }

    /// At most `calls` calls started per second, in a burst of up to `calls`.
    pub fn per_second(self, calls: NonZeroU32) -> Self {
        self.rate(Quota::per_second(calls))
    }

    /// The clock the rate limit reads and the timer it waits on (give the runner's host).
    /// Set it before [`rate`](Self::rate).
    pub fn host(mut self, host: Arc<dyn Host>) -> Self {
        self.host = host;
        if let Some((quota, _)) = self.rate.take() {
            self = self.rate(quota);
        }
        self
    }

    /// Calls that may start now without waiting for the concurrency cap (`None`: no cap).
    pub fn available(&self) -> Option<usize> {
        self.permits.as_ref().map(|p| p.available_permits())
    }

    /// Waits for the rate limit to let one call start.
    async fn admit(&self) {
        let Some((_, limiter)) = &self.rate else {
            return;
        };
        loop {
            match limiter.check() {
                Ok(()) => return,
                Err(not_until) => {
                    let wait = not_until.wait_time_from(self.host.now());
                    // A clock that stands still (a test's) is moved by the test; waiting
                    // zero would spin.
                    self.host.sleep(wait.max(Duration::from_nanos(1))).await;
                }
            }
        }
    }

    async fn permit(&self) -> Option<tokio::sync::OwnedSemaphorePermit> {
        match &self.permits {
            // The semaphore is never closed.
            Some(permits) => Arc::clone(permits).acquire_owned().await.ok(),
            None => None,
        }
    }
}

#[async_trait]
impl<M: ChatModel> ChatModel for CapacityModel<M> {
    fn model_name(&self) -> &str {
        self.inner.model_name()
    }

    fn provider_name(&self) -> &str {
        self.inner.provider_name()
    }

    async fn generate(&self, request: &ChatRequest) -> Result<Message, ModelError> {
        let _permit = self.permit().await;
        self.admit().await;
        self.inner.generate(request).await
    }

    async fn stream(&self, request: &ChatRequest) -> Result<ModelStream, ModelError> {
        let permit = self.permit().await;
        self.admit().await;
        let stream = self.inner.stream(request).await?;
        // The place is held until the stream ends or is dropped.
        Ok(stream
            .map(move |chunk| {
                let _held = &permit;
                chunk
            })
            .boxed())
    }
}
