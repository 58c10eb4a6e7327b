//! Expected trajectories written against a flow's generated types: [`TrajectorySpec`].
//!
//! `flow!` gives each flow `Flow::trajectory()`, a [`TrajectorySpec`] typed by the flow. Its
//! agent steps take the flow's agent enum (`DeskAgent::Triage`) and its transfer steps take a
//! node's target enum (`DeskTriageTarget::Refund`: triage transfers to refund), so an
//! expectation naming an agent the flow does not have, or a transfer the flow does not allow,
//! does not compile. The spec is plain data: the `agentweave-eval` crate turns it into its
//! trajectory expectation (`TrajectoryExpectation::from`) and scores runs against it.
//!
//! ```
//! use agentweave_runtime::spec::expected::{ExpectedArgs, ExpectedMode, ExpectedStep, TrajectorySpec};
//! use agentweave_runtime::spec::expected::{FlowAgentOf, FlowTransferOf};
//!
//! // What `flow!` generates for `Desk: triage => [refund]`, written by hand.
//! struct Desk;
//! #[derive(Clone, Copy)]
//! enum DeskAgent { Triage, Refund }
//! impl FlowAgentOf<Desk> for DeskAgent {
//!     fn agent_name(self) -> &'static str {
//!         match self { DeskAgent::Triage => "triage", DeskAgent::Refund => "refund" }
//!     }
//! }
//! #[derive(Clone, Copy)]
//! enum DeskTriageTarget { Refund }
//! impl FlowTransferOf<Desk> for DeskTriageTarget {
//!     fn source_name(self) -> &'static str { "triage" }
//!     fn target_name(self) -> &'static str { "refund" }
//! }
//!
//! let spec = TrajectorySpec::<Desk>::__new("Desk")
//!     .agent(DeskAgent::Triage)
//!     .transfer(DeskTriageTarget::Refund)
//!     .tool_by(DeskAgent::Refund, "issue_refund", serde_json::json!({"order_id": 42}))
//!     .in_order()
//!     .args_subset();
//! assert_eq!(spec.mode(), ExpectedMode::InOrder);
//! assert_eq!(spec.args(), ExpectedArgs::Subset);
//! assert_eq!(spec.steps()[1], ExpectedStep::Transfer { from: "triage", to: "refund" });
//! ```

use std::fmt;
use std::marker::PhantomData;

use super::check::Verdict;
use super::{AgentTransfer, TransferTarget};

/// `serde_json`, for the tool arguments of the facade's `trajectory!`.
#[doc(hidden)]
pub use serde_json as __serde_json;

/// An agent of flow `F`: implemented by the `{Flow}Agent` enum `flow!` generates.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an agent of flow `{F}`",
    label = "not an agent of `{F}`",
    note = "a step of `{F}::trajectory()` names an agent with `{F}`'s agent enum (`{F}Agent::...`)"
)]
pub trait FlowAgentOf<F>: Copy {
    /// The agent's name.
    fn agent_name(self) -> &'static str;
}

/// A transfer flow `F` allows: a node's target type, whose variants are the agents that node
/// may transfer to. For a node filled by an agent type this is the agent's own transfer enum
/// (`{Flow}{Node}Target` is an alias of it), for a `dyn` or `runtime` node the enum `flow!`
/// generates; one impl here covers them all, through the `FlowPlaces` impl `flow!` writes per
/// node.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a transfer of flow `{F}`",
    label = "not a transfer of `{F}`",
    note = "a transfer step of `{F}::trajectory()` names a node's target enum, \
            `{F}{{Node}}Target::{{Agent}}` (the node transfers to the agent)"
)]
pub trait FlowTransferOf<F>: Copy {
    /// The agent that transfers (the node whose target enum this is).
    fn source_name(self) -> &'static str;
    /// The agent it transfers to.
    fn target_name(self) -> &'static str;
}

/// Flow `F` has a node that may transfer, filled by agent type `A` (or, for a `dyn` or
/// `runtime` node, whose generated target enum is `A`): `flow!` implements it for each such
/// node, so that the node's target type names transfers of `F` (see [`FlowTransferOf`]). Not a
/// public API.
#[doc(hidden)]
#[diagnostic::on_unimplemented(
    message = "the targets of `{A}` are not transfers of flow `{Self}`",
    label = "not a transfer of `{Self}`",
    note = "a transfer step of `{Self}::trajectory()` names a node's target enum, \
            `{Self}{{Node}}Target::{{Agent}}` (the node transfers to the agent)"
)]
pub trait FlowPlaces<A>: FlowNames {
    /// The node's index in [`FlowNames::AGENTS`]: its agent is the source of its transfers.
    /// (A literal per node: cheaper for the compiler than a name read from the flow's table.)
    const NODE: usize;
}

