//! [`AppState`]: the flows a server serves, its store, and its settings; built with
//! [`ServerBuilder`]. The state holds no run or thread of its own: everything lives in the
//! store, so several server processes on one store behave as one service.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use agentweave_runtime::store::JournalStore;
use agentweave_runtime::{
    CheckpointStore, Durability, FlowAgent, Runner, RunnerBuilder, ThreadStore, TurnRouting,
};
use axum::http::request::Parts;
use axum::http::HeaderValue;
use tokio::sync::Semaphore;

use crate::approvals::Approvals;
use crate::auth::{valid_tenant, Auth, SHARED_TENANT};
use crate::error::ApiError;
use crate::limits::Limits;
use crate::principal::Principal;

/// A tenant function: names the tenant of a request (from a header, a token, a client
/// certificate a proxy vouched for...), or `None` to refuse it.
pub type TenantFn = dyn Fn(&Parts) -> Option<String> + Send + Sync;

/// A function configuring the runner of each served flow: given the flow's name and the runner
/// the server made (over its store, with its streaming and turn routing), returns the runner
/// to serve (see [`ServerBuilder::runners`]).
pub type RunnerFn = dyn Fn(&str, RunnerBuilder) -> RunnerBuilder + Send + Sync;

/// What a flow is served from: a tree (the server makes its runner) or a runner.
enum FlowSource {
    Agent(FlowAgent),
    Runner(Box<RunnerBuilder>),
}

/// One flow the server serves under a name.
#[derive(Debug, Clone)]
pub struct ServedFlow {
    name: String,
    runner: Runner,
    approvals: Approvals,
    /// The flow's own tree when its runner runs another root in its place (a Temporal-served
    /// flow's runner runs a `TemporalAgent`): what the tree, card and graph routes show.
    tree: Option<FlowAgent>,
}

impl ServedFlow {
    /// The name it is served under (`/v1/flows/{name}`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The runner that runs its turns and resumes.
    pub fn runner(&self) -> &Runner {
        &self.runner
    }

    /// Who may answer its interrupts.
    pub fn approvals(&self) -> &Approvals {
        &self.approvals
    }

    /// The root of its tree: the flow's own, also when its turns run elsewhere (on Temporal,
    /// where the runner's root stands in for it), so every route that shows a flow's agents
    /// shows the same tree as for a flow run in process.
    pub fn agent(&self) -> &FlowAgent {
        self.tree.as_ref().unwrap_or_else(|| self.runner.agent())
    }
}

struct Inner {
    flows: BTreeMap<String, ServedFlow>,
    store: Arc<dyn CheckpointStore>,
    threads: Arc<dyn ThreadStore>,
    journal: Arc<dyn JournalStore>,
    auth: Auth,
    tenant: Option<Box<TenantFn>>,
    limits: Limits,
    cors_origins: Vec<HeaderValue>,
    /// The places of the threads running turns in this process (streamed or in the
    /// background): one per busy thread, within the tenants' limits.
    run_slots: Arc<crate::run_slots::RunSlots>,
    /// The key webhooks are signed with.
    webhook_secret: Option<Vec<u8>>,
    /// What webhooks and A2A push notifications may reach.
    outbound: agentweave_runtime::outbound::OutboundPolicy,
    /// The run queue background runs wait in, if any.
    queue: Option<crate::queue::QueueSettings>,
    /// The long-term memory the memory and store routes serve, if any.
    memory: Option<agentweave_runtime::memory::Memory>,
    /// The budgets per thread and tenant, and the usage report, if any.
    spending: Option<agentweave_runtime::SpendingBudgets>,
}

/// What the router's handlers share: cheap to clone (one `Arc`).
#[derive(Clone)]
pub struct AppState(Arc<Inner>);

impl fmt::Debug for AppState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AppState")
            .field("flows", &self.0.flows.keys().collect::<Vec<_>>())
            .field("auth", &self.0.auth)
            .field("tenant_fn", &self.0.tenant.is_some())
            .field("limits", &self.0.limits)
            .finish()
    }
}

impl AppState {
    /// Starts building a server's state over `store`, where threads, checkpoints and run
    /// journals live.
    pub fn builder<S: ThreadStore + CheckpointStore + JournalStore + Clone>(
        store: S,
    ) -> ServerBuilder {
        ServerBuilder::new(store)
    }

