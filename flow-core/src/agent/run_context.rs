//! [`RunContext`]: what an agent knows about the run it is part of.

use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use super::cancel::{CancelMode, CancelSignal, SafePoint};
use super::run_budgets::RunBudgets;
use super::{AgentRunOptions, FlowAgent, Middlewares, RunOptions};
use crate::event::AgentEvent;
use crate::history::ThreadHistory;
use crate::host::Host;
use crate::input::Messages;
use crate::limits::{LimitReached, RunLimit, RunLimits};
use crate::message::MessageRef;
use crate::run_path::RunPath;
use crate::session::{Session, SessionEvent};

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
    /// The map items this context runs in (see [`MapLane`]): their sibling items are hidden
    /// too. Empty outside a [`Map`](crate::workflow::Map).
    lanes: Arc<[MapLane]>,
}

/// One item of a [`Map`](crate::workflow::Map) a context runs in: the events of the map's
/// other items (run paths `PARENT/STEM[j]/...`, `j` not this item) are hidden from it, without
/// listing them one by one.
#[derive(Debug, Clone)]
pub(crate) struct MapLane {
    /// The path the map's item steps extend (the map's own path without its last step).
    pub(crate) parent: RunPath,
    /// The item steps' common start, `NAME[`.
    pub(crate) stem: Arc<str>,
    /// This item's step, `NAME[i]`.
    pub(crate) own: Arc<str>,
    /// The map's events sorted by item, shared by its items (see [`LaneIndex`]).
    pub(crate) index: Arc<Mutex<LaneIndex>>,
    /// The item's agent and the item itself, when that agent's node declares a payload: the
    /// agent reads the item as its transfer payload (see [`RunContext::transfer_payload`]).
    pub(crate) item: Option<(Arc<str>, serde_json::Value)>,
}

impl MapLane {
    /// Whether `path` lies in another item of this lane's map.
    fn hides(&self, path: &RunPath) -> bool {
        self.item_step(path).is_some_and(|step| step != &*self.own)
    }

    /// The item step `path` lies under (`NAME[j]`), if it lies in an item of this lane's map.
    fn item_step<'p>(&self, path: &'p RunPath) -> Option<&'p str> {
        let at = self.parent.len();
        if path.len() <= at {
            return None;
        }
        let step = path.iter().nth(at)?;
        (step.starts_with(&*self.stem) && path.prefix(at) == self.parent).then_some(step)
    }
}

/// One run of a map's items: the session's events sorted once by the item they belong to, so
/// an item's input is built from its own events and the events from before the map, not by
/// filtering every event of every item (which made a map of n items cost n² checks).
#[derive(Debug, Default)]
pub(crate) struct LaneIndex {
    /// Where the map's items started: the session's length then.
    from: usize,
    /// The events before `from` that the map's enclosing map items let through (computed
    /// once, by the first item to ask; each item then applies its own rule and hidden paths).
    before: Option<Vec<Arc<SessionEvent>>>,
    /// How far the session has been sorted.
    sorted: usize,
    /// The events from `from` on, by the item step they lie under, with their positions.
    by_item: std::collections::HashMap<Arc<str>, Vec<(usize, Arc<SessionEvent>)>>,
    /// The events from `from` on that lie under no item, with their positions.
    others: Vec<(usize, Arc<SessionEvent>)>,
}

impl LaneIndex {
    /// An index for a map whose items start when the session holds `from` events.
    pub(crate) fn starting_at(from: usize) -> Self {
        LaneIndex {
            from,
            sorted: from,
            ..LaneIndex::default()
        }
    }
}

/// The empty list of map lanes, shared.
#[inline]
fn no_lanes() -> Arc<[MapLane]> {
    static NONE: std::sync::OnceLock<Arc<[MapLane]>> = std::sync::OnceLock::new();
    Arc::clone(NONE.get_or_init(|| Arc::from([])))
}

