//! The agent traits and what an agent receives when it runs.

use std::fmt;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll};

use futures::Stream;

use crate::error::FlowError;
use crate::event::{AgentError, AgentEvent};
use crate::flow::FlowAgent;
use crate::input::Messages;
use crate::limits::{LimitReached, RunLimit, RunLimits};
use crate::llm::middleware::Middlewares;
use crate::llm::options::{AgentRunOptions, RunOptions};
use crate::message::MessageRef;
use crate::resume::ResumeInfo;
use crate::run_path::RunPath;
use crate::session::{Session, SessionEvent};
use crate::thread_history::ThreadHistory;

/// The input an agent runs on.
#[derive(Debug, Clone, Default)]
pub struct AgentInput {
    /// The conversation as this agent should see it (after its context policy ran); shared,
    /// not copied (it derefs to `[MessageRef]`).
    pub messages: Messages,
    /// Whether the caller asked for streamed output.
    pub streaming: bool,
}

impl AgentInput {
    /// Input made of the given messages, not streaming.
    pub fn new(messages: impl IntoIterator<Item = MessageRef>) -> Self {
        AgentInput {
            messages: messages.into_iter().collect(),
            streaming: false,
        }
    }
}

/// A stream of [`AgentEvent`]s: what running an agent produces.
///
/// Dropping it cancels the run at its next await point; nothing keeps running in the background.
pub struct EventStream {
    inner: Pin<Box<dyn Stream<Item = AgentEvent> + Send>>,
}

impl EventStream {
    /// Wraps any stream of events.
    pub fn new(stream: impl Stream<Item = AgentEvent> + Send + 'static) -> Self {
        EventStream {
            inner: Box::pin(stream),
        }
    }

    /// A stream that ends at once.
    pub fn empty() -> Self {
        Self::new(futures::stream::empty())
    }

    /// A stream of the given events, in order.
    pub fn from_events(events: impl IntoIterator<Item = AgentEvent>) -> Self {
        Self::new(futures::stream::iter(
            events.into_iter().collect::<Vec<_>>(),
        ))
    }
}

impl Stream for EventStream {
    type Item = AgentEvent;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Option<AgentEvent>> {
        self.inner.as_mut().poll_next(cx)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.inner.size_hint()
    }
}

impl fmt::Debug for EventStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EventStream").finish_non_exhaustive()
    }
}

/// Name and description of an agent, as hooks and tools see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentInfo {
    /// The agent's unique name in its tree.
    pub name: Arc<str>,
    /// What the agent is for (shown to models choosing a transfer target).
    pub description: Arc<str>,
}

/// Something that runs on an input and streams events.
///
/// Implement it for agents with their own control flow; most agents are written with
/// `#[agent]` (from the `agentflow` facade) or [`FnAgent`](crate::FnAgent) instead.
/// The event stream must own what it needs (it is `'static`): take `self: Arc<Self>` into it.
///
/// ```
/// use std::sync::Arc;
/// use flow_runtime::{Agent, AgentEvent, AgentInput, EventStream, Message, RunContext};
///
/// struct Echo;
/// impl Agent for Echo {
///     fn name(&self) -> &str { "echo" }
///     fn run(self: Arc<Self>, _cx: RunContext, input: AgentInput) -> EventStream {
///         let last = input.messages.last().map(|m| m.content.clone()).unwrap_or_default();
///         EventStream::from_events([AgentEvent::message(Message::assistant(last))])
///     }
/// }
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an agent: it does not implement `Agent`",
    label = "not an agent",
    note = "implement `Agent`, or use `#[agent]`: on an async fn, or on a struct and on its impl \
            block holding `async fn run(&self, cx: &AgentContext, input: AgentInput)`"
)]
pub trait Agent: Send + Sync + 'static {
    /// The agent's name: unique within a tree, used for transfers and run paths.
    fn name(&self) -> &str;

    /// What the agent does (the doc comment, for `#[agent]`).
    fn description(&self) -> &str {
        ""
    }

    /// Runs the agent. `cx.run_path()` is this agent's own path in the run.
    fn run(self: Arc<Self>, cx: RunContext, input: AgentInput) -> EventStream;

    /// Resumes the agent after an interrupt. `info` says whether this agent raised the
    /// interrupt (with its saved state and the caller's resume data) or, for a wrapper, which
    /// sub-agents hold pending interrupts. `input` is built as for [`run`](Agent::run), from
    /// the restored session.
    ///
    /// The default reports [`AgentError::NotResumable`]: override it for agents that interrupt.
    fn resume(self: Arc<Self>, cx: RunContext, input: AgentInput, info: ResumeInfo) -> EventStream {
        let _ = (input, info);
        let error = AgentError::NotResumable {
            agent: cx.agent_name().into(),
        };
        EventStream::from_events([AgentEvent::error(error)])
    }

    /// Whether this agent runs its sub-agents itself, as the workflow agents
    /// ([`Sequential`](crate::Sequential), [`Parallel`](crate::Parallel),
    /// [`Loop`](crate::Loop)) do. [`set_sub_agents`](crate::set_sub_agents) then bars each of
    /// its sub-agents from transferring to it (as
    /// [`FlowAgent::disallow_transfer_to_parent`] does): a sub-agent handing control back up
    /// would run the workflow again from its start. Wrappers delegate it to the agent they wrap.
    fn runs_its_sub_agents(&self) -> bool {
        false
    }

    /// Whether this agent is a [`FlowAgent`] (a whole tree used as one node's agent).
    #[doc(hidden)]
    fn as_flow(&self) -> Option<&FlowAgent> {
        None
    }

    /// The agent's tree hooks, if it wants to hear about its place in a tree.
    fn on_sub_agents(&self) -> Option<&dyn OnSubAgents> {
        None
    }
}