    /// The flow served under `name`.
    pub fn flow(&self, name: &str) -> Result<&ServedFlow, ApiError> {
        self.0.flows.get(name).ok_or_else(|| ApiError::UnknownFlow {
            name: name.chars().take(64).collect(),
        })
    }

    /// Every served flow, by name.
    pub fn flows(&self) -> impl Iterator<Item = &ServedFlow> {
        self.0.flows.values()
    }

    /// The store of checkpoints.
    pub fn store(&self) -> &Arc<dyn CheckpointStore> {
        &self.0.store
    }

    /// The store of threads.
    pub fn threads(&self) -> &Arc<dyn ThreadStore> {
        &self.0.threads
    }

    /// The store of run journals (turns' steps and start marks, and the server's index of
    /// idempotency keys).
    pub fn journal(&self) -> &Arc<dyn JournalStore> {
        &self.0.journal
    }

    /// How callers are authenticated.
    pub fn auth(&self) -> &Auth {
        &self.0.auth
    }

    /// The limits in force.
    pub fn limits(&self) -> &Limits {
        &self.0.limits
    }

    /// The origins allowed to call the API from a browser (none by default).
    pub fn cors_origins(&self) -> &[HeaderValue] {
        &self.0.cors_origins
    }

    /// The key webhooks are signed with, if one was set.
    pub(crate) fn queue_settings(&self) -> Option<&crate::queue::QueueSettings> {
        self.0.queue.as_ref()
    }

    pub(crate) fn webhook_secret(&self) -> Option<&[u8]> {
        self.0.webhook_secret.as_deref()
    }

    /// The long-term memory the memory routes serve ([`ServerBuilder::memory`]), if any.
    pub fn memory(&self) -> Option<&agentweave_runtime::memory::Memory> {
        self.0.memory.as_ref()
    }

    /// The budgets per thread and tenant and the usage report ([`ServerBuilder::spending`]),
    /// if any.
    pub fn spending(&self) -> Option<&agentweave_runtime::SpendingBudgets> {
        self.0.spending.as_ref()
    }

    /// What webhooks and A2A push notifications may reach ([`ServerBuilder::outbound`]).
    pub fn outbound(&self) -> &agentweave_runtime::outbound::OutboundPolicy {
        &self.0.outbound
    }

    /// A place for one more run of thread `thread` (a store id) of `tenant`, through any
    /// door: a background run, or a streamed turn or resume (`/turns`, `/resume`, A2A, AG-UI),
    /// held until the run or its event stream ends (see [`crate::run_slots`]). The same places
    /// and per-tenant limits for every door, so one tenant's streams cannot take the process's
    /// places from the others: 503 when the process is full
    /// ([`Limits::max_concurrent_turns`]), 429 when the tenant is at one of its limits.
    pub(crate) fn admit_run(
        &self,
        tenant: &str,
        thread: &str,
    ) -> Result<crate::run_slots::Admitted, ApiError> {
        self.0.run_slots.admit(tenant, thread)
    }

    /// The tenant of a request made by `principal`: the principal's own tenant if it has one,
    /// else the tenant function's answer, else [`SHARED_TENANT`].
    pub fn tenant_for(&self, principal: &Principal, parts: &Parts) -> Result<String, ApiError> {
        match principal.tenant_name() {
            Some(t) if valid_tenant(t) => Ok(t.to_owned()),
            Some(_) => Err(ApiError::Forbidden(
                "your credentials name a tenant this server does not accept".into(),
            )),
            None => self.tenant_of(parts),
        }
    }

    /// The tenant of a request: the tenant function's answer, or [`SHARED_TENANT`] without one.
    pub fn tenant_of(&self, parts: &Parts) -> Result<String, ApiError> {
        let Some(f) = &self.0.tenant else {
            return Ok(SHARED_TENANT.to_owned());
        };
        match f(parts) {
            Some(t) if valid_tenant(&t) => Ok(t),
            // The function's answer often comes from the request (a header): a name it cannot
            // be is the caller's mistake, refused as such, not a fault of the server.
            Some(_) => {
                tracing::warn!("the tenant function returned an invalid tenant name");
                Err(ApiError::Forbidden(
                    "this request names a tenant this server does not accept (a tenant is 1 to \
                     32 characters of A-Z, a-z, 0-9, '_' or '-')"
                        .into(),
                ))
            }
            None => Err(ApiError::Forbidden(
                "this request belongs to no tenant of this server".into(),
            )),
        }
    }
}

