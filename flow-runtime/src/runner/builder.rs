//! [`RunnerBuilder`]: a [`Runner`]'s configuration (the tree's stores, durability, limits,
//! lease, middleware, options), set once before the runner runs anything.
//!
//! A runner is configuration plus a handful of verbs taking requests (see `request`): what
//! varies per run (who asks, the options, the durability) goes on the request, never on a
//! clone of the runner.

use std::sync::Arc;
use std::time::Duration;

use super::durability::Durability;
use super::run_handle::{RunRegistry, RunRetention};
use super::runs::Runner;
use super::turn::TurnRouting;
use crate::agent::middleware::{Middleware, Middlewares};
use crate::agent::options::RunOptions;
use crate::agent::FlowAgent;
use crate::limits::RunLimits;
use crate::store::{CheckpointCodec, CheckpointStore, JournalStore, ThreadStore, DEFAULT_LEASE};

/// Configures a [`Runner`]: start with [`Runner::builder`], end with
/// [`build`](RunnerBuilder::build).
///
/// ```
/// use agentweave_runtime::{Durability, FlowAgent, FnAgent, InMemoryStore, Runner};
/// let bot = FnAgent::new("bot", |cx, _| async move { cx.say("hi"); Ok(()) });
/// let store = InMemoryStore::new();
/// let runner = Runner::builder(FlowAgent::new(bot))
///     .stores(store.clone())
///     .journal_store(store)
///     .durability(Durability::Sync)
///     .build();
/// # drop(runner);
/// ```
#[must_use = "a builder does nothing until `build` makes the runner"]
pub struct RunnerBuilder(Runner);

impl std::fmt::Debug for RunnerBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("RunnerBuilder").field(&self.0).finish()
    }
}

impl Runner {
    /// A runner for the tree `agent` is the root of (or the subtree it heads), with the
    /// default configuration: no stores (runs outside threads only, not checkpointed), no
    /// journal. [`builder`](Runner::builder) configures one.
    pub fn new(agent: impl Into<FlowAgent>) -> Self {
        Runner::with_defaults(agent.into())
    }

    /// Configures a runner for the tree `agent` is the root of: stores, durability, limits,
    /// lease, middleware, options (see [`RunnerBuilder`]).
    pub fn builder(agent: impl Into<FlowAgent>) -> RunnerBuilder {
        RunnerBuilder(Runner::with_defaults(agent.into()))
    }

    pub(crate) fn with_defaults(agent: FlowAgent) -> Self {
        let flow_print = format!("{:016x}", crate::ids::fingerprint_of(&agent.shape())).into();
        Runner {
            flow_print,
            agent: Arc::new(agent),
            streaming: false,
            store: None,
            middleware: Middlewares::default(),
            options: Arc::default(),
            codec: CheckpointCodec::default(),
            limits: RunLimits::default(),
            budgets: None,
            spending: None,
            lease: DEFAULT_LEASE,
            threads: super::turn::ThreadSettings::default(),
            journal: None,
            durability: super::durability::Durability::default(),
            host: crate::host::tokio_host(),
        }
    }
}

impl From<Runner> for RunnerBuilder {
    /// The configuration of `runner`, to change: the runner it builds shares `runner`'s
    /// stores, its runs and its claims on threads (as a clone does), with what the builder
    /// changes (a second runner over the same store with another durability, say).
    fn from(runner: Runner) -> Self {
        RunnerBuilder(runner)
    }
}

impl RunnerBuilder {
    /// The runner, configured.
    pub fn build(self) -> Runner {
        self.0
    }

    /// Asks agents for streamed output (they see it as [`AgentInput::streaming`](crate::AgentInput::streaming)).
    pub fn streaming(mut self, streaming: bool) -> Self {
        self.0.streaming = streaming;
        self
    }

    /// Bounds on every run of this runner (transfers, recorded events); default
    /// [`RunLimits::default`]. A run that meets one ends with one
    /// [`AgentError::LimitReached`](crate::AgentError::LimitReached) event and keeps what it recorded.
    pub fn limits(mut self, limits: RunLimits) -> Self {
        self.0.limits = limits;
        self
    }

