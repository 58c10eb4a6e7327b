//! Facts of the builders `flow!` generates: slots ([`Unset`], [`Set`]), what `build()` asks of
//! them ([`DynGiven`], [`RuntimeGiven`]), the node handed to a `dyn` agent ([`FlowNode`]), and
//! [`UnknownAgent`], the error of a flow's agent enum.

use std::fmt;
use std::sync::Arc;

use super::TransferTarget;
use crate::agent::Agent;

/// A name that is not an agent of a flow: the error of the generated agent enum's `FromStr`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownAgent {
    /// The flow asked.
    pub flow: &'static str,
    /// The name that matched no agent.
    pub name: Arc<str>,
    /// The flow's agents.
    pub known: &'static [&'static str],
}

impl fmt::Display for UnknownAgent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "flow '{}' has no agent named '{}'; its agents are: {}",
            self.flow,
            self.name,
            self.known.join(", ")
        )
    }
}

impl std::error::Error for UnknownAgent {}

/// A builder slot of a flow whose agent has not been given yet.
#[derive(Debug, Clone, Copy, Default)]
pub struct Unset;

/// A builder slot of a flow holding the agent given to it.
#[derive(Debug, Clone)]
pub struct Set<T>(pub T);

/// What a flow builder's `build()` asks of the slot of a `dyn` node: that it holds the node's
/// agent. `F` is the flow type; `N` a marker type the flow generates for the node, named after
/// its setter, so that calling `build()` first fails to compile naming the node.
#[diagnostic::on_unimplemented(
    message = "flow `{F}`: node `{N}` (a `dyn` node) was not given: call `.{N}(...)` before \
               `.build()`",
    label = "`{N}` was not given",
    note = "`.{N}(|node| ...)` calls the closure with the node (its name and its legal transfer \
            targets) and keeps the agent it returns"
)]
pub trait DynGiven<F, N> {
    /// The agent in the slot.
    fn into_agent(self) -> DynAgent;
}

impl<F, N> DynGiven<F, N> for Set<DynAgent> {
    fn into_agent(self) -> DynAgent {
        self.0
    }
}

/// [`DynGiven`] for a `remote` node (an A2A agent running elsewhere, given at run time as a
/// `dyn` node's agent is), whose message names it as remote.
#[diagnostic::on_unimplemented(
    message = "flow `{F}`: node `{N}` (a `remote` node) was not given: call `.{N}(...)` before \
               `.build()`",
    label = "`{N}` was not given",
    note = "`.{N}(|node| A2aAgent::new(node, client))` calls the closure with the node (its name \
            and its legal transfer targets) and keeps the remote agent it returns"
)]
pub trait RemoteGiven<F, N> {
    /// The agent in the slot.
    fn into_agent(self) -> DynAgent;
}

impl<F, N> RemoteGiven<F, N> for Set<DynAgent> {
    fn into_agent(self) -> DynAgent {
        self.0
    }
}

/// What a flow builder's `build()` asks of the slot of a `runtime` node: that it holds the
/// node's agent, a `T`. `F` is the flow type; `N` a marker type the flow generates for the
/// node, named after its setter, so that calling `build()` first fails to compile naming the
/// node.
#[diagnostic::on_unimplemented(
    message = "flow `{F}`: node `{N}` (a `runtime` node) was not given: call `.{N}(...)` \
               before `.build()`",
    label = "`{N}` was not given",
    note = "`.{N}(value)` takes the agent the node runs, a `{T}`"
)]
pub trait RuntimeGiven<F, N, T> {
    /// The agent in the slot.
    fn into_agent(self) -> T;
}

impl<F, N, T> RuntimeGiven<F, N, T> for Set<T> {
    fn into_agent(self) -> T {
        self.0
    }
}

/// What a setter of a flow builder asks of its node's slot: that it was not given yet, so a
/// setter called twice fails to compile naming the node. `F` is the flow type, `N` the node's
/// marker type. Only [`Unset`] implements it.
#[doc(hidden)]
#[diagnostic::on_unimplemented(
    message = "flow `{F}`: node `{N}` was already given: call `.{N}(...)` once",
    label = "`{N}` given a second time",
    note = "each `dyn` and `runtime` node takes one agent; remove one of the two `.{N}(...)` calls"
)]
pub trait NotGiven<F, N> {}

impl<F, N> NotGiven<F, N> for Unset {}

/// What the setter of a `dyn` node asks of its argument: a closure called with the node
/// ([`FlowNode`]) that returns the node's agent. Naming the flow `F` and the node `N`, it makes
/// a value given instead of a closure fail to compile with a message that says what to write.
#[doc(hidden)]
#[diagnostic::on_unimplemented(
    message = "flow `{F}`: `.{N}(...)` takes a closure `|node| ...` that returns the node's \
               agent, not a `{Self}`",
    label = "not a closure",
    note = "write `.{N}(|node| ...)`, building the agent with the node's name (as in \
            `FnAgent::new(node, ...)` or `ChatModelAgent::builder(node, model)`); for an agent \
            already built, `.{N}(|_| agent)`"
)]
pub trait NodeMaker<F, N, T: 'static, A>: FnOnce(FlowNode<T>) -> A {}

impl<F, N, T: 'static, A, C: FnOnce(FlowNode<T>) -> A> NodeMaker<F, N, T, A> for C {}