/// Why a server's state could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// No flow was added.
    #[error("a server needs at least one flow: call ServerBuilder::flow")]
    NoFlows,
    /// No [`Auth`] was chosen.
    #[error(
        "choose how callers authenticate: ServerBuilder::auth(Auth::bearer(token)), or \
         ServerBuilder::dev_mode() for an unauthenticated server on loopback only"
    )]
    NoAuth,
    /// A flow name is not usable in URLs and store keys.
    #[error("flow name '{0}' is not valid: use 1 to 24 characters of A-Z, a-z, 0-9, '_' or '-'")]
    InvalidFlowName(String),
    /// Two flows under one name.
    #[error("two flows are served as '{0}'; give each its own name")]
    DuplicateFlow(String),
    /// Approvals were configured for a flow that is not served.
    #[error("approvals are configured for flow '{0}', which is not served; check its name")]
    UnknownApprovalsFlow(String),
    /// A principal's tenant is not a valid tenant name.
    #[error("tenant '{0}' is not valid: use 1 to 32 characters of A-Z, a-z, 0-9, '_' or '-'")]
    InvalidTenant(String),
    /// An empty or malformed bearer token.
    #[error("a bearer token must be at least 16 visible ASCII characters")]
    WeakToken,
}

/// Builds an [`AppState`].
///
/// ```
/// use agentweave_runtime::{FlowAgent, FnAgent, InMemoryStore};
/// use agentweave_server::{AppState, Auth};
///
/// let bot = FnAgent::new("bot", |cx, _| async move {
///     cx.say("hello");
///     Ok(())
/// });
/// let state = AppState::builder(InMemoryStore::new())
///     .flow("bot", FlowAgent::new(bot))
///     .auth(Auth::bearer("a-long-random-token-0123456789"))
///     .build()
///     .unwrap();
/// let router = agentweave_server::app(state);
/// # let _ = router;
/// ```
pub struct ServerBuilder {
    flows: Vec<(String, FlowSource)>,
    store: Arc<dyn CheckpointStore>,
    threads: Arc<dyn ThreadStore>,
    journal: Arc<dyn JournalStore>,
    durability: Durability,
    runner: Box<dyn Fn(FlowAgent) -> RunnerBuilder + Send + Sync>,
    /// Puts the server's store under a runner the caller built.
    attach_stores: Box<dyn Fn(RunnerBuilder) -> RunnerBuilder + Send + Sync>,
    configure: Option<Box<RunnerFn>>,
    routing: TurnRouting,
    auth: Option<Auth>,
    tenant: Option<Box<TenantFn>>,
    limits: Limits,
    cors_origins: Vec<HeaderValue>,
    streaming: bool,
    approvals: BTreeMap<String, Approvals>,
    webhook_secret: Option<Vec<u8>>,
    outbound: agentweave_runtime::outbound::OutboundPolicy,
    queue: Option<crate::queue::QueueSettings>,
    memory: Option<agentweave_runtime::memory::Memory>,
    spending: Option<agentweave_runtime::SpendingBudgets>,
    #[cfg(feature = "temporal")]
    temporal: Option<crate::temporal::TemporalExecutor>,
}

impl fmt::Debug for ServerBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerBuilder")
            .field(
                "flows",
                &self.flows.iter().map(|f| &f.0).collect::<Vec<_>>(),
            )
            .field("auth", &self.auth)
            .finish_non_exhaustive()
    }
}

