//! [`FailoverModel`]: an ordered list of models with a time limit per call and a circuit breaker each.

use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use async_trait::async_trait;

use super::{ChatModel, ChatRequest, ModelError, ModelStream};
use crate::host::{within, Host, StdHost};
use crate::message::Message;

/// When a [`FailoverModel`]'s breaker opens, and for how long.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BreakerPolicy {
    /// Failures in a row that open the breaker (at least 1).
    pub failures_to_open: u32,
    /// How long an open breaker skips its model before letting one call through.
    pub open_for: Duration,
}

impl Default for BreakerPolicy {
    /// 5 failures in a row open the breaker for 30 s.
    fn default() -> Self {
        BreakerPolicy {
            failures_to_open: 5,
            open_for: Duration::from_secs(30),
        }
    }
}

/// The state of one model's breaker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BreakerState {
    /// Calls go through; `failures` in a row so far.
    Closed {
        /// Failures in a row.
        failures: u32,
    },
    /// Calls skip the model until `until`.
    Open {
        /// When one call is let through again.
        until: SystemTime,
    },
    /// One call is on its way to the model; its outcome closes or opens the breaker.
    HalfOpen,
}

/// An ordered list of models tried in turn, each call with a time limit and
/// each model behind a [circuit breaker](BreakerPolicy).
///
/// A call goes to the first model whose breaker lets it through. If that model fails with a
/// [retryable](ModelError::retryable) error (a 429, a 5xx, a broken connection) or does not
/// answer within the per-call time limit, the call goes to the next model; an error that is not
/// retryable (a 400: the request itself is wrong) is returned at once. A model's breaker opens
/// after `failures_to_open` failures in a row: the model is then skipped for `open_for`; after
/// that one call is let through (half-open): success closes the breaker, failure opens it again.
/// Time limits and the breaker read the [`Host`] clock, so a test drives them with a
/// [`ManualHost`](crate::host::ManualHost).
///
/// The reply names the model that answered ([`Message::model`]): the event and the journal
/// carry it, and a recovered run replays that reply rather than asking any model again. The
/// run's usage report counts the reply under that model.
///
/// ```
/// # futures::executor::block_on(async {
/// use std::sync::Arc;
/// use agentweave_core::host::ManualHost;
/// use agentweave_core::model::{ChatModel, ChatRequest, FailoverModel, ModelError, ScriptStep, ScriptedModel};
/// use agentweave_core::Message;
///
/// let primary = ScriptedModel::new([ScriptStep::fail(ModelError::http("primary", 503, "busy"))])
///     .named("primary");
/// let backup = ScriptedModel::new([ScriptStep::text("from the backup")]).named("backup");
/// let model = FailoverModel::new("chat", [Arc::new(primary) as Arc<dyn ChatModel>, Arc::new(backup)])
///     .host(Arc::new(ManualHost::new()));
/// let reply = model.generate(&ChatRequest::new([Arc::new(Message::user("hi"))])).await.unwrap();
/// assert_eq!(reply.content, "from the backup");
/// assert_eq!(reply.model.as_deref(), Some("backup"));
/// # });
/// ```
pub struct FailoverModel {
    name: Arc<str>,
    models: Vec<Arc<dyn ChatModel>>,
    breakers: Vec<Mutex<BreakerState>>,
    timeout: Option<Duration>,
    policy: BreakerPolicy,
    host: Arc<dyn Host>,
}

impl fmt::Debug for FailoverModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FailoverModel")
            .field("name", &self.name)
            .field(
                "models",
                &self
                    .models
                    .iter()
                    .map(|m| m.model_name())
                    .collect::<Vec<_>>(),
            )
            .field("timeout", &self.timeout)
            .field("policy", &self.policy)
            .finish()
    }
}

impl FailoverModel {
    /// A model named `name` that tries `models` in order; no time limit and the default
    /// [`BreakerPolicy`] until set; the system clock until [`host`](Self::host) is given.
    pub fn new(
        name: impl Into<Arc<str>>,
        models: impl IntoIterator<Item = Arc<dyn ChatModel>>,
    ) -> Self {
        let models: Vec<_> = models.into_iter().collect();
        let breakers = models
            .iter()
            .map(|_| Mutex::new(BreakerState::Closed { failures: 0 }))
            .collect();
        FailoverModel {
            name: name.into(),
            models,
            breakers,
            timeout: None,
            policy: BreakerPolicy::default(),
            host: Arc::new(StdHost),
        }
    }

    /// Gives each model at most `limit` to answer (a streamed call: to open its stream)
    /// before the call goes to the next one.
    pub fn timeout(mut self, limit: Duration) -> Self {
        self.timeout = Some(limit);
        self
    }

    /// Sets when the breakers open and for how long.
    pub fn breaker(mut self, policy: BreakerPolicy) -> Self {
        self.policy = BreakerPolicy {
            failures_to_open: policy.failures_to_open.max(1),
            ..policy
        };
        self
    }