/// The names of a flow's agents, by node: `flow!` implements it once per flow, for
/// [`FlowPlaces`]. Not a public API.
#[doc(hidden)]
pub trait FlowNames {
    /// The agents' names, depth first from the root (the flow's `AGENTS`).
    const AGENTS: &'static [&'static str];
}

#[diagnostic::do_not_recommend]
impl<F: FlowPlaces<T::Agent>, T: AgentTransfer> FlowTransferOf<F> for T {
    fn source_name(self) -> &'static str {
        F::AGENTS[<F as FlowPlaces<T::Agent>>::NODE]
    }
    fn target_name(self) -> &'static str {
        TransferTarget::agent_name(self)
    }
}

/// How the actual steps must line up with the expected ones (see `agentweave-eval`'s `MatchMode`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum ExpectedMode {
    /// The same steps in the same order, nothing else (of the kinds the spec lists).
    #[default]
    Exact,
    /// The expected steps in this order; other steps may come between them.
    InOrder,
    /// The expected steps in any order; other steps may come too.
    AnyOrder,
}

/// How a tool call's arguments are compared (see `agentweave-eval`'s `ArgsMatch`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum ExpectedArgs {
    /// Equal JSON (key order aside).
    #[default]
    Exact,
    /// Every field the spec gives is there with an equal value; the call may have more.
    Subset,
    /// Not compared: the tool's name is enough.
    Ignore,
}

/// One expected step, with the agents' names the flow's types gave.
#[derive(Debug, Clone, PartialEq)]
pub enum ExpectedStep {
    /// This agent ran.
    Agent {
        /// Its name.
        agent: &'static str,
    },
    /// `from` transferred to `to`.
    Transfer {
        /// The agent that transferred.
        from: &'static str,
        /// The agent it transferred to.
        to: &'static str,
    },
    /// A tool call.
    Tool {
        /// The tool's name.
        tool: String,
        /// Its arguments (`None`: any).
        args: Option<serde_json::Value>,
        /// The calling agent (`None`: any).
        agent: Option<&'static str>,
    },
}

impl fmt::Display for ExpectedStep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExpectedStep::Agent { agent } => write!(f, "agent {agent}"),
            ExpectedStep::Transfer { from, to } => write!(f, "transfer {from} -> {to}"),
            ExpectedStep::Tool { tool, args, agent } => {
                write!(f, "tool {tool}")?;
                if let Some(args) = args {
                    write!(f, " {args}")?;
                }
                if let Some(agent) = agent {
                    write!(f, " (by {agent})")?;
                }
                Ok(())
            }
        }
    }
}

/// An expected trajectory of flow `F`, built step by step from `F`'s generated types:
/// `Desk::trajectory().agent(DeskAgent::Triage).transfer(DeskTriageTarget::Refund)`.
///
/// Agent steps take `F`'s agent enum, transfer steps a node's target enum (only the agents
/// that node may transfer to are its variants), tool steps a tool's name and arguments. Which
/// kinds of step are compared, and how, follows `agentweave-eval`: only the kinds the spec lists;
/// mode [`exact`](Self::exact) unless set; arguments compared exactly unless set.
pub struct TrajectorySpec<F> {
    flow: &'static str,
    mode: ExpectedMode,
    args: ExpectedArgs,
    steps: Vec<ExpectedStep>,
    _flow: PhantomData<fn() -> F>,
}

impl<F> TrajectorySpec<F> {
    /// An empty spec for the flow named `flow`. Called by the `trajectory()` `flow!` generates.
    #[doc(hidden)]
    pub fn __new(flow: &'static str) -> Self {
        TrajectorySpec {
            flow,
            mode: ExpectedMode::Exact,
            args: ExpectedArgs::Exact,
            steps: Vec::new(),
            _flow: PhantomData,
        }
    }

    /// The spec with `step` added, unchecked: for the facade's `trajectory!`, which checks
    /// its names against the flow at compile time first.
    #[doc(hidden)]
    pub fn __step(mut self, step: ExpectedStep) -> Self {
        self.steps.push(step);
        self
    }

    /// Expects `agent` to run (`DeskAgent::Refund`).
    pub fn agent(mut self, agent: impl FlowAgentOf<F>) -> Self {
        self.steps.push(ExpectedStep::Agent {
            agent: agent.agent_name(),
        });
        self
    }

    /// Expects a transfer: `DeskTriageTarget::Refund` is triage transferring to refund. Only a
    /// transfer the flow allows has a variant to name.
    pub fn transfer(mut self, target: impl FlowTransferOf<F>) -> Self {
        self.steps.push(ExpectedStep::Transfer {
            from: target.source_name(),
            to: target.target_name(),
        });
        self
    }

    /// Expects a call of `tool` with `args`, by any agent.
    pub fn tool(mut self, tool: impl Into<String>, args: serde_json::Value) -> Self {
        self.steps.push(ExpectedStep::Tool {
            tool: tool.into(),
            args: Some(args),
            agent: None,
        });
        self
    }

