//! The tree as data: [`FlowAgent`] (a handle on one node of a tree of agents),
//! [`NodeOptions`], [`set_sub_agents`] and the flow's shape and fingerprint. Running a tree is
//! [`crate::flow`]'s.

use std::fmt;
use std::sync::Arc;

use super::{Agent, AgentInfo, Delegation, Middleware, Middlewares, Payload};
use crate::context_form::ContextForm;
use crate::error::FlowError;
use crate::event::AgentError;
use crate::history::{ContextBudget, ContextPolicy, HistoryRewriter};
use crate::ids::fingerprint_of;
use crate::message::{Message, MessageRef};

/// Per-node options of a tree.
#[derive(Debug, Clone, Default)]
pub struct NodeOptions {
    /// The agent may not transfer to its parent. Enforced at run time (a transfer to the parent
    /// becomes an error event), not only hidden from a model.
    pub disallow_transfer_to_parent: bool,
    /// Leave transfer messages (the transfer tool call and its result) out of this agent's input.
    pub skip_transfer_messages: bool,
    /// How the history is shaped into this agent's input.
    pub context: ContextPolicy,
    /// Middleware around this node's agent runs (and its model and tool calls, for an LLM
    /// agent), after the runner's and before the agent's own (see
    /// [`middleware`](crate::middleware)).
    pub middleware: Middlewares,
    /// How this node gives control back to its parent (see [`Delegation`]).
    pub delegation: Delegation,
    /// The payload this node receives with a transfer to it, if it declares one.
    pub payload: Option<Payload>,
    /// The token budget of the requests of this node's LLM agent (see [`ContextBudget`]); it
    /// takes the place of the agent's own.
    pub budget: Option<ContextBudget>,
}

#[derive(Clone)]
pub(crate) struct Node {
    pub(crate) agent: Arc<dyn Agent>,
    pub(crate) name: Arc<str>,
    pub(crate) description: Arc<str>,
    pub(crate) parent: Option<usize>,
    pub(crate) children: Vec<usize>,
    pub(crate) options: NodeOptions,
    /// Whether a sub-agent of this node gives control back to it (a `Task` or `SingleTurn`
    /// child), so a result may wait for it: decided when the tree is built (by
    /// [`set_sub_agents`] and [`FlowAgent::delegation`]), so a transfer to a node that gets no
    /// results does no work for them.
    pub(crate) gets_results: bool,
    /// The messages of a transfer to this agent (the same on every hop), made once.
    pub(crate) arrival: Arc<(MessageRef, MessageRef)>,
    /// The context forms of this agent's transfer messages to each of its neighbours, made
    /// on its first transfer.
    pub(crate) departures: Departures,
}

/// A transfer's two messages as other agents see them, for each neighbour a node can
/// transfer to (by index in the tree). A copy of the node (in a tree being joined to another)
/// starts empty: its neighbours may change.
#[derive(Default)]
pub(crate) struct Departures(std::sync::OnceLock<Box<[Departure]>>);

/// The context forms of the two messages of a transfer to the node `to`.
struct Departure {
    to: usize,
    forms: TransferForms,
}

/// The context forms of a transfer's call and of its result.
pub(crate) type TransferForms = (Arc<ContextForm>, Arc<ContextForm>);

impl Clone for Departures {
    fn clone(&self) -> Self {
        Departures::default()
    }
}

#[derive(Clone)]
pub(crate) struct Tree {
    pub(crate) nodes: Vec<Node>,
    /// What the whole flow is for ([`FlowAgent::flow_description`]).
    pub(crate) summary: Option<Arc<str>>,
}

impl Tree {
    /// Sets whether `node` gets results from its sub-agents (see [`Node::gets_results`]).
    fn note_results(&mut self, node: usize) {
        let returns = self.nodes[node]
            .children
            .iter()
            .any(|&c| self.nodes[c].options.delegation.returns());
        self.nodes[node].gets_results = returns;
    }
}