/// Hooks an agent can implement to learn about its place in a tree as it is built
/// (see [`set_sub_agents`](crate::set_sub_agents)). Any error aborts the construction.
pub trait OnSubAgents: Send + Sync {
    /// This agent was given sub-agents.
    fn on_set_sub_agents(&self, sub_agents: &[AgentInfo]) -> Result<(), FlowError> {
        let _ = sub_agents;
        Ok(())
    }

    /// This agent was made a sub-agent of `parent`.
    fn on_set_as_sub_agent(&self, parent: &AgentInfo) -> Result<(), FlowError> {
        let _ = parent;
        Ok(())
    }

    /// This agent was barred from transferring to its parent.
    fn on_disallow_transfer_to_parent(&self) -> Result<(), FlowError> {
        Ok(())
    }
}

/// What an agent knows about the run it is part of. Cheap to clone.
#[derive(Clone)]
pub struct RunContext {
    shared: Arc<RunShared>,
    run_path: RunPath,
    agent_name: Arc<str>,
    node: Option<FlowAgent>,
    /// Recorded events under these run paths are not part of this context's history: the
    /// paths of the sibling lanes of the parallel lane(s) this context runs in.
    hidden: Arc<[RunPath]>,
}

struct RunShared {
    session: Arc<Session>,
    root_input: Arc<[MessageRef]>,
    streaming: bool,
    limits: RunLimits,
    /// Transfers made so far in this run.
    transfers: AtomicUsize,
    /// The runner's middleware, for every agent of the run.
    middleware: Middlewares,
    options: Arc<RunOptions>,
    /// The idempotency scope: drawn when first asked for (most runs never call a tool that
    /// reads it), or given by the caller.
    scope: std::sync::OnceLock<Arc<str>>,
    /// The earlier turns, when the run is a turn of a thread.
    thread: Option<Arc<ThreadHistory>>,
}

/// The empty list of hidden run paths, shared (a new run allocates nothing for it).
fn no_hidden_paths() -> Arc<[RunPath]> {
    static NONE: std::sync::OnceLock<Arc<[RunPath]>> = std::sync::OnceLock::new();
    Arc::clone(NONE.get_or_init(|| Arc::from([])))
}

impl RunShared {
    /// The idempotency scope, drawn at random on first use.
    fn scope(&self) -> &Arc<str> {
        self.scope
            .get_or_init(|| crate::store::unique_token().into())
    }
}

impl Clone for RunShared {
    /// A copy for a context being set up (limits, options, scope, thread): the transfers
    /// counted so far are carried over, not shared.
    fn clone(&self) -> Self {
        RunShared {
            session: Arc::clone(&self.session),
            root_input: Arc::clone(&self.root_input),
            streaming: self.streaming,
            middleware: self.middleware.clone(),
            limits: self.limits,
            transfers: AtomicUsize::new(self.transfers.load(Ordering::Relaxed)),
            options: Arc::clone(&self.options),
            // A copy has the same scope: drawn now if it was not yet.
            scope: std::sync::OnceLock::from(Arc::clone(self.scope())),
            thread: self.thread.clone(),
        }
    }
}