    /// Expects `agent` to call `tool` with `args`.
    pub fn tool_by(
        mut self,
        agent: impl FlowAgentOf<F>,
        tool: impl Into<String>,
        args: serde_json::Value,
    ) -> Self {
        self.steps.push(ExpectedStep::Tool {
            tool: tool.into(),
            args: Some(args),
            agent: Some(agent.agent_name()),
        });
        self
    }

    /// Expects a call of `tool`, whatever its arguments, by any agent.
    pub fn tool_called(mut self, tool: impl Into<String>) -> Self {
        self.steps.push(ExpectedStep::Tool {
            tool: tool.into(),
            args: None,
            agent: None,
        });
        self
    }

    /// The same steps, in the same order, nothing else of the kinds listed (the default).
    pub fn exact(mut self) -> Self {
        self.mode = ExpectedMode::Exact;
        self
    }

    /// The steps in this order; others may come between them.
    pub fn in_order(mut self) -> Self {
        self.mode = ExpectedMode::InOrder;
        self
    }

    /// The steps in any order; others may come too.
    pub fn any_order(mut self) -> Self {
        self.mode = ExpectedMode::AnyOrder;
        self
    }

    /// Tool arguments compared as equal JSON (the default).
    pub fn args_exact(mut self) -> Self {
        self.args = ExpectedArgs::Exact;
        self
    }

    /// Tool arguments compared as a JSON subset: the fields given must be there.
    pub fn args_subset(mut self) -> Self {
        self.args = ExpectedArgs::Subset;
        self
    }

    /// Tool arguments not compared.
    pub fn args_ignored(mut self) -> Self {
        self.args = ExpectedArgs::Ignore;
        self
    }

    /// The flow's name.
    pub fn flow_name(&self) -> &'static str {
        self.flow
    }

    /// How the steps must line up.
    pub fn mode(&self) -> ExpectedMode {
        self.mode
    }

    /// How tool arguments are compared.
    pub fn args(&self) -> ExpectedArgs {
        self.args
    }

    /// The expected steps, in order.
    pub fn steps(&self) -> &[ExpectedStep] {
        &self.steps
    }
}

impl<F> Clone for TrajectorySpec<F> {
    fn clone(&self) -> Self {
        TrajectorySpec {
            flow: self.flow,
            mode: self.mode,
            args: self.args,
            steps: self.steps.clone(),
            _flow: PhantomData,
        }
    }
}

impl<F> fmt::Debug for TrajectorySpec<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TrajectorySpec")
            .field("flow", &self.flow)
            .field("mode", &self.mode)
            .field("args", &self.args)
            .field("steps", &self.steps)
            .finish()
    }
}

impl<F> PartialEq for TrajectorySpec<F> {
    fn eq(&self, other: &Self) -> bool {
        self.flow == other.flow
            && self.mode == other.mode
            && self.args == other.args
            && self.steps == other.steps
    }
}

const fn eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

const fn index_of(agents: &[&str], name: &str) -> Option<usize> {
    let mut i = 0;
    while i < agents.len() {
        if eq(agents[i], name) {
            return Some(i);
        }
        i += 1;
    }
    None
}

/// The node `name` names in a flow whose agents are `agents` and whose nodes' identifiers are
/// `labels`: the node of the agent of that name, else the node of that identifier (an agent
/// renamed with `#[agent(name = "refund-desk")]` is named `"refund-desk"` or `refund`).
const fn node_named(agents: &[&str], labels: &[&str], name: &str) -> Option<usize> {
    match index_of(agents, name) {
        Some(i) => Some(i),
        None => index_of(labels, name),
    }
}

/// The agent's name `name` stands for in `trajectory!` (see [`check_agent`]): itself, or the
/// name of the agent whose node has that identifier; `""` if the flow has neither (the check
/// fails then).
#[doc(hidden)]
pub const fn agent_name(
    agents: &'static [&'static str],
    labels: &[&str],
    name: &str,
) -> &'static str {
    match node_named(agents, labels, name) {
        Some(i) => agents[i],
        None => "",
    }
}

/// The check of an agent named in the facade's `trajectory!`: fails, listing the flow's
/// agents, if flow `flow` (whose agents are `agents`, their nodes' identifiers `labels`) has no
/// agent named `name` and no node of that identifier.
#[doc(hidden)]
pub const fn check_agent(flow: &str, agents: &[&str], labels: &[&str], name: &str) -> Verdict {
    match node_named(agents, labels, name) {
        Some(_) => Verdict::pass(),
        None => Verdict::pass()
            .push("flow ")
            .code(flow)
            .push(" has no agent ")
            .code(name)
            .push(", so an expected trajectory of it cannot name one. Its agents: ")
            .list(agents),
    }
}