/// An agent placed in a tree: the agent itself, its sub-agents, its parent and its options.
///
/// A `FlowAgent` is a handle on an immutable tree shared by every run, so one configuration
/// serves any number of concurrent runs: all per-run state lives in the run's
/// [`Session`](crate::Session). [`set_sub_agents`] copies the trees it joins into a new one
/// (Eino's deep copy on wrap), so a tree you keep a handle on never changes under you.
///
/// Running a `FlowAgent` applies the orchestration rules: the agent's input is the run's input
/// plus the recorded history shaped by its [`ContextPolicy`]; its own events (run path equal to
/// its own, not interrupts) are recorded; when its stream ends, the last own action decides
/// what happens: a transfer runs the named sub-agent or the parent (unless barred) at the run
/// path extended by the target, anything else ends the run.
///
/// ```
/// use agentweave_runtime::{set_sub_agents, FlowAgent, FnAgent, Runner};
/// use futures::StreamExt;
/// # futures::executor::block_on(async {
/// let triage = FnAgent::new("triage", |cx, _| async move { cx.transfer("refund"); Ok(()) });
/// let refund = FnAgent::new("refund", |cx, _| async move { cx.say("Refunded."); Ok(()) });
/// let tree = set_sub_agents(FlowAgent::new(triage), [FlowAgent::new(refund)]).unwrap();
/// let paths: Vec<String> = Runner::new(tree)
///     .run("I want my money back")
///     .map(|e| e.run_path().to_string())
///     .collect()
///     .await;
/// assert_eq!(paths, ["triage", "triage", "triage/refund"]);
/// # });
/// ```
#[derive(Clone)]
pub struct FlowAgent {
    pub(crate) tree: Arc<Tree>,
    node: usize,
}

impl FlowAgent {
    /// A one-node tree holding `agent`.
    pub fn new(agent: impl Agent) -> Self {
        Self::from_arc(Arc::new(agent))
    }

    /// A one-node tree holding a shared agent.
    pub fn from_arc(agent: Arc<dyn Agent>) -> Self {
        let name: Arc<str> = agent.name().into();
        let description: Arc<str> = agent.description().into();
        let (call, result) = crate::transfer::transfer_messages(&name);
        FlowAgent {
            tree: Arc::new(Tree {
                nodes: vec![Node {
                    agent,
                    name,
                    description,
                    parent: None,
                    children: Vec::new(),
                    options: NodeOptions::default(),
                    gets_results: false,
                    arrival: Arc::new((Arc::new(call), Arc::new(result))),
                    departures: Departures::default(),
                }],
                summary: None,
            }),
            node: 0,
        }
    }

    pub(crate) fn this(&self) -> &Node {
        &self.tree.nodes[self.node]
    }

    pub(crate) fn at(&self, node: usize) -> FlowAgent {
        FlowAgent {
            tree: Arc::clone(&self.tree),
            node,
        }
    }

    /// Describes the whole flow: what a catalogue of flows, the server's flow list or an A2A
    /// agent card shows. `flow!` sets it from the flow's doc comment (its first paragraph).
    ///
    /// ```
    /// use agentweave_runtime::{FlowAgent, FnAgent};
    /// let desk = FlowAgent::new(FnAgent::new("triage", |_, _| async { Ok(()) }));
    /// assert_eq!(desk.flow_description(), "");
    /// let desk = desk.with_flow_description("The customer-service desk.");
    /// assert_eq!(desk.flow_description(), "The customer-service desk.");
    /// ```
    pub fn with_flow_description(mut self, description: impl Into<Arc<str>>) -> Self {
        Arc::make_mut(&mut self.tree).summary = Some(description.into());
        self
    }

    /// The flow's description: the one given with
    /// [`with_flow_description`](Self::with_flow_description) (by `flow!`: its doc comment),
    /// else this agent's own [`description`](Self::description).
    pub fn flow_description(&self) -> &str {
        match &self.tree.summary {
            Some(summary) => summary,
            None => self.description(),
        }
    }

    fn options_mut(&mut self) -> &mut NodeOptions {
        let node = self.node;
        &mut Arc::make_mut(&mut self.tree).nodes[node].options
    }

    /// Bars (or allows) transfers from this agent to its parent. Set it before the agent is
    /// given to [`set_sub_agents`] so its [`OnSubAgents`](crate::OnSubAgents) hook is called.
    pub fn disallow_transfer_to_parent(mut self, disallow: bool) -> Self {
        self.options_mut().disallow_transfer_to_parent = disallow;
        self
    }

    /// Leaves transfer messages out of this agent's input.
    pub fn skip_transfer_messages(mut self, skip: bool) -> Self {
        self.options_mut().skip_transfer_messages = skip;
        self
    }