impl ServerBuilder {
    /// A builder over `store` (checkpoints and threads: [`InMemoryStore`](agentweave_runtime::InMemoryStore),
    /// [`FileStore`](agentweave_runtime::FileStore), `SqliteStore`, `PostgresStore` (with the
    /// `postgres` feature, for several server processes on several machines), or a store of
    /// your own).
    ///
    /// Turns are journaled in the store by default ([`Durability::Sync`]; see
    /// [`durability`](Self::durability)): a turn whose process died is finished by the server
    /// when it starts again, and a request sent again with its `Idempotency-Key` gets that
    /// turn instead of a second one.
    pub fn new<S: ThreadStore + CheckpointStore + JournalStore + Clone>(store: S) -> Self {
        let shared = store.clone();
        let attached = store.clone();
        ServerBuilder {
            flows: Vec::new(),
            store: Arc::new(store.clone()),
            threads: Arc::new(store.clone()),
            journal: Arc::new(store),
            durability: Durability::Sync,
            runner: Box::new(move |agent| {
                Runner::builder(agent)
                    .stores(shared.clone())
                    .journal_store(shared.clone())
            }),
            attach_stores: Box::new(move |runner| {
                runner
                    .stores(attached.clone())
                    .journal_store(attached.clone())
            }),
            configure: None,
            routing: TurnRouting::default(),
            auth: None,
            tenant: None,
            limits: Limits::default(),
            cors_origins: Vec::new(),
            streaming: true,
            approvals: BTreeMap::new(),
            webhook_secret: None,
            outbound: agentweave_runtime::outbound::OutboundPolicy::default(),
            queue: None,
            memory: None,
            spending: None,
            #[cfg(feature = "temporal")]
            temporal: None,
        }
    }

    /// Serves the tree `agent` heads as `name` (1 to 24 characters of `A-Z a-z 0-9 _ -`).
    pub fn flow(mut self, name: impl Into<String>, agent: impl Into<FlowAgent>) -> Self {
        self.flows
            .push((name.into(), FlowSource::Agent(agent.into())));
        self
    }

    /// Serves `runner` (its tree, with everything configured on it: middleware, checkpoint
    /// key, limits, lease, run options, streaming, turn routing) as `name`. Its stores are set
    /// to the server's, which the endpoints read; the builder's
    /// [`streaming`](Self::streaming) and [`turn_routing`](Self::turn_routing) do not apply to
    /// it (set them on the runner).
    ///
    /// ```
    /// use agentweave_runtime::{FlowAgent, FnAgent, InMemoryStore, Runner, RunLimits};
    /// use agentweave_server::{AppState, Auth};
    ///
    /// let bot = FnAgent::new("bot", |cx, _| async move {
    ///     cx.say("hello");
    ///     Ok(())
    /// });
    /// let runner = Runner::builder(FlowAgent::new(bot))
    ///     .checkpoint_key(b"a signing key of the deployment".to_vec())
    ///     .limits(RunLimits::default())
    ///     .streaming(true);
    /// let state = AppState::builder(InMemoryStore::new())
    ///     .flow_runner("bot", runner)
    ///     .auth(Auth::bearer("a-long-random-token-0123456789"))
    ///     .build()
    ///     .unwrap();
    /// # let _ = state;
    /// ```
    pub fn flow_runner(mut self, name: impl Into<String>, runner: RunnerBuilder) -> Self {
        self.flows
            .push((name.into(), FlowSource::Runner(Box::new(runner))));
        self
    }

    /// Configures the runner of every flow added with [`flow`](Self::flow): `f` gets the
    /// flow's name and the runner the server made (over the server's store, with the
    /// builder's streaming and turn routing) and returns the runner to serve, e.g. with
    /// middleware, a checkpoint key, limits, a lease or run options. Keep its stores: the
    /// endpoints read the server's.
    pub fn runners(
        mut self,
        f: impl Fn(&str, RunnerBuilder) -> RunnerBuilder + Send + Sync + 'static,
    ) -> Self {
        self.configure = Some(Box::new(f));
        self
    }

    /// How callers authenticate (required, or [`dev_mode`](Self::dev_mode)).
    pub fn auth(mut self, auth: Auth) -> Self {
        self.auth = Some(auth);
        self
    }

    /// No authentication, for development: [`serve`](crate::serve) then listens on loopback
    /// addresses only, and the API answers loopback peers only.
    pub fn dev_mode(self) -> Self {
        self.auth(Auth::DevModeLoopbackOnly)
    }

    /// Names each request's tenant; threads of one tenant are invisible to every other. A
    /// request the function answers `None` for is refused (403). Tenant names are 1 to 32
    /// characters of `A-Z a-z 0-9 _ -`.
    pub fn tenant(mut self, f: impl Fn(&Parts) -> Option<String> + Send + Sync + 'static) -> Self {
        self.tenant = Some(Box::new(f));
        self
    }

    /// The limits (body, event, message sizes).
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Lets browsers on these origins call the API (CORS). None by default: only the console
    /// served by this server (same origin) can.
    pub fn cors_origins(mut self, origins: impl IntoIterator<Item = HeaderValue>) -> Self {
        self.cors_origins = origins.into_iter().collect();
        self
    }