/// What a flow tells `trajectory!` about its transfers, by node: `flow!`'s hidden consts.
#[doc(hidden)]
pub struct FlowTransfers<'a> {
    /// The flow's name.
    pub flow: &'a str,
    /// The agents' names.
    pub agents: &'a [&'a str],
    /// The nodes' identifiers.
    pub labels: &'a [&'a str],
    /// The nodes each node may transfer to in the tree (its sub-agents, then its parent unless
    /// the flow bars it).
    pub targets: &'a [&'a [usize]],
    /// Whether each node is filled by an agent type: it may make only the transfers it declared.
    pub typed: &'a [bool],
    /// The transfers each agent type declares.
    pub declared: &'a [&'a [&'a str]],
}

/// The check of a transfer named in the facade's `trajectory!`: fails if either agent is not
/// in the flow, or if `from` may not transfer to `to` (saying where it may transfer). A node
/// filled by an agent type may make the transfers its agent declared (which `flow!` holds to
/// the node's sub-agents and parent, not a barred one); a `dyn` node, any to its sub-agents and
/// its parent unless barred.
#[doc(hidden)]
pub const fn check_transfer(f: &FlowTransfers<'_>, from: &str, to: &str) -> Verdict {
    let flow = f.flow;
    let agents = f.agents;
    let verdict = check_agent(flow, agents, f.labels, from);
    if verdict.failed() {
        return verdict;
    }
    let verdict = check_agent(flow, agents, f.labels, to);
    if verdict.failed() {
        return verdict;
    }
    let (Some(i), Some(j)) = (
        node_named(agents, f.labels, from),
        node_named(agents, f.labels, to),
    ) else {
        return Verdict::pass();
    };
    let (from, to) = (agents[i], agents[j]);
    let mine = f.targets[i];
    let mut v = Verdict::pass()
        .push("in flow ")
        .code(flow)
        .push(", ")
        .code(from)
        .push(" cannot transfer to ")
        .code(to)
        .push(", so an expected trajectory cannot name that transfer. ")
        .code(from)
        .push(" may transfer to: ");
    if f.typed[i] {
        let declared = f.declared[i];
        if contains(declared, to) {
            return Verdict::pass();
        }
        if declared.is_empty() {
            return v.push("none (its agent declares no transfers)");
        }
        return v
            .list(declared)
            .push(" (the transfers its agent declares with `#[agent(transfers = [...])]`)");
    }
    let mut k = 0;
    while k < mine.len() {
        if mine[k] == j {
            return Verdict::pass();
        }
        k += 1;
    }
    if mine.is_empty() {
        return v
            .push("none (it is a workflow, or has no sub-agents and is barred from its parent)");
    }
    let mut k = 0;
    while k < mine.len() {
        if k > 0 {
            v = v.push(", ");
        }
        v = v.code(agents[mine[k]]);
        k += 1;
    }
    v.push(" (its sub-agents, and its parent unless barred)")
}

const fn contains(names: &[&str], name: &str) -> bool {
    index_of(names, name).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `Desk: triage => [refund, dyn billing]`, refund named `refund-desk` and declaring a
    /// transfer to triage only; triage declaring refund-desk.
    fn desk() -> FlowTransfers<'static> {
        FlowTransfers {
            flow: "Desk",
            agents: &["triage", "refund-desk", "billing"],
            labels: &["triage", "refund", "billing"],
            targets: &[&[1, 2], &[0], &[0]],
            typed: &[true, true, false],
            declared: &[&["refund-desk"], &["triage"], &[]],
        }
    }

    #[test]
    fn transfers_follow_declarations_and_names_resolve() {
        let f = desk();
        // By name or by the node's identifier.
        assert!(!check_transfer(&f, "triage", "refund-desk").failed());
        assert!(!check_transfer(&f, "triage", "refund").failed());
        assert!(!check_transfer(&f, "refund", "triage").failed());
        assert_eq!(agent_name(f.agents, f.labels, "refund"), "refund-desk");
        assert_eq!(agent_name(f.agents, f.labels, "refund-desk"), "refund-desk");
        // A typed node may make only the transfers it declared, although billing is a
        // sub-agent in the tree.
        let v = check_transfer(&f, "triage", "billing");
        assert!(
            v.as_str()
                .contains("`triage` may transfer to: `refund-desk`"),
            "{}",
            v.as_str()
        );
        // A `dyn` node, any of its tree's targets.
        assert!(!check_transfer(&f, "billing", "triage").failed());
        assert!(check_transfer(&f, "billing", "refund")
            .as_str()
            .contains("may transfer to: `triage`"));
        assert!(check_agent("Desk", f.agents, f.labels, "shipping")
            .as_str()
            .starts_with("flow `Desk` has no agent `shipping`"));
    }
}