    /// Sets how this node gives control back to its parent (see [`Delegation`]): a `Task`
    /// or `SingleTurn` node returns its result to its parent.
    pub fn delegation(mut self, mode: Delegation) -> Self {
        self.options_mut().delegation = mode;
        if let Some(parent) = self.this().parent {
            Arc::make_mut(&mut self.tree).note_results(parent);
        }
        self
    }

    /// Declares the payload this node receives with a transfer to it: a transfer's payload
    /// (`Context::transfer_with`, or the `payload` argument of an LLM's transfer tool, whose
    /// schema then offers `T`'s) reaches it through
    /// [`RunContext::transfer_payload`](crate::RunContext::transfer_payload); an LLM's payload
    /// that does not decode as `T` is answered as a tool error. A node that declares no payload
    /// is given none: a transfer to it does no payload work at all.
    pub fn accepts<T>(self) -> Self
    where
        T: serde::de::DeserializeOwned + serde::Serialize + schemars::JsonSchema + 'static,
    {
        self.payload(Some(Payload::of::<T>()))
    }

    /// Sets (or clears) the payload this node receives (see [`accepts`](FlowAgent::accepts)).
    pub fn payload(mut self, payload: Option<Payload>) -> Self {
        self.options_mut().payload = payload;
        self
    }

    /// Sets this agent's context policy.
    pub fn context(mut self, policy: ContextPolicy) -> Self {
        self.options_mut().context = policy;
        self
    }

    /// Keeps the requests of this node's [`ChatModelAgent`](crate::ChatModelAgent) within
    /// `budget`, in place of the agent's own (see [`ContextBudget`]; `flow!` writes it
    /// `context = compact(path::to::budget_fn)`).
    pub fn context_budget(mut self, budget: ContextBudget) -> Self {
        self.options_mut().budget = Some(budget);
        self
    }

    /// Adds middleware around this node's agent (see [`middleware`](crate::middleware)).
    pub fn middleware(mut self, middleware: impl Middleware) -> Self {
        let options = self.options_mut();
        options.middleware = options.middleware.with(Arc::new(middleware));
        self
    }

    /// Sets a custom history rewriter (shorthand for [`ContextPolicy::Custom`]).
    pub fn history_rewriter(self, rewriter: impl HistoryRewriter) -> Self {
        self.context(ContextPolicy::custom(rewriter))
    }

    /// This node's options.
    pub fn options(&self) -> &NodeOptions {
        &self.this().options
    }

    /// The agent's name.
    pub fn name(&self) -> &str {
        &self.this().name
    }

    /// The agent's name, shared: cloning it counts a reference instead of copying the text.
    pub fn shared_name(&self) -> Arc<str> {
        Arc::clone(&self.this().name)
    }

    /// The agent's description.
    pub fn description(&self) -> &str {
        &self.this().description
    }

    /// Name and description.
    pub fn info(&self) -> AgentInfo {
        let n = self.this();
        AgentInfo {
            name: Arc::clone(&n.name),
            description: Arc::clone(&n.description),
        }
    }

    /// The agent this node runs.
    pub fn agent(&self) -> &Arc<dyn Agent> {
        &self.this().agent
    }

    /// The sub-agents, in order.
    pub fn sub_agents(&self) -> Vec<FlowAgent> {
        self.this().children.iter().map(|&c| self.at(c)).collect()
    }

    /// The parent, if this agent is a sub-agent.
    pub fn parent(&self) -> Option<FlowAgent> {
        self.this().parent.map(|p| self.at(p))
    }

    /// The agents this one may transfer to: its sub-agents, then its parent unless barred.
    pub fn transfer_targets(&self) -> Vec<AgentInfo> {
        self.target_nodes().map(|i| self.at(i).info()).collect()
    }

    /// The payloads the agents this one may transfer to declare, by name.
    pub(crate) fn target_payloads(&self) -> Vec<(Arc<str>, Payload)> {
        self.target_nodes()
            .filter_map(|i| {
                let n = &self.tree.nodes[i];
                Some((Arc::clone(&n.name), n.options.payload.clone()?))
            })
            .collect()
    }

    /// Whether [`transfer_targets`](FlowAgent::transfer_targets) would be `targets` (without
    /// collecting them).
    pub(crate) fn has_transfer_targets(&self, targets: &[AgentInfo]) -> bool {
        let same = |a: &Arc<str>, b: &Arc<str>| Arc::ptr_eq(a, b) || a == b;
        let mut given = targets.iter();
        self.target_nodes().map(|i| &self.tree.nodes[i]).all(|n| {
            given
                .next()
                .is_some_and(|t| same(&t.name, &n.name) && same(&t.description, &n.description))
        }) && given.next().is_none()
    }