    /// The clock and timer the time limits and breakers use (give the runner's host).
    pub fn host(mut self, host: Arc<dyn Host>) -> Self {
        self.host = host;
        self
    }

    /// The state of the breaker of the model named `model`, if it is in the list.
    pub fn breaker_state(&self, model: &str) -> Option<BreakerState> {
        let k = self.models.iter().position(|m| m.model_name() == model)?;
        Some(*lock(&self.breakers[k]))
    }

    /// Whether model `k` may be called now (an open breaker past its time turns half-open and
    /// lets this one call through).
    fn admit(&self, k: usize) -> bool {
        let mut state = lock(&self.breakers[k]);
        match *state {
            BreakerState::Closed { .. } => true,
            BreakerState::HalfOpen => false,
            BreakerState::Open { until } => {
                if self.host.now() >= until {
                    *state = BreakerState::HalfOpen;
                    true
                } else {
                    false
                }
            }
        }
    }

    fn succeeded(&self, k: usize) {
        *lock(&self.breakers[k]) = BreakerState::Closed { failures: 0 };
    }

    fn failed(&self, k: usize) {
        let mut state = lock(&self.breakers[k]);
        let open = BreakerState::Open {
            until: self.host.now() + self.policy.open_for,
        };
        *state = match *state {
            BreakerState::Closed { failures } if failures + 1 < self.policy.failures_to_open => {
                BreakerState::Closed {
                    failures: failures + 1,
                }
            }
            _ => open,
        };
    }

    /// A call that did not count (not retryable: the request is at fault, not the model):
    /// a half-open breaker goes back to closed-with-no-news (open again would punish the model).
    fn not_counted(&self, k: usize) {
        let mut state = lock(&self.breakers[k]);
        if *state == BreakerState::HalfOpen {
            *state = BreakerState::Closed { failures: 0 };
        }
    }

    /// Runs `call` on each admitted model in turn until one answers.
    async fn first_answer<'a, T, F>(&'a self, call: F) -> Result<(usize, T), ModelError>
    where
        F: Fn(&'a dyn ChatModel) -> futures::future::BoxFuture<'a, Result<T, ModelError>>,
    {
        let mut last: Option<ModelError> = None;
        for (k, model) in self.models.iter().enumerate() {
            if !self.admit(k) {
                continue;
            }
            let attempt = call(&**model);
            let outcome = match self.timeout {
                None => attempt.await,
                Some(limit) => match within(&*self.host, limit, attempt).await {
                    Some(outcome) => outcome,
                    None => Err(ModelError::other(
                        model.model_name(),
                        format!(
                            "no answer within {limit:?} (the FailoverModel '{}' time limit)",
                            self.name
                        ),
                        true,
                    )),
                },
            };
            match outcome {
                Ok(answer) => {
                    self.succeeded(k);
                    return Ok((k, answer));
                }
                Err(error) if error.retryable() => {
                    self.failed(k);
                    tracing::warn!(model = %self.name, failed = model.model_name(), %error, "model failed; trying the next");
                    last = Some(error);
                }
                Err(error) => {
                    self.not_counted(k);
                    return Err(error);
                }
            }
        }
        Err(match last {
            Some(error) => ModelError::other(
                Arc::clone(&self.name),
                format!("every model failed or is paused by its breaker; the last error: {error}"),
                true,
            ),
            None => ModelError::other(
                Arc::clone(&self.name),
                "every model's breaker is open; the call was not sent",
                true,
            ),
        })
    }
}

fn lock(state: &Mutex<BreakerState>) -> std::sync::MutexGuard<'_, BreakerState> {
    state.lock().unwrap_or_else(|e| e.into_inner())
}

#[async_trait]
impl ChatModel for FailoverModel {
    fn model_name(&self) -> &str {
        &self.name
    }

    /// The first model's provider (the one asked first); the reply names the model that
    /// answered.
    fn provider_name(&self) -> &str {
        self.models
            .first()
            .map_or("_OTHER", |model| model.provider_name())
    }

    async fn generate(&self, request: &ChatRequest) -> Result<Message, ModelError> {
        let (k, mut reply) = self
            .first_answer(|model| Box::pin(model.generate(request)))
            .await?;
        reply.model = Some(self.models[k].model_name().into());
        Ok(reply)
    }

    async fn stream(&self, request: &ChatRequest) -> Result<ModelStream, ModelError> {
        use futures::StreamExt;
        let (k, stream) = self
            .first_answer(|model| Box::pin(model.stream(request)))
            .await?;
        let answered: Arc<str> = self.models[k].model_name().into();
        // Every chunk names the model, so the concatenated reply does.
        Ok(stream
            .map(move |chunk| {
                chunk.map(|mut chunk| {
                    chunk.model = Some(Arc::clone(&answered));
                    chunk
                })
            })
            .boxed())
    }
}