    /// What every run of this runner may spend: tokens, money, model calls, tool calls and
    /// wall time, for the whole run and per agent (see [`crate::budget`]); default none. A
    /// run whose next call would cross one ends before it with one
    /// [`AgentError::BudgetExceeded`](crate::AgentError::BudgetExceeded) event and keeps what
    /// it recorded.
    pub fn budgets(mut self, budgets: crate::budget::Budgets) -> Self {
        self.0.budgets = (!budgets.is_empty()).then(|| Arc::new(budgets));
        self
    }

    /// Budgets shared with every runner and server process on the same store: per thread and
    /// per tenant per UTC day or month (see [`SpendingBudgets`](crate::SpendingBudgets)); default
    /// none. Each model call of a turn is reserved in the store before it is made and settled
    /// with its reported usage after, and added to the store's usage report; a call that would
    /// cross a limit ends the run before it with one
    /// [`AgentError::BudgetExceeded`](crate::AgentError::BudgetExceeded) event. Deleting a
    /// thread deletes its spending.
    pub fn spending(mut self, budgets: crate::SpendingBudgets) -> Self {
        self.0.spending = Some(budgets.guard(self.0.agent.name()));
        self
    }

    /// What this runner's runs get from the world: their waits (a retry's backoff, a tool's
    /// time limit), clock and fresh ids (run ids, idempotency scopes); default
    /// [`TokioHost`](crate::host::TokioHost). A [`ManualHost`](crate::host::ManualHost) makes
    /// runs deterministic for tests: same flow, same ids, same events.
    pub fn host(mut self, host: Arc<dyn crate::host::Host>) -> Self {
        self.0.host = host;
        self
    }

    /// Signs every checkpoint this runner saves with `key` (HMAC-SHA256) and refuses, on
    /// resume, any checkpoint not signed with it ([`CheckpointError::BadSignature`](crate::CheckpointError::BadSignature)). The key
    /// belongs to the runner, not the store, so every store backend gets it; give every
    /// process that resumes these runs the same key.
    pub fn checkpoint_key(mut self, key: impl Into<Vec<u8>>) -> Self {
        self.0.codec = self.0.codec.key(key);
        self
    }

    /// How checkpoints are encoded and decoded (key, size limit); see [`CheckpointCodec`].
    pub fn checkpoint_codec(mut self, codec: CheckpointCodec) -> Self {
        self.0.codec = codec;
        self
    }

    /// Options for the runs (and resumes, thread turns) this runner starts, addressed to
    /// agents by name (see [`RunOptions`]). For one run, give options to its request instead
    /// ([`RunRequest::options`](super::RunRequest::options),
    /// [`TurnRequest::options`](super::TurnRequest::options)).
    ///
    /// ```
    /// # use agentweave_runtime::{FlowAgent, FnAgent, Runner, RunOptions, AgentRunOptions};
    /// let cold = RunOptions::new().agent("a", AgentRunOptions::new().temperature(0.0));
    /// let runner = Runner::builder(FlowAgent::new(FnAgent::new("a", |_, _| async { Ok(()) })))
    ///     .run_options(cold)
    ///     .build();
    /// let events = runner.run("hello");
    /// # drop(events);
    /// ```
    pub fn run_options(mut self, options: RunOptions) -> Self {
        self.0.options = Arc::new(options);
        self
    }

    /// Where checkpoints of interrupted runs are saved.
    pub fn checkpoint_store(mut self, store: impl CheckpointStore) -> Self {
        self.0.store = Some(Arc::new(store));
        self
    }

    /// Like [`checkpoint_store`](RunnerBuilder::checkpoint_store), with a store already shared.
    pub fn shared_checkpoint_store(mut self, store: Arc<dyn CheckpointStore>) -> Self {
        self.0.store = Some(store);
        self
    }