    /// The nodes next to this one: its sub-agents, then its parent (barred or not).
    fn neighbours(&self) -> impl Iterator<Item = usize> + '_ {
        let n = self.this();
        n.children.iter().copied().chain(n.parent)
    }

    /// The nodes this one may transfer to: its sub-agents, then its parent unless barred.
    fn target_nodes(&self) -> impl Iterator<Item = usize> + '_ {
        let n = self.this();
        let parent = n.parent.filter(|_| !n.options.disallow_transfer_to_parent);
        n.children.iter().copied().chain(parent)
    }

    /// The messages of a transfer from this agent to `target`, if `target` is one of its
    /// sub-agents or its parent, with their context forms: made when the tree was (the forms
    /// on the first transfer from this agent), shared by every hop.
    pub(crate) fn transfer_messages_to(
        &self,
        target: &str,
    ) -> Option<(Arc<str>, MessageRef, MessageRef, TransferForms)> {
        let to = self.neighbour(target)?;
        let forms = self.departure_forms(to)?;
        let t = &self.tree.nodes[to];
        let (call, result) = &*t.arrival;
        Some((
            Arc::clone(&t.name),
            Arc::clone(call),
            Arc::clone(result),
            forms,
        ))
    }

    /// The context forms of a transfer from this agent to `target`, if it is a neighbour (for
    /// a transfer whose messages a model made).
    pub(crate) fn transfer_forms_to(&self, target: &str) -> Option<TransferForms> {
        self.departure_forms(self.neighbour(target)?)
    }

    /// The neighbour named `target`.
    fn neighbour(&self, target: &str) -> Option<usize> {
        self.neighbours()
            .find(|&i| &*self.tree.nodes[i].name == target)
    }

    /// The context forms of a transfer from this agent whose call is like `call` (a model's
    /// transfer reply): the neighbour whose arrival call has the same arguments. Only found,
    /// not checked: a form made ahead is used only for a message that reads the same as the
    /// one it was made for, which the session checks when it records the event
    /// (`SessionEvent::from_event`).
    pub(crate) fn transfer_forms_like(&self, call: &Message) -> Option<TransferForms> {
        let [only] = call.tool_calls.as_slice() else {
            return None;
        };
        if only.name != crate::transfer::TRANSFER_TOOL_NAME {
            return None;
        }
        let to = self.neighbours().find(|&i| {
            let arrival = &self.tree.nodes[i].arrival.0;
            arrival
                .tool_calls
                .first()
                .is_some_and(|c| c.arguments == only.arguments)
        })?;
        self.departure_forms(to)
    }

    /// The context forms of a transfer from this agent to its neighbour `to`, made on the
    /// first transfer from this agent.
    fn departure_forms(&self, to: usize) -> Option<TransferForms> {
        let n = self.this();
        let departures = n.departures.0.get_or_init(|| {
            self.neighbours()
                .map(|to| {
                    let (call, result) = &*self.tree.nodes[to].arrival;
                    Departure {
                        to,
                        forms: (
                            Arc::new(ContextForm::new(&n.name, call)),
                            Arc::new(ContextForm::new(&n.name, result)),
                        ),
                    }
                })
                .collect()
        });
        Some(departures.iter().find(|d| d.to == to)?.forms.clone())
    }

    /// The agent named `name` anywhere in this tree.
    pub fn find(&self, name: &str) -> Option<FlowAgent> {
        self.tree
            .nodes
            .iter()
            .position(|n| &*n.name == name)
            .map(|i| self.at(i))
    }

    /// The names of every agent of this tree and of the trees its nodes hold as their agent,
    /// each once (the names a run path of a run of this tree can hold).
    #[doc(hidden)]
    pub fn all_names(&self) -> std::collections::HashSet<Arc<str>> {
        fn walk(tree: &Tree, names: &mut std::collections::HashSet<Arc<str>>) {
            for n in &tree.nodes {
                names.insert(Arc::clone(&n.name));
                if let Some(inner) = n.agent.as_flow() {
                    walk(&inner.tree, names);
                }
            }
        }
        let mut names = std::collections::HashSet::new();
        walk(&self.tree, &mut names);
        names
    }

    /// The names of the custom agents that may run agents of their own this tree cannot see
    /// (a `struct W(FlowAgent)` whose `run` runs the tree it holds): the leaves of this tree
    /// (and of the trees its nodes hold) whose agent is not itself a tree, and the root if its
    /// agent says it [runs agents of its own](crate::Agent::runs_agents_of_its_own) (else a
    /// lone root is checked by name, as any agent). A checkpoint's run
    /// paths may go on below them with names only that agent knows (see
    /// [`Checkpoint::check_names_in`](crate::Checkpoint::check_names_in)).
    #[doc(hidden)]
    pub fn opaque_leaves(&self) -> std::collections::HashSet<Arc<str>> {
        fn walk(tree: &Tree, names: &mut std::collections::HashSet<Arc<str>>) {
            for n in &tree.nodes {
                match n.agent.as_flow() {
                    Some(inner) => walk(&inner.tree, names),
                    None if n.children.is_empty()
                        && (n.parent.is_some() || n.agent.runs_agents_of_its_own()) =>
                    {
                        names.insert(Arc::clone(&n.name));
                    }
                    None => {}
                }
            }
        }
        let mut names = std::collections::HashSet::new();
        walk(&self.tree, &mut names);
        names
    }

    /// The root of the tree this agent is in.
    pub fn root(&self) -> FlowAgent {
        let mut node = self.node;
        while let Some(p) = self.tree.nodes[node].parent {
            node = p;
        }
        self.at(node)
    }

    /// The tree's shape in canonical form: each node's name followed by its children in
    /// parentheses, depth first from the root, e.g. `triage(refund,complaint(escalation))`.
    /// A node barred from its parent is marked with a trailing `^`.
    pub fn shape(&self) -> String {
        fn write(tree: &Tree, i: usize, out: &mut String) {
            let n = &tree.nodes[i];
            out.push_str(&n.name);
            if n.options.disallow_transfer_to_parent {
                out.push('^');
            }
            if !n.children.is_empty() {
                out.push('(');
                for (k, &c) in n.children.iter().enumerate() {
                    if k > 0 {
                        out.push(',');
                    }
                    write(tree, c, out);
                }
                out.push(')');
            }
        }
        let root = self.root();
        let mut out = String::new();
        write(&self.tree, root.node, &mut out);
        out
    }

    /// A fingerprint of [`shape`](FlowAgent::shape): FNV-1a (64-bit) of its UTF-8 bytes. It
    /// identifies the tree a checkpoint was taken in; `flow!` computes the same value at compile
    /// time.
    pub fn fingerprint(&self) -> u64 {
        fingerprint_of(&self.shape())
    }

    /// Resolves a transfer from this agent to `target`.
    pub(crate) fn transfer_target(&self, target: &str) -> Result<usize, AgentError> {
        let n = self.this();
        if let Some(&c) = n
            .children
            .iter()
            .find(|&&c| &*self.tree.nodes[c].name == target)
        {
            return Ok(c);
        }
        if let Some(p) = n.parent {
            if &*self.tree.nodes[p].name == target {
                if n.options.disallow_transfer_to_parent {
                    return Err(AgentError::TransferToParentRefused {
                        target: Arc::clone(&self.tree.nodes[p].name),
                        from: Arc::clone(&n.name),
                    });
                }
                return Ok(p);
            }
        }
        Err(AgentError::TransferTargetNotFound {
            target: target.into(),
            from: Arc::clone(&n.name),
        })
    }
}