    /// Where each turn of a thread starts (default: [`TurnRouting::LastAgent`], the agent that
    /// answered the previous turn).
    pub fn turn_routing(mut self, routing: TurnRouting) -> Self {
        self.routing = routing;
        self
    }

    /// Whether agents stream their answers (on by default, so the console shows them as they
    /// come).
    pub fn streaming(mut self, streaming: bool) -> Self {
        self.streaming = streaming;
        self
    }

    /// How much of each turn of the flows added with [`flow`](Self::flow) is journaled in the
    /// store before it ends (the modes: [`Durability`]). Default [`Durability::Sync`], the
    /// mode the guide recommends on every store for tools that cost money or are not
    /// idempotent (a step is stored before the event reporting it reaches the client, and a
    /// tool call starts once the reply that asked for it is stored), so that a turn whose
    /// process died is finished by the server when it starts again
    /// ([`recover_dead_turns`](crate::recover_dead_turns)), exactly as it would have ended,
    /// with no paid step run twice. [`Durability::Async`] trades the tail of steps still
    /// queued in the process for latency; [`Durability::Exit`] turns journaling off (a turn
    /// whose process died is then lost, and sent again it runs again).
    ///
    /// A flow on [`temporal`](Self::temporal) is journaled `Async` where this says `Sync`: its
    /// steps are in the workflow's history before they reach this process and its paid calls
    /// run there, once, so `Sync` would only hold each streamed reply until it ends.
    ///
    /// A runner given with [`flow_runner`](Self::flow_runner) keeps the mode it was built
    /// with (the server gives it the journal store); [`runners`](Self::runners) may change
    /// the mode per flow.
    pub fn durability(mut self, mode: Durability) -> Self {
        self.durability = mode;
        self
    }

    /// Who may answer the interrupts of the flow served as `flow` (default
    /// [`Approvals::new`]: the `approve` scope).
    pub fn approvals(mut self, flow: impl Into<String>, approvals: Approvals) -> Self {
        self.approvals.insert(flow.into(), approvals);
        self
    }

    /// Lets runs name a webhook, signed with `secret` (HMAC-SHA256; see the `webhooks`
    /// section of the runs documentation). Without it, a run that names one is refused.
    pub fn webhook_secret(mut self, secret: impl Into<Vec<u8>>) -> Self {
        self.webhook_secret = Some(secret.into());
        self
    }

    /// What webhooks and A2A push notifications may reach (default
    /// [`OutboundPolicy::default`](agentweave_runtime::outbound::OutboundPolicy::default): strict,
    /// no loopback, private, link-local, multicast or unspecified address, after DNS, on every
    /// connection; see the guide's security chapter). An operator whose receivers live on an
    /// internal network lets them through here:
    ///
    /// ```
    /// use agentweave_runtime::outbound::OutboundPolicy;
    /// # let builder = agentweave_server::AppState::builder(agentweave_runtime::InMemoryStore::new());
    /// let builder = builder.outbound(
    ///     OutboundPolicy::default()
    ///         .allow_host("hooks.internal")
    ///         .allow_net("10.20.0.0/16")
    ///         .unwrap(),
    /// );
    /// ```
    pub fn outbound(mut self, policy: agentweave_runtime::outbound::OutboundPolicy) -> Self {
        self.outbound = policy;
        self
    }

    /// Serves `memory` (long-term memory, the same the flows' agents use) under the principals:
    /// the `/v1/memory/...` routes and the Agent Protocol's `/v1/store/...` routes (see the
    /// `memory` module). Without it those routes answer 404.
    pub fn memory(mut self, memory: agentweave_runtime::memory::Memory) -> Self {
        self.memory = Some(memory);
        self
    }