impl RunContext {
    /// The context of a new run: a session, the caller's messages and the streaming choice.
    /// The agent it is given to runs at the root path `[agent_name]`.
    pub fn new_run(
        session: Arc<Session>,
        root_input: impl IntoIterator<Item = MessageRef>,
        streaming: bool,
        agent_name: impl Into<Arc<str>>,
    ) -> Self {
        let agent_name = agent_name.into();
        RunContext {
            shared: Arc::new(RunShared {
                session,
                root_input: root_input.into_iter().collect(),
                streaming,
                limits: RunLimits::default(),
                transfers: AtomicUsize::new(0),
                middleware: Middlewares::default(),
                options: RunOptions::shared_default(),
                scope: std::sync::OnceLock::new(),
                thread: None,
            }),
            run_path: RunPath::root(Arc::clone(&agent_name)),
            agent_name,
            node: None,
            hidden: no_hidden_paths(),
        }
    }

    /// This (new) run with the given limits. Set them before the run starts: contexts already
    /// derived from this one keep the limits they had.
    pub fn with_limits(mut self, limits: RunLimits) -> Self {
        match Arc::get_mut(&mut self.shared) {
            Some(shared) => shared.limits = limits,
            None => {
                let mut shared = RunShared::clone(&self.shared);
                shared.limits = limits;
                self.shared = Arc::new(shared);
            }
        }
        self
    }

    /// The run's limits.
    pub fn limits(&self) -> &RunLimits {
        &self.shared.limits
    }

    /// Counts one transfer of this run, asked for by `agent`; an error once the run's
    /// [`max_transfers`](RunLimits::max_transfers) is passed.
    pub(crate) fn count_transfer(&self, agent: &Arc<str>) -> Result<(), LimitReached> {
        let max = self.shared.limits.max_transfers;
        let made = self.shared.transfers.fetch_add(1, Ordering::Relaxed) + 1;
        if made > max {
            return Err(LimitReached {
                limit: RunLimit::Transfers,
                max,
                agent: Arc::clone(agent),
            });
        }
        Ok(())
    }

    /// Records `event` of `agent` in the session (giving the record), or, recording nothing,
    /// the [`RunLimit::Events`] error if the run has recorded its
    /// [`max_events`](RunLimits::max_events) already.
    pub(crate) fn record(
        &self,
        event: &AgentEvent,
        agent: &Arc<str>,
    ) -> Result<Arc<crate::session::SessionEvent>, LimitReached> {
        let max = self.shared.limits.max_events;
        self.shared
            .session
            .record_within(event, max)
            .ok_or_else(|| LimitReached {
                limit: RunLimit::Events,
                max,
                agent: Arc::clone(agent),
            })
    }

    /// This run's context with `options` (see [`RunOptions`]): every context derived from it
    /// shares them.
    pub fn with_options(mut self, options: Arc<RunOptions>) -> Self {
        match Arc::get_mut(&mut self.shared) {
            Some(shared) => shared.options = options,
            None => {
                let mut shared = RunShared::clone(&self.shared);
                shared.options = options;
                self.shared = Arc::new(shared);
            }
        }
        self
    }

    /// The run's options, for every agent (see [`RunOptions`]).
    pub fn run_options(&self) -> &Arc<RunOptions> {
        &self.shared.options
    }

    /// The run's options addressed to the agent running with this context, if any.
    pub fn agent_options(&self) -> Option<&AgentRunOptions> {
        if self.shared.options.is_empty() {
            // Most runs have none: skip hashing the name.
            return None;
        }
        self.shared.options.for_agent(&self.agent_name)
    }

    /// This context (and every one derived from it) with the idempotency scope `scope`: the
    /// part of each tool call's [idempotency key](crate::ToolContext::idempotency_key) that
    /// names the run. A new run gets a random scope; the [`Runner`](crate::Runner) gives a
    /// resumed run its checkpoint's ([`Checkpoint::idempotency_scope`](crate::Checkpoint::idempotency_scope)),
    /// so every resume of the same checkpoint gives its calls the same keys.
    pub fn with_idempotency_scope(mut self, scope: impl Into<Arc<str>>) -> Self {
        let mut shared = RunShared::clone(&self.shared);
        shared.scope = std::sync::OnceLock::from(scope.into());
        self.shared = Arc::new(shared);
        self
    }

    /// The run's idempotency scope (see [`with_idempotency_scope`](RunContext::with_idempotency_scope)).
    pub fn idempotency_scope(&self) -> &str {
        self.shared.scope()
    }

    /// The context for running `agent_name` at `run_path` in the same run (and in the same
    /// parallel lane, if this context is in one).
    pub fn at(&self, agent_name: impl Into<Arc<str>>, run_path: RunPath) -> Self {
        RunContext {
            shared: Arc::clone(&self.shared),
            run_path,
            agent_name: agent_name.into(),
            node: None,
            hidden: Arc::clone(&self.hidden),
        }
    }