/// Gives `parent` its sub-agents and returns the joined tree, a handle on `parent` in it.
///
/// Errors (and changes nothing) if `parent` already has sub-agents, if a child already has a
/// parent, if `children` is empty, if two agents of the joined tree share a name, or if an
/// [`OnSubAgents`](crate::OnSubAgents) hook refuses. Hooks are called in this order: the
/// parent's `on_set_sub_agents`, then for each child `on_set_as_sub_agent` and, if it is barred
/// from its parent, `on_disallow_transfer_to_parent`.
///
/// When the parent's agent [runs its sub-agents itself](Agent::runs_its_sub_agents) (a
/// workflow agent), every child is barred from transferring to it, as if built with
/// [`FlowAgent::disallow_transfer_to_parent`].
pub fn set_sub_agents(
    parent: FlowAgent,
    children: impl IntoIterator<Item = FlowAgent>,
) -> Result<FlowAgent, FlowError> {
    let children: Vec<FlowAgent> = children.into_iter().collect();
    let p = parent.this();
    if !p.children.is_empty() {
        return Err(FlowError::AlreadyHasSubAgents {
            agent: Arc::clone(&p.name),
        });
    }
    if children.is_empty() {
        return Err(FlowError::NoSubAgents {
            agent: Arc::clone(&p.name),
        });
    }
    for child in &children {
        if let Some(existing) = child.parent() {
            return Err(FlowError::AlreadyHasParent {
                agent: child.this().name.clone(),
                parent: existing.this().name.clone(),
            });
        }
    }

    // A parent that runs its sub-agents itself (a workflow) bars them from transferring back.
    let bar_all = p.agent.runs_its_sub_agents();
    let mut tree = Tree::clone(&parent.tree);
    let mut child_ids = Vec::with_capacity(children.len());
    for child in &children {
        let offset = tree.nodes.len();
        for n in &child.tree.nodes {
            let mut n = n.clone();
            n.parent = n.parent.map(|i| i + offset);
            for c in &mut n.children {
                *c += offset;
            }
            tree.nodes.push(n);
        }
        let id = child.node + offset;
        tree.nodes[id].parent = Some(parent.node);
        if bar_all {
            tree.nodes[id].options.disallow_transfer_to_parent = true;
        }
        child_ids.push(id);
    }
    tree.nodes[parent.node].children = child_ids;
    tree.note_results(parent.node);

    let mut names = std::collections::HashSet::with_capacity(tree.nodes.len());
    for n in &tree.nodes {
        if !names.insert(&*n.name) {
            return Err(FlowError::DuplicateName {
                name: Arc::clone(&n.name),
            });
        }
    }

    let parent_info = parent.info();
    let child_infos: Vec<AgentInfo> = children.iter().map(FlowAgent::info).collect();
    if let Some(hooks) = p.agent.on_sub_agents() {
        hooks.on_set_sub_agents(&child_infos)?;
    }
    for child in &children {
        if let Some(hooks) = child.this().agent.on_sub_agents() {
            hooks.on_set_as_sub_agent(&parent_info)?;
            if bar_all || child.this().options.disallow_transfer_to_parent {
                hooks.on_disallow_transfer_to_parent()?;
            }
        }
    }

    Ok(FlowAgent {
        tree: Arc::new(tree),
        node: parent.node,
    })
}