    /// Budgets per thread and per tenant per UTC day or month, shared by every process on the
    /// same store, and the usage report `GET /v1/usage` reads (see
    /// [`SpendingBudgets`](agentweave_runtime::SpendingBudgets)): every flow's runner gets them,
    /// with the flow's name and the principal's tenant (a thread's tenant is the one its
    /// caller had). Give every process the same store (the run queue's: `SqliteRunQueue`,
    /// `PostgresRunQueue`). Without it (the default) nothing is counted and `/v1/usage`
    /// answers 404.
    ///
    /// The usage report, `GET /v1/usage` (scope `read`), has one row per tenant, UTC day,
    /// flow, agent and model, each with `tenant`, `day`, `flow`, `agent`, `model`,
    /// `input_tokens`, `output_tokens`, `total_tokens`, `cost_usd` (when the price table has
    /// the model) and `model_calls`; `total` counts the rows the filter selects.
    ///
    /// | parameter | means |
    /// | --- | --- |
    /// | `from`, `to` | the first and last UTC day, `YYYY-MM-DD`, both included |
    /// | `flow`, `agent` | only this served flow's, only this agent's |
    /// | `tenant` | for an `admin` principal, one tenant's (without it, every tenant's); another principal may name only its own |
    /// | `limit`, `offset` | the page (at most 100 rows; `next_offset` while more follow) |
    ///
    /// A day that is not a date, `from` after `to`, or an unknown parameter is a 400 saying
    /// what to write. A thread's view (`GET /v1/flows/{flow}/threads/{thread}`) has its `spent`
    /// over all its turns, and each model call's chat span its cost
    /// (`agentflow.usage.cost_usd`) when a price of its model is known.
    pub fn spending(mut self, budgets: agentweave_runtime::SpendingBudgets) -> Self {
        self.spending = Some(budgets);
        self
    }

    /// Runs background runs from `queue` (see "The run queue" in the crate's docs):
    /// `POST .../runs` without `stream` enqueues the run and answers its id at once, and every
    /// process serving this state runs [`QueueOptions::workers`](crate::QueueOptions) workers
    /// that claim queued runs ([`serve_until`](crate::serve_until) starts them; a process that
    /// serves no API runs them with [`run_workers`](crate::run_workers)). Give every process
    /// of one service the same queue (e.g. `PostgresRunQueue` on their PostgreSQL database)
    /// and the same flows. Without a queue (the default), background runs are tasks of the
    /// process that took the request.
    pub fn run_queue(self, queue: impl agentweave_runtime::store::RunQueue) -> Self {
        self.run_queue_with(queue, crate::queue::QueueOptions::default())
    }

    /// [`run_queue`](Self::run_queue) with options (workers, lease, poll, drain).
    pub fn run_queue_with(
        mut self,
        queue: impl agentweave_runtime::store::RunQueue,
        options: crate::queue::QueueOptions,
    ) -> Self {
        self.queue = Some(crate::queue::QueueSettings::new(Arc::new(queue), options));
        self
    }

    /// Runs every flow served from a tree ([`flow`](Self::flow)) on Temporal: each thread is a
    /// workflow on the workers of the executor's task queue, which hold the flows' trees under
    /// the names they are served by (`agentweave_temporal::worker_flows`); this process runs a
    /// [`TemporalAgent`](crate::temporal::TemporalAgent) in each tree's place, through the same
    /// runner, routes and protocols (see [`crate::temporal`]). The thread's records stay in the
    /// server's store. Without it (the default) turns run in the server's processes, and many
    /// processes on one PostgreSQL store share the work.
    ///
    /// With [`spending`](Self::spending), the model calls of a flow on Temporal are reserved
    /// in the same budgets by the workers' model activities, once per call however often an
    /// activity is retried, and a refusal ends the turn with the same `budget_exceeded` code:
    /// this process registers them on its own workers' flows
    /// (`agentweave_temporal::worker_flows`); a worker in another process calls
    /// [`worker_spending`](crate::temporal::worker_spending) with the same budgets and store.
    #[cfg(feature = "temporal")]
    pub fn temporal(mut self, executor: crate::temporal::TemporalExecutor) -> Self {
        self.temporal = Some(executor);
        self
    }