struct RunShared {
    session: Arc<Session>,
    root_input: Messages,
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
    /// The conversation (thread) the run is a turn of, as its spans name it.
    conversation: Option<Arc<str>>,
    /// The run's cancel request (made when first asked for: a run nobody can cancel allocates
    /// none), and whether this run is nested in another (an agent tool's).
    cancel: (std::sync::OnceLock<CancelSignal>, bool),
    /// The messages sent to the run while it runs (`None`: nobody can steer it).
    steer: Option<super::SteerQueue>,
    /// What the run needs of the world: waits, the clock, fresh ids (`None`: the default,
    /// [`StdHost`](crate::host::StdHost); a run given none allocates and counts nothing for it).
    host: Option<Arc<dyn Host>>,
    /// The run's budgets and the start of its wall time (`None`: no budgets, nothing
    /// counted for them); shared with the runs nested in it.
    budgets: Option<Arc<RunBudgets>>,
    /// The budgets shared beyond the run, per thread and tenant (`None`: none, nothing asked);
    /// shared with the runs nested in it.
    spending: Option<Arc<dyn crate::spending::SpendingGate>>,
}

/// The empty list of hidden run paths, shared (a new run allocates nothing for it).
#[inline]
fn no_hidden_paths() -> Arc<[RunPath]> {
    static NONE: std::sync::OnceLock<Arc<[RunPath]>> = std::sync::OnceLock::new();
    Arc::clone(NONE.get_or_init(|| Arc::from([])))
}

impl RunShared {
    /// The idempotency scope, drawn at random on first use.
    fn scope(&self) -> &Arc<str> {
        self.scope.get_or_init(|| match &self.host {
            Some(host) => host.new_id().into(),
            None => crate::ids::unique_token().into(),
        })
    }
}