    /// How long a resume's claim, and a thread turn's lease on its thread, last before
    /// another worker may take the checkpoint or the thread over (default [`DEFAULT_LEASE`](crate::store::DEFAULT_LEASE),
    /// five minutes). The runner renews them as the run emits events, so choose a lease longer
    /// than the longest stretch without an event (a slow model call, a slow tool): a worker
    /// that stays silent past its lease may find its run taken over, and its outcome refused
    /// ([`StoreError::ClaimLost`](crate::store::StoreError::ClaimLost), [`ThreadError::LeaseLost`](crate::ThreadError::LeaseLost)).
    pub fn lease(mut self, lease: Duration) -> Self {
        self.0.lease = lease;
        self
    }

    /// Adds middleware that runs around every agent of every run this runner starts (or
    /// resumes), and around the model and tool calls of its LLM agents; it is the outermost,
    /// before the nodes' and the agents' own (see [`middleware`](crate::middleware)).
    pub fn middleware(mut self, middleware: impl Middleware) -> Self {
        self.0.middleware = self.0.middleware.with(Arc::new(middleware));
        self
    }

    /// Adds shared middleware (see [`middleware`](RunnerBuilder::middleware)).
    pub fn middleware_arc(mut self, middleware: Arc<dyn Middleware>) -> Self {
        self.0.middleware = self.0.middleware.with(middleware);
        self
    }

    /// Where conversations are kept ([`InMemoryStore`](crate::InMemoryStore),
    /// [`FileStore`](crate::FileStore), and with their features `SqliteStore` and
    /// `PostgresStore` implement [`ThreadStore`]). An interrupted turn also
    /// needs a [`checkpoint_store`](RunnerBuilder::checkpoint_store); [`stores`](RunnerBuilder::stores) sets
    /// both at once.
    pub fn thread_store(mut self, store: impl ThreadStore) -> Self {
        // A record still sealed (a sealed store's data without its keys) is an error, not an
        // empty record.
        self.0.threads.store = Some(Arc::new(crate::store::OpenedOnly(store)));
        self
    }

    /// Uses `store` for both checkpoints and threads.
    pub fn stores<S: ThreadStore + CheckpointStore + Clone>(self, store: S) -> Self {
        self.checkpoint_store(store.clone()).thread_store(store)
    }

    /// Where each turn of a thread starts (default: [`TurnRouting::LastAgent`]).
    pub fn turn_routing(mut self, routing: TurnRouting) -> Self {
        self.0.threads.routing = routing;
        self
    }

    /// Where run journals are kept ([`InMemoryStore`](crate::InMemoryStore),
    /// [`FileStore`](crate::FileStore), `SqliteStore`, `PostgresStore`); needed by the
    /// [`Async`](Durability::Async) and [`Sync`](Durability::Sync) modes.
    pub fn journal_store(mut self, store: impl JournalStore) -> Self {
        self.0.journal = Some(Arc::new(store));
        self
    }

    /// How much of each run is journaled before it ends (default [`Durability::Exit`]; the
    /// modes and their guarantees: [`Durability`]). For one turn, give it to its request
    /// ([`TurnRequest::durability`](super::TurnRequest::durability)).
    pub fn durability(mut self, mode: Durability) -> Self {
        self.0.durability = mode;
        self
    }

    /// Threads expire this long after their last record (see the guide's "Durable execution" chapter):
    /// expired threads are gone for reads, a new message starts them afresh, and
    /// [`purge`](Runner::purge) deletes them. Default: never.
    pub fn thread_ttl(mut self, ttl: Duration) -> Self {
        self.0.threads.ttl = Some(ttl);
        self
    }

    /// Who may answer the threads' interrupts (see [`AnswerRule`](super::AnswerRule)): every
    /// request that continues an interrupted turn, whichever door it came through, is checked
    /// against it as its caller's ([`TurnRequest::by`](super::TurnRequest::by)) before anything
    /// runs. Default: none (anyone may answer, as a library's caller decides).
    pub fn answer_rule(mut self, rule: super::AnswerRule) -> Self {
        self.0.threads.answer_rule = Some(Arc::new(rule));
        self
    }

    /// How long ended runs' events are kept, and how many (see [`RunRetention`]). Set it
    /// before the runner starts runs.
    pub fn run_retention(mut self, retention: RunRetention) -> Self {
        self.0.threads.runs = std::sync::Arc::new(RunRegistry::with_retention(retention));
        self
    }
}