/// What the setter of a `dyn` node asks of the value its closure returns: an [`Agent`].
/// Naming the flow `F` and the node `N`, it makes a builder or a `Result` returned instead fail
/// to compile with a message that says what to write.
#[doc(hidden)]
#[diagnostic::on_unimplemented(
    message = "flow `{F}`: the closure given to `.{N}(...)` must return the node's agent, not a \
               `{Self}`",
    label = "returns a `{Self}`, which is not an agent",
    note = "if it returns the agent's builder, call `.build()` on it; if it returns a `Result` \
            (as `ChatModelAgentBuilder::build()` does), handle the error outside or unwrap it: \
            `.{N}(|node| ChatModelAgent::builder(node, model).build().expect(\"valid agent\"))`"
)]
pub trait NodeAgent<F, N>: Agent {}

impl<F, N, A: Agent> NodeAgent<F, N> for A {}

/// What the stand-in setter of a node the flow builds itself asks of its argument. Nothing
/// implements it: calling `.lookup(...)` for such a node fails to compile saying that only
/// `dyn` and `runtime` nodes have setters.
#[doc(hidden)]
#[diagnostic::on_unimplemented(
    message = "flow `{F}`: node `{N}` is built by the flow itself, so the builder has no setter \
               for it",
    label = "`{N}` is not a `dyn` or `runtime` node",
    note = "only `dyn` and `runtime` nodes are given their agents at run time; to give this \
            node its agent here, declare it `dyn name` (any agent, made by a closure) or \
            `Type(runtime)` (a struct agent's value) in `flow!`; otherwise drop this call"
)]
pub trait NoSetter<F, N> {}

/// What a flow hands the agent of one of its `dyn` nodes: the node's name and its legal
/// transfer targets, typed. The builder's setter for the node calls your closure with it, so an
/// agent built at run time (a `ChatModelAgent` with its client) takes its name from the flow
/// instead of repeating it, and code that names its targets uses the node's target enum (a
/// target that is not legal there does not compile).
///
/// `T` is the node's target enum (`{Flow}{Node}Target`), or [`NoTarget`](super::NoTarget) for a node that may
/// transfer nowhere. A `FlowNode` converts into the agent's name, so it goes where a name goes
/// (`ChatModelAgent::builder(node, model)`, `FnAgent::new(node, body)`); the `flow!`
/// documentation of the `agentweave` facade has an example.
pub struct FlowNode<T: 'static> {
    flow: &'static str,
    name: &'static str,
    targets: &'static [T],
    skills: &'static [agentweave_skill::EmbeddedSkill],
}

impl<T: TransferTarget> FlowNode<T> {
    /// The node `name` of flow `flow`, whose legal targets are `targets`. Made by the builders
    /// `flow!` generates.
    #[doc(hidden)]
    pub const fn __new(flow: &'static str, name: &'static str, targets: &'static [T]) -> Self {
        FlowNode {
            flow,
            name,
            targets,
            skills: &[],
        }
    }

    /// The same node, with the skill folders `flow!` checked and embedded for it
    /// (`dyn name(skills = [...])`). Made by the builders `flow!` generates.
    #[doc(hidden)]
    pub const fn __with_skills(
        mut self,
        skills: &'static [agentweave_skill::EmbeddedSkill],
    ) -> Self {
        self.skills = skills;
        self
    }

    /// The skill folders the node declares (`dyn name(skills = ["skills/pdf-forms"])`),
    /// checked and embedded when the crate compiled: give them to the agent with
    /// `agentweave::kit::Skills::from_embedded(node.skills())`.
    pub fn skills(&self) -> &'static [agentweave_skill::EmbeddedSkill] {
        self.skills
    }

    /// The node's name: the name its agent must carry.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The flow's name.
    pub fn flow(&self) -> &'static str {
        self.flow
    }

    /// The agents this node may transfer to: its sub-agents, then its parent unless it is
    /// barred from it.
    pub fn targets(&self) -> &'static [T] {
        self.targets
    }

    /// The names of [`targets`](FlowNode::targets).
    pub fn target_names(&self) -> Vec<&'static str> {
        self.targets.iter().map(|t| t.agent_name()).collect()
    }
}

impl<T> Clone for FlowNode<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for FlowNode<T> {}

impl<T: TransferTarget> fmt::Debug for FlowNode<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FlowNode")
            .field("flow", &self.flow)
            .field("name", &self.name)
            .field("targets", &self.target_names())
            .finish()
    }
}

impl<T> fmt::Display for FlowNode<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name)
    }
}

impl<T> From<FlowNode<T>> for Arc<str> {
    fn from(node: FlowNode<T>) -> Self {
        Arc::from(node.name)
    }
}

impl<T> From<FlowNode<T>> for String {
    fn from(node: FlowNode<T>) -> Self {
        node.name.to_owned()
    }
}

/// What the `new()` of a flow with `dyn` or `runtime` nodes requires, so that calling it fails
/// to compile with a message pointing to the builder. Nothing implements it.
#[doc(hidden)]
#[diagnostic::on_unimplemented(
    message = "flow `{F}` has nodes whose agents are given at run time, so it has no `new()`",
    label = "use `{F}::builder()` instead",
    note = "build it with `{F}::builder()`: call its setter for every `dyn` and `runtime` node \
            (named after the node), then `build()`"
)]
pub trait NewNeedsNoAgents<F> {}

/// The type [`NewNeedsNoAgents`] is asked of.
#[doc(hidden)]
#[derive(Debug)]
pub struct UseTheBuilder;

/// The agent of a `dyn` node, as a flow builder holds it.
#[derive(Clone)]
pub struct DynAgent(pub Arc<dyn Agent>);

impl fmt::Debug for DynAgent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("DynAgent").field(&self.0.name()).finish()
    }
}