impl Clone for RunShared {
    /// A copy for a context being set up (limits, options, scope, thread): the transfers
    /// counted so far are carried over, not shared.
    fn clone(&self) -> Self {
        RunShared {
            session: Arc::clone(&self.session),
            root_input: self.root_input.clone(),
            streaming: self.streaming,
            middleware: self.middleware.clone(),
            limits: self.limits,
            transfers: AtomicUsize::new(self.transfers.load(Ordering::Relaxed)),
            options: Arc::clone(&self.options),
            // A copy has the same scope: drawn now if it was not yet.
            scope: std::sync::OnceLock::from(Arc::clone(self.scope())),
            thread: self.thread.clone(),
            conversation: self.conversation.clone(),
            // A copy shares the same request: made now if it was not yet.
            cancel: (
                std::sync::OnceLock::from(self.cancel.0.get_or_init(CancelSignal::new).clone()),
                self.cancel.1,
            ),
            host: self.host.clone(),
            budgets: self.budgets.clone(),
            spending: self.spending.clone(),
            steer: self.steer.clone(),
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
                conversation: None,
                cancel: (std::sync::OnceLock::new(), false),
                host: None,
                budgets: None,
                spending: None,
                steer: None,
            }),
            run_path: RunPath::root(Arc::clone(&agent_name)),
            agent_name,
            node: None,
            hidden: no_hidden_paths(),
            lanes: no_lanes(),
        }
    }

    /// This (new) run on `host`: its waits, clock and fresh ids (see [`crate::host`]). Set it
    /// before the run starts: contexts already derived from this one keep the host they had.
    /// A run given none uses [`StdHost`](crate::host::StdHost).
    #[inline]
    pub fn with_host(mut self, host: Arc<dyn Host>) -> Self {
        Arc::make_mut(&mut self.shared).host = Some(host);
        self
    }

    /// The run's host: its waits, clock and fresh ids.
    #[inline]
    pub fn host(&self) -> &dyn Host {
        match &self.shared.host {
            Some(host) => &**host,
            None => &crate::host::StdHost,
        }
    }

    /// The host this run was given, to give a nested run or a task that outlives this borrow
    /// (`None`: the default, [`StdHost`](crate::host::StdHost)).
    #[inline]
    pub fn shared_host(&self) -> Option<Arc<dyn Host>> {
        self.shared.host.clone()
    }

    /// This (new) run with the given limits. Set them before the run starts: contexts already
    /// derived from this one keep the limits they had.
    pub fn with_limits(mut self, limits: RunLimits) -> Self {
        Arc::make_mut(&mut self.shared).limits = limits;
        self
    }

    /// The run's limits.
    pub fn limits(&self) -> &RunLimits {
        &self.shared.limits
    }

    /// This (new) run with `budgets` (see [`crate::budget`]); an empty set of budgets is none.
    /// Set them before the run starts: contexts already derived from this one keep what they
    /// had.
    #[inline]
    pub fn with_budgets(self, budgets: Arc<crate::budget::Budgets>) -> Self {
        let shared =
            (!budgets.is_empty()).then(|| RunBudgets::start(budgets, &self.shared.session));
        self.with_run_budgets(shared)
    }

    #[inline]
    fn with_run_budgets(mut self, budgets: Option<Arc<RunBudgets>>) -> Self {
        Arc::make_mut(&mut self.shared).budgets = budgets;
        self
    }

    /// This (new) run, nested in `caller`'s (an agent tool's run), with its budgets: what it
    /// spends counts against them, and its wall time is the caller's.
    pub fn with_budgets_of(self, caller: &RunContext) -> Self {
        let run = match &caller.shared.budgets {
            None => self,
            Some(budgets) => self.with_run_budgets(Some(Arc::clone(budgets))),
        };
        match &caller.shared.spending {
            None => run,
            Some(gate) => run.with_spending(Arc::clone(gate)),
        }
    }

    /// This (new) run with `gate` checking and charging its model calls against the budgets
    /// shared beyond it, per thread and per tenant (see [`crate::spending`]). Set it before
    /// the run starts.
    pub fn with_spending(mut self, gate: Arc<dyn crate::spending::SpendingGate>) -> Self {
        Arc::make_mut(&mut self.shared).spending = Some(gate);
        self
    }

    /// The run's shared spending gate, if it has one.
    #[inline]
    pub fn spending(&self) -> Option<&Arc<dyn crate::spending::SpendingGate>> {
        self.shared.spending.as_ref()
    }

    /// The run's budgets, if it has any.
    pub fn budgets(&self) -> Option<&crate::budget::Budgets> {
        self.shared.budgets.as_deref().map(|b| &*b.budgets)
    }

    /// The run's budgets and the start of its wall time.
    pub(crate) fn run_budgets(&self) -> Option<&Arc<RunBudgets>> {
        self.shared.budgets.as_ref()
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
        Arc::make_mut(&mut self.shared).options = options;
        self
    }

    /// The run's options, for every agent (see [`RunOptions`]).
    pub fn run_options(&self) -> &Arc<RunOptions> {
        &self.shared.options
    }

    /// The run's front-end tools (see [`RunOptions::frontend_tools`](crate::RunOptions::frontend_tools)).
    pub fn frontend_tools(&self) -> &[crate::model::ToolDefinition] {
        self.shared.options.frontend_tool_definitions()
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
    /// names the run. A new run gets a random scope; the `Runner` gives a
    /// resumed run its checkpoint's (`Checkpoint::idempotency_scope`),
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
            lanes: Arc::clone(&self.lanes),
        }
    }

    /// This context, with the recorded events under `paths` left out of its history (and of
    /// the history of every context derived from it). A [`Parallel`](crate::Parallel) runs
    /// each lane with its sibling lanes' paths hidden, so no lane sees what another lane said
    /// while they run; what runs after the parallel sees every lane.
    ///
    /// ```
    /// use agentweave_runtime::{RunContext, RunPath, Session};
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

    /// This context, in the map item `lane` (its sibling items hidden from it and from every
    /// context derived from it).
    pub(crate) fn in_lane(mut self, lane: MapLane) -> Self {
        let mut lanes: Vec<MapLane> = self.lanes.to_vec();
        lanes.push(lane);
        self.lanes = lanes.into();
        self
    }

    /// The item of the innermost map item this agent is the agent of, if its node declares a
    /// payload (other agents inside the item see none).
    fn map_item(&self) -> Option<&serde_json::Value> {
        let lane = self.lanes.last()?;
        let (agent, item) = lane.item.as_ref()?;
        (**agent == *self.agent_name && self.run_path.len() == lane.parent.len() + 2)
            .then_some(item)
    }

    /// Whether `path` is the root of a map item: `PARENT/NAME[i]/AGENT` of the innermost
    /// map item this context runs in. A task finished there is the item's result.
    pub(crate) fn is_map_item_root(&self, path: &RunPath) -> bool {
        self.lanes.last().is_some_and(|lane| {
            path.len() == lane.parent.len() + 2 && lane.item_step(path) == Some(&*lane.own)
        })
    }

    /// Whether this context sees every recorded event (it runs in no parallel lane or map
    /// item): its inputs can then be built incrementally.
    pub(crate) fn sees_everything(&self) -> bool {
        self.hidden.is_empty() && self.lanes.is_empty()
    }

    /// The session's recorded events this context may see, in order: all of them, except
    /// those under a [hidden](RunContext::hiding) path. Agents' inputs are built from these.
    pub fn visible_events(&self) -> Vec<Arc<SessionEvent>> {
        if let Some((lane, outer)) = self.lanes.split_last() {
            return self.lane_events(lane, outer);
        }
        let mut events = self.shared.session.events();
        if !self.hidden.is_empty() {
            events.retain(|e| !self.hidden.iter().any(|h| e.run_path().starts_with(h)));
        }
        if !self.lanes.is_empty() {
            events.retain(|e| !self.lanes.iter().any(|l| l.hides(e.run_path())));
        }
        events
    }

    /// Whether an event at `path` is seen under the hidden paths and the map lanes `lanes`.
    fn sees(&self, path: &RunPath, lanes: &[MapLane]) -> bool {
        !self.hidden.iter().any(|h| path.starts_with(h)) && !lanes.iter().any(|l| l.hides(path))
    }

    /// [`visible_events`](Self::visible_events) in the map item `lane` (inside the map items
    /// `outer`): the events from before the map that the item may see, then, in order, its own
    /// events and those under no item of the map, read from the map's [`LaneIndex`].
    fn lane_events(&self, lane: &MapLane, outer: &[MapLane]) -> Vec<Arc<SessionEvent>> {
        let mut index = lane.index.lock().expect("map lane index");
        let index = &mut *index;
        if index.before.is_none() {
            let mut before = self.shared.session.events();
            before.truncate(index.from);
            before.retain(|e| !outer.iter().any(|l| l.hides(e.run_path())));
            index.before = Some(before);
        }
        let new = self.shared.session.events_since(index.sorted);
        let start = index.sorted;
        index.sorted += new.len();
        for (i, event) in new.into_iter().enumerate() {
            let at = start + i;
            match lane.item_step(event.run_path()) {
                Some(step) => match index.by_item.get_mut(step) {
                    Some(events) => events.push((at, event)),
                    None => {
                        index.by_item.insert(Arc::from(step), vec![(at, event)]);
                    }
                },
                None => index.others.push((at, event)),
            }
        }
        let before = index.before.as_deref().unwrap_or_default();
        let own = index
            .by_item
            .get(&lane.own)
            .map(Vec::as_slice)
            .unwrap_or_default();
        let mut out: Vec<Arc<SessionEvent>> =
            Vec::with_capacity(before.len() + own.len() + index.others.len());
        // The events from before the map: the item's own rule and this context's hidden paths
        // apply too (a resumed map's items ran before it).
        out.extend(
            before
                .iter()
                .filter(|e| self.sees(e.run_path(), std::slice::from_ref(lane)))
                .cloned(),
        );
        // Its own events and those under no item, merged in the session's order.
        let (mut a, mut b) = (own.iter().peekable(), index.others.iter().peekable());
        loop {
            let next = match (a.peek(), b.peek()) {
                (Some(x), Some(y)) => {
                    if x.0 < y.0 {
                        a.next()
                    } else {
                        b.next()
                    }
                }
                (Some(_), None) => a.next(),
                (None, Some(_)) => b.next(),
                (None, None) => break,
            };
            if let Some((_, event)) = next {
                if self.sees(event.run_path(), outer) {
                    out.push(Arc::clone(event));
                }
            }
        }
        out
    }

    /// The context for running a child `agent_name` one step below this agent.
    pub fn child(&self, agent_name: impl Into<Arc<str>>) -> Self {
        let agent_name = agent_name.into();
        let run_path = self.run_path.child(Arc::clone(&agent_name));
        self.at(agent_name, run_path)
    }

    /// This context (and every context derived from it) with the run's middleware set to
    /// `middleware` (see `RunnerBuilder::middleware`).
    pub fn with_run_middleware(mut self, middleware: Middlewares) -> Self {
        Arc::make_mut(&mut self.shared).middleware = middleware;
        self
    }

    /// The run's middleware (the `Runner`'s): it runs around every agent of
    /// the run, and around the model and tool calls of its LLM agents.
    pub fn run_middleware(&self) -> &Middlewares {
        &self.shared.middleware
    }

    /// This run, as a turn of a thread whose earlier turns `thread` reads. Call it on a new
    /// run's context, before it is cloned.
    #[doc(hidden)]
    pub fn with_thread(mut self, thread: Arc<ThreadHistory>) -> Self {
        Arc::make_mut(&mut self.shared).thread = Some(thread);
        self
    }

    /// This (new) run as a turn of the conversation `id` (a thread's id): its agent, model and
    /// tool spans carry it as `gen_ai.conversation.id` (see the telemetry of
    /// [`ChatModelAgent`](crate::ChatModelAgent)). The runner sets it on every turn of a
    /// thread; runs nested in this one (agent tools) keep it. Call it on a new run's context,
    /// before it is cloned.
    pub fn with_conversation_id(mut self, id: impl Into<Arc<str>>) -> Self {
        let id = Some(id.into());
        Arc::make_mut(&mut self.shared).conversation = id;
        self
    }

    /// The conversation this run is a turn of (see
    /// [`with_conversation_id`](Self::with_conversation_id)).
    pub fn conversation_id(&self) -> Option<&str> {
        self.shared.conversation.as_deref()
    }

    /// This (new) run with `signal` as its cancel request; `nested` for the run of an agent
    /// tool inside another run, which stops only for [recursive](CancelMode::recursive) modes.
    /// Call it on a new run's context, before it is cloned.
    pub fn with_cancel(mut self, signal: CancelSignal, nested: bool) -> Self {
        Arc::make_mut(&mut self.shared).cancel = (std::sync::OnceLock::from(signal), nested);
        self
    }

    /// This (new) run steered through `queue`: its LLM agents take the messages sent to it at
    /// their next safe point (see [`SteerQueue`](super::SteerQueue)). Call it on a new run's
    /// context, before it is cloned.
    pub fn with_steering(mut self, queue: super::SteerQueue) -> Self {
        Arc::make_mut(&mut self.shared).steer = Some(queue);
        self
    }

    /// The run's steering messages, if it can be steered.
    pub fn steering(&self) -> Option<&super::SteerQueue> {
        self.shared.steer.as_ref()
    }

    /// The run's cancel request (see [`CancelMode`]).
    pub fn cancel_signal(&self) -> &CancelSignal {
        self.shared.cancel.0.get_or_init(CancelSignal::new)
    }

    /// Whether an agent of this run at `point` should stop for a cancel; the mode if so.
    pub fn stops_at(&self, point: SafePoint) -> Option<CancelMode> {
        // No signal yet: nobody holds one to ask with.
        let signal = self.shared.cancel.0.get()?;
        signal.stops_at(point, self.shared.cancel.1)
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

    /// The payload the transfer that reached this agent in this run carried, if any: kept
    /// only for a node that declares one ([`FlowAgent::accepts`](crate::FlowAgent::accepts)),
    /// so an agent whose node declares none always gets `None`.
    ///
    /// A map item's agent whose node declares a payload gets its item here instead (see
    /// [`Map`](crate::workflow::Map)): `cx.payload::<Self>()` reads it typed.
    pub fn transfer_payload(&self) -> Option<serde_json::Value> {
        if let Some(item) = self.map_item() {
            return Some(item.clone());
        }
        self.session()
            .raw_value(&super::payload_key(self.agent_name()))
            .filter(|v| !v.is_null())
    }

    /// The result a delegated sub-agent (a task or single-turn node) returned to this agent
    /// in this run, if one did since this agent was last reached by a transfer: the parent of
    /// a task reads it when it runs again (see [`Delegation`](crate::Delegation)).
    pub fn task_result(&self) -> Option<super::TaskResult> {
        let raw = self
            .session()
            .raw_value(&super::result_key(self.agent_name()))?;
        serde_json::from_value(raw).ok()
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

    /// The run's input as [`Messages`], shared with the context (no copy): what the root
    /// agent of a new run is given.
    pub fn root_messages(&self) -> Messages {
        self.shared.root_input.clone()
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