    /// This context, with the recorded events under `paths` left out of its history (and of
    /// the history of every context derived from it). A [`Parallel`](crate::Parallel) runs
    /// each lane with its sibling lanes' paths hidden, so no lane sees what another lane said
    /// while they run; what runs after the parallel sees every lane.
    ///
    /// ```
    /// use flow_runtime::{RunContext, RunPath, Session};
    /// let cx = RunContext::new_run(Session::new(), [], false, "p");
    /// let lane_a = RunPath::root("p").child("a");
    /// let lane_b = cx.at("b", RunPath::root("p").child("b")).hiding([lane_a]);
    /// assert_eq!(lane_b.hidden_paths().len(), 1);
    /// ```
    pub fn hiding(mut self, paths: impl IntoIterator<Item = RunPath>) -> Self {
        let mut hidden: Vec<RunPath> = self.hidden.to_vec();
        hidden.extend(paths);
        self.hidden = hidden.into();
        self
    }

    /// The run paths whose events this context does not see (see [`hiding`](RunContext::hiding)).
    pub fn hidden_paths(&self) -> &[RunPath] {
        &self.hidden
    }

    /// The session's recorded events this context may see, in order: all of them, except
    /// those under a [hidden](RunContext::hiding) path. Agents' inputs are built from these.
    pub fn visible_events(&self) -> Vec<Arc<SessionEvent>> {
        let mut events = self.shared.session.events();
        if !self.hidden.is_empty() {
            events.retain(|e| !self.hidden.iter().any(|h| e.run_path().starts_with(h)));
        }
        events
    }

    /// The context for running a child `agent_name` one step below this agent.
    pub fn child(&self, agent_name: impl Into<Arc<str>>) -> Self {
        let agent_name = agent_name.into();
        let run_path = self.run_path.child(Arc::clone(&agent_name));
        self.at(agent_name, run_path)
    }

    /// This context (and every context derived from it) with the run's middleware set to
    /// `middleware` (see [`Runner::middleware`](crate::Runner::middleware)).
    pub fn with_run_middleware(mut self, middleware: Middlewares) -> Self {
        match Arc::get_mut(&mut self.shared) {
            Some(shared) => shared.middleware = middleware,
            None => {
                let mut shared = RunShared::clone(&self.shared);
                shared.middleware = middleware;
                self.shared = Arc::new(shared);
            }
        }
        self
    }

    /// The run's middleware (the [`Runner`](crate::Runner)'s): it runs around every agent of
    /// the run, and around the model and tool calls of its LLM agents.
    pub fn run_middleware(&self) -> &Middlewares {
        &self.shared.middleware
    }

    /// This run, as a turn of a thread whose earlier turns `thread` reads. Call it on a new
    /// run's context, before it is cloned.
    pub(crate) fn with_thread(mut self, thread: Arc<ThreadHistory>) -> Self {
        match Arc::get_mut(&mut self.shared) {
            Some(shared) => shared.thread = Some(thread),
            None => {
                let mut shared = RunShared::clone(&self.shared);
                shared.thread = Some(thread);
                self.shared = Arc::new(shared);
            }
        }
        self
    }

    /// The earlier turns of the thread this run is a turn of.
    pub(crate) fn thread(&self) -> Option<&Arc<ThreadHistory>> {
        self.shared.thread.as_ref()
    }

    /// The number of the turn this run is in a thread (0 outside threads).
    pub fn turn(&self) -> u64 {
        self.shared.thread.as_ref().map_or(0, |t| t.turn())
    }

    pub(crate) fn with_node(mut self, node: FlowAgent) -> Self {
        self.node = Some(node);
        self
    }

    /// The run's session: recorded events and session values.
    pub fn session(&self) -> &Arc<Session> {
        &self.shared.session
    }

    /// This agent's run path.
    pub fn run_path(&self) -> &RunPath {
        &self.run_path
    }

    /// The name of the agent running with this context.
    pub fn agent_name(&self) -> &str {
        &self.agent_name
    }

    /// The messages the run started with (user input; never rewritten).
    pub fn root_input(&self) -> &[MessageRef] {
        &self.shared.root_input
    }

    /// Whether the caller asked for streamed output.
    pub fn streaming(&self) -> bool {
        self.shared.streaming
    }

    /// The tree node this agent runs as, when it runs inside a [`FlowAgent`] tree: its
    /// sub-agents (for workflow agents) and its legal transfer targets (for transfer tools).
    pub fn node(&self) -> Option<&FlowAgent> {
        self.node.as_ref()
    }
}

impl fmt::Debug for RunContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RunContext")
            .field("agent_name", &self.agent_name)
            .field("run_path", &self.run_path)
            .field("streaming", &self.shared.streaming)
            .finish_non_exhaustive()
    }
}