impl FlowAgent {
    /// Method form of [`set_sub_agents`].
    pub fn with_sub_agents(
        self,
        children: impl IntoIterator<Item = FlowAgent>,
    ) -> Result<FlowAgent, FlowError> {
        set_sub_agents(self, children)
    }
}

impl fmt::Debug for FlowAgent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FlowAgent")
            .field("name", &self.name())
            .field(
                "sub_agents",
                &self
                    .sub_agents()
                    .iter()
                    .map(|c| c.name().to_owned())
                    .collect::<Vec<_>>(),
            )
            .field("parent", &self.parent().map(|p| p.name().to_owned()))
            .field("options", self.options())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::FnAgent;

    fn node(name: &str) -> FlowAgent {
        FlowAgent::new(FnAgent::new(name, |_, _| async { Ok(()) }))
    }

    fn gets_results(tree: &FlowAgent, name: &str) -> bool {
        tree.find(name).expect("in the tree").this().gets_results
    }

    #[test]
    fn a_node_gets_results_exactly_when_a_sub_agent_gives_control_back() {
        let plain = set_sub_agents(node("desk"), [node("refund"), node("billing")]).unwrap();
        assert!(!gets_results(&plain, "desk"));
        let task = set_sub_agents(
            node("desk"),
            [node("refund"), node("billing").delegation(Delegation::Task)],
        )
        .unwrap();
        assert!(gets_results(&task, "desk"));
        assert!(!gets_results(&task, "billing"), "a leaf gets no results");
        // Set after the tree was joined: the parent's flag follows.
        let later = plain
            .find("refund")
            .unwrap()
            .delegation(Delegation::SingleTurn);
        assert!(gets_results(&later, "desk"));
        let back = later.delegation(Delegation::Chat);
        assert!(!gets_results(&back, "desk"));
        assert!(
            !gets_results(&plain, "desk"),
            "the tree handed out before is unchanged"
        );
    }
}