    /// The state, checked.
    pub fn build(mut self) -> Result<AppState, BuildError> {
        let auth = self.auth.ok_or(BuildError::NoAuth)?;
        let weak = |t: &String| t.len() < 16 || !t.bytes().all(|b| b.is_ascii_graphic());
        match &auth {
            Auth::Bearer(tokens) if tokens.is_empty() || tokens.iter().any(weak) => {
                return Err(BuildError::WeakToken)
            }
            Auth::Tokens(tokens) if tokens.is_empty() || tokens.iter().any(|(t, _)| weak(t)) => {
                return Err(BuildError::WeakToken)
            }
            Auth::Tokens(tokens) => {
                if let Some(t) = tokens
                    .iter()
                    .filter_map(|(_, p)| p.tenant_name())
                    .find(|t| !valid_tenant(t))
                {
                    return Err(BuildError::InvalidTenant(t.to_owned()));
                }
            }
            _ => {}
        }
        if self.flows.is_empty() {
            return Err(BuildError::NoFlows);
        }
        if let Some(name) = self
            .approvals
            .keys()
            .find(|n| !self.flows.iter().any(|(f, _)| f == *n))
        {
            return Err(BuildError::UnknownApprovalsFlow(name.clone()));
        }
        let mut flows = BTreeMap::new();
        for (name, source) in self.flows {
            if !crate::thread::valid_flow_name(&name) {
                return Err(BuildError::InvalidFlowName(name));
            }
            if flows.contains_key(&name) {
                return Err(BuildError::DuplicateFlow(name));
            }
            let approvals = self.approvals.remove(&name).unwrap_or_default();
            #[allow(unused_mut)]
            let mut tree = None;
            let runner = match source {
                FlowSource::Agent(agent) => {
                    #[cfg(feature = "temporal")]
                    let agent = match &self.temporal {
                        Some(executor) => {
                            // The model calls run in the workers' activities: the workers of
                            // this process reserve them in the same budgets (another worker
                            // process sets its own: `temporal::worker_spending`).
                            if let Some(budgets) = &self.spending {
                                crate::temporal::worker_spending(
                                    agentweave_temporal::worker_flows(),
                                    &name,
                                    budgets,
                                );
                            }
                            let root = FlowAgent::new(executor.agent(&name, agent.name()));
                            tree = Some(agent);
                            root
                        }
                        None => agent,
                    };
                    #[allow(unused_mut)]
                    let mut durability = self.durability;
                    #[cfg(feature = "temporal")]
                    if self.temporal.is_some() && durability == Durability::Sync {
                        // On Temporal every step is in the workflow's history before this
                        // process sees it, and a paid call runs in the workflow, once: `Sync`
                        // would buy nothing but hold each streamed reply until it ends.
                        durability = Durability::Async;
                    }
                    let runner = (self.runner)(agent)
                        .streaming(self.streaming)
                        .turn_routing(self.routing)
                        .durability(durability);
                    let runner = match &self.configure {
                        Some(f) => f(&name, runner),
                        None => runner,
                    }
                    .answer_rule(approvals.rule());
                    with_spending(runner, &name, self.spending.as_ref()).build()
                }
                FlowSource::Runner(runner) => with_spending(
                    (self.attach_stores)(*runner).answer_rule(approvals.rule()),
                    &name,
                    self.spending.as_ref(),
                )
                .build(),
            };
            flows.insert(
                name.clone(),
                ServedFlow {
                    name,
                    runner,
                    approvals,
                    tree,
                },
            );
        }
        let turns = Arc::new(Semaphore::new(self.limits.max_concurrent_turns));
        Ok(AppState(Arc::new(Inner {
            flows,
            store: self.store,
            threads: self.threads,
            journal: self.journal,
            auth,
            tenant: self.tenant,
            run_slots: Arc::new(crate::run_slots::RunSlots::new(turns, &self.limits)),
            limits: self.limits,
            cors_origins: self.cors_origins,
            webhook_secret: self.webhook_secret,
            outbound: self.outbound,
            queue: self.queue,
            memory: self.memory,
            spending: self.spending,
        })))
    }
}

/// `runner` with the server's spending budgets, if it has them (see [`flow_spending`]).
fn with_spending(
    runner: RunnerBuilder,
    flow: &str,
    spending: Option<&agentweave_runtime::SpendingBudgets>,
) -> RunnerBuilder {
    match spending {
        None => runner,
        Some(budgets) => runner.spending(flow_spending(flow, budgets)),
    }
}

/// The server's spending `budgets` as flow `flow`'s calls count in them: reported as flow
/// `flow`, each thread's tenant read from its store id (`FLOW.TENANT.THREAD`), which is also
/// the id of the thread's workflow on Temporal.
pub(crate) fn flow_spending(
    flow: &str,
    budgets: &agentweave_runtime::SpendingBudgets,
) -> agentweave_runtime::SpendingBudgets {
    budgets
        .clone()
        .flow(flow)
        .tenant_of(|thread| crate::thread::tenant_of_store_id(thread).map(str::to_owned))
}
