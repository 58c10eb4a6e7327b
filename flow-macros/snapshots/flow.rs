#[allow(non_snake_case, non_camel_case_types, non_upper_case_globals, unreachable_pub)]
mod desk_flow {
    /// The desk.
    /**
 Declared with `flow!`: the tree below, the legal transfers and every agent's declared transfers are checked at compile time. Build it with [`Desk::builder`]; run it with [`Desk::runner`].

 # Tree

 ```text
 triage
 ├── refund  (context = user_input_only)
 ├── complaint
 │   └── escalation  (no_parent)
 └── billing  (dyn: given at run time)
 ```

 <div class="agentflow-diagram">
 <svg xmlns="http://www.w3.org/2000/svg" width="480.6" height="318" viewBox="0 0 480.6 318" role="img" aria-label="Desk: a tree of 5 agents" font-family="system-ui, -apple-system, 'Segoe UI', Helvetica, Arial, sans-serif"><title>Desk</title><defs><marker id="af-head" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#4a5568"/></marker><marker id="af-head-barred" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#b7472a"/></marker></defs><rect width="100%" height="100%" fill="#ffffff"/><path class="edge" data-from="triage" data-to="refund" d="M200.9,54 C200.9,82 71,82 71,110" fill="none" stroke="#4a5568" stroke-width="1.6" marker-start="url(#af-head)" marker-end="url(#af-head)"/><path class="edge" data-from="triage" data-to="complaint" d="M224.9,54 C224.9,82 209.4,82 209.4,110" fill="none" stroke="#4a5568" stroke-width="1.6" marker-start="url(#af-head)" marker-end="url(#af-head)"/><path class="edge barred" data-from="complaint" data-to="escalation" d="M209.4,148 C209.4,184 209.4,184 209.4,220" fill="none" stroke="#b7472a" stroke-width="1.6" stroke-dasharray="6 4" marker-end="url(#af-head-barred)"/><line x1="201.4" y1="203" x2="217.4" y2="203" stroke="#b7472a" stroke-width="2.4"/><path class="edge" data-from="triage" data-to="billing" d="M248.9,54 C248.9,82 378.7,82 378.7,110" fill="none" stroke="#4a5568" stroke-width="1.6" marker-start="url(#af-head)" marker-end="url(#af-head)"/><g class="agent" data-name="triage"><rect x="169.9" y="16" width="110" height="38" rx="8" fill="#ebf4ff" stroke="#2b6cb0" stroke-width="1.4"/><text x="224.9" y="40" text-anchor="middle" font-size="14" font-weight="700" fill="#1a202c">triage</text></g><g class="agent" data-name="refund"><rect x="16" y="110" width="110" height="38" rx="8" fill="#f7fafc" stroke="#4a5568" stroke-width="1.4"/><text x="71" y="134" text-anchor="middle" font-size="14" font-weight="700" fill="#1a202c">refund</text></g><g class="agent" data-name="complaint"><rect x="154.4" y="110" width="110" height="38" rx="8" fill="#f7fafc" stroke="#4a5568" stroke-width="1.4"/><text x="209.4" y="134" text-anchor="middle" font-size="14" font-weight="700" fill="#1a202c">complaint</text></g><g class="agent" data-name="escalation"><rect x="154" y="220" width="110.8" height="38" rx="8" fill="#f7fafc" stroke="#4a5568" stroke-width="1.4"/><text x="209.4" y="244" text-anchor="middle" font-size="14" font-weight="700" fill="#1a202c">escalation</text></g><g class="agent" data-name="billing"><rect x="292.8" y="110" width="171.8" height="54" rx="8" fill="#f7fafc" stroke="#4a5568" stroke-width="1.4"/><text x="378.7" y="134" text-anchor="middle" font-size="14" font-weight="700" fill="#1a202c">billing</text><text x="378.7" y="150" text-anchor="middle" font-size="12" font-style="italic" fill="#6b46c1">dyn: built at run time</text></g><g class="legend" font-size="12" fill="#4a5568"><line x1="16" y1="288" x2="52" y2="288" stroke="#4a5568" stroke-width="1.6" marker-start="url(#af-head)" marker-end="url(#af-head)"/><text x="60" y="292">transfers both ways</text><line x1="196" y1="288" x2="232" y2="288" stroke="#b7472a" stroke-width="1.6" stroke-dasharray="6 4" marker-end="url(#af-head-barred)"/><text x="240" y="292">barred from its parent</text></g></svg>
 </div>

 Boxes show each agent's name (the one a model uses), kind and description; agents declared in another file are shown by their identifier here, and with their real names and descriptions by [`Desk::svg`] (and, with those of agents given at run time, by `FlowAgent::to_svg`). [`Desk::mermaid`] and [`Desk::to_dot`] give the tree as Mermaid and Graphviz text.

 # Transfers

 Who may transfer to whom (its sub-agents, and its parent unless barred):

 | agent | may transfer to |
 | --- | --- |
 | `triage` | `refund`, `complaint`, `billing` |
 | `refund` | `triage` (parent) |
 | `complaint` | `escalation`, `triage` (parent) |
 | `escalation` | none (barred from its parent `complaint`) |
 | `billing` | `triage` (parent) |

 An agent declared `#[agent(no_parent)]` is barred from its parent too. Agent types are shown by their identifier, which is their name unless they were renamed with `#[agent(name = "...")]`; the agents' names are in [`Self::AGENTS`], the path from the root to each in [`Self::PATHS`], and the shape's fingerprint in [`Self::FINGERPRINT`]. A workflow node runs its sub-agents itself and never transfers; they are barred from it.*/
    #[derive(::core::fmt::Debug, ::core::clone::Clone)]
    #[allow(dead_code)]
    pub struct Desk {
        pub(super) flow: ::agentweave::__private::FlowAgent,
    }
    /// What the flow's items need to know of its agents' types, which only the call site
    /// can name: given there, by node (depth first from the root).
    pub(super) trait __AgentflowFacts {
        /// The agents' names.
        const AGENTS: &'static [&'static str];
        /// Whether each node is barred from transferring to its parent.
        const BARRED: &'static [bool];
        /// The agents' descriptions.
        const DESCRIPTIONS: &'static [&'static str];
        /// The transfers each agent declares (none for a `dyn` or workflow node).
        const TRANSFERS: &'static [&'static [&'static str]];
        /// Whether each agent is declared `#[agent(no_parent)]`.
        const NO_PARENT: &'static [bool];
        /// The result type each agent declares with `#[agent(returns = T)]`.
        const RETURNS: &'static [::core::option::Option<&'static str>];
        /// The payload type each agent receives (`#[agent(accepts = T)]`).
        const ACCEPTS: &'static [::core::option::Option<&'static str>];
        /// The payload types each agent's transfers carry.
        const TRANSFER_PAYLOADS: &'static [&'static [&'static str]];
        type __Agent0: ?::core::marker::Sized;
        type __Agent1: ?::core::marker::Sized;
        type __Agent2: ?::core::marker::Sized;
        const __PAYLOADS: ();
    }
    #[allow(dead_code)]
    impl Desk {
        /// The flow's name.
        pub const NAME: &'static str = "Desk";
        /// The names of the flow's agents, depth first from the root.
        pub const AGENTS: &'static [&'static str] = ::core::convert::identity(
            <Self as __AgentflowFacts>::AGENTS,
        );
        /// For each agent, the names of the agents from the root down to it: the path a
        /// resume follows to reach it.
        pub const PATHS: &'static [(&'static str, &'static [&'static str])] = &::agentweave::__private::paths::paths::<
            5usize,
        >(Self::AGENTS, Self::__PARENTS, &Self::__PATH_NAMES);
        #[doc(hidden)]
        pub const __PATH_NAMES: [&'static str; 10usize] = ::agentweave::__private::paths::path_names::<
            10usize,
        >(Self::AGENTS, Self::__PARENTS);
        /// The fingerprint of the flow's shape, computed at compile time; equal to
        /// `FlowAgent::fingerprint()` of the built tree.
        pub const FINGERPRINT: u64 = ::agentweave::__private::check::fingerprint(
            Self::AGENTS,
            Self::__BARRED,
            Self::__CHILDREN,
        );
        #[doc(hidden)]
        pub const __CHILDREN: &'static [&'static [usize]] = &[
            &[1usize, 2usize, 4usize],
            &[],
            &[3usize],
            &[],
            &[],
        ];
        #[doc(hidden)]
        pub const __PARENTS: &'static [::core::option::Option<usize>] = &[
            ::core::option::Option::None,
            ::core::option::Option::Some(0usize),
            ::core::option::Option::Some(0usize),
            ::core::option::Option::Some(2usize),
            ::core::option::Option::Some(0usize),
        ];
        #[doc(hidden)]
        pub const __BARRED: &'static [bool] = <Self as __AgentflowFacts>::BARRED;
        #[doc(hidden)]
        pub const __DESCRIPTIONS: &'static [&'static str] = <Self as __AgentflowFacts>::DESCRIPTIONS;
        #[doc(hidden)]
        pub const __NOTES: &'static [&'static str] = &[
            "",
            "",
            "",
            "",
            "dyn: built at run time",
        ];
        /// Not available: this flow has nodes whose agents are given at run time; use
        /// `builder()`.
        #[doc(hidden)]
        pub fn new<'__a>() -> ::core::result::Result<
            Self,
            ::agentweave::__private::FlowError,
        >
        where
            &'__a ::agentweave::__private::UseTheBuilder: ::agentweave::__private::NewNeedsNoAgents<
                Self,
            >,
        {
            ::core::unreachable!()
        }
        ///A builder of [`Desk`]: give it the agent of every `dyn` and `runtime` node, then call `build()`.
        pub fn builder() -> DeskBuilder {
            DeskBuilder::__agentflow_new()
        }
        /// The path from the root to the named agent (see [`Self::PATHS`]), or `None` if
        /// the flow has no such agent.
        pub fn path_of(
            agent_name: &str,
        ) -> ::core::option::Option<&'static [&'static str]> {
            let mut __i = 0;
            while __i < Self::PATHS.len() {
                if Self::PATHS[__i].0 == agent_name {
                    return ::core::option::Option::Some(Self::PATHS[__i].1);
                }
                __i += 1;
            }
            ::core::option::Option::None
        }
        /// The built tree, at its root.
        pub fn flow(&self) -> &::agentweave::__private::FlowAgent {
            &self.flow
        }
        /// The built tree, at its root.
        pub fn into_flow(self) -> ::agentweave::__private::FlowAgent {
            self.flow
        }
        /// A runner for this flow.
        pub fn runner(&self) -> ::agentweave::__private::Runner {
            ::agentweave::__private::Runner::new(::core::clone::Clone::clone(&self.flow))
        }
        /// The tree as a Mermaid flowchart: `<-->` where a sub-agent may transfer back to
        /// its parent, `-->` where it is barred.
        pub fn mermaid() -> ::agentweave::__private::String {
            ::agentweave::__private::render::mermaid(
                Self::AGENTS,
                Self::__PARENTS,
                Self::__BARRED,
            )
        }
        /// The tree as a standalone SVG document (the picture in this type's
        /// documentation): each agent's name, kind and description; a solid two-headed edge
        /// where a sub-agent may transfer back to its parent, a dashed one where it is
        /// barred. A `dyn` node's description is its doc comment in `flow!` (the built tree's
        /// `FlowAgent::to_svg` draws its agent's own).
        pub fn svg() -> ::agentweave::__private::String {
            ::agentweave::__private::render::svg(
                Self::NAME,
                Self::AGENTS,
                Self::__DESCRIPTIONS,
                Self::__NOTES,
                Self::__PARENTS,
                Self::__BARRED,
            )
        }
        /// The tree as a Graphviz digraph (`dir=both` where a sub-agent may transfer back
        /// to its parent).
        pub fn to_dot() -> ::agentweave::__private::String {
            ::agentweave::__private::render::dot(
                Self::NAME,
                Self::AGENTS,
                Self::__PARENTS,
                Self::__BARRED,
            )
        }
    }
    #[automatically_derived]
    impl ::core::convert::From<Desk> for ::agentweave::__private::FlowAgent {
        fn from(Desk { flow: __agentflow_flow }: Desk) -> Self {
            __agentflow_flow
        }
    }
    ///The agents of flow [`Desk`]; `Display` and `FromStr` use the agents' names.
    #[derive(
        ::core::fmt::Debug,
        ::core::clone::Clone,
        ::core::marker::Copy,
        ::core::cmp::PartialEq,
        ::core::cmp::Eq,
        ::core::hash::Hash
    )]
    #[allow(dead_code, clippy::enum_variant_names)]
    #[repr(usize)]
    pub enum DeskAgent {
        ///The agent of node `triage`.
        Triage,
        ///The agent of node `refund`.
        Refund,
        ///The agent of node `complaint`.
        Complaint,
        ///The agent of node `escalation`.
        Escalation,
        ///The agent of node `dyn billing`.
        Billing,
    }
    #[allow(dead_code)]
    impl DeskAgent {
        /// Every agent, depth first from the root.
        pub const ALL: &'static [Self] = &[
            DeskAgent::Triage,
            DeskAgent::Refund,
            DeskAgent::Complaint,
            DeskAgent::Escalation,
            DeskAgent::Billing,
        ];
        /// The agent's name.
        pub const fn name(self) -> &'static str {
            Desk::AGENTS[self as usize]
        }
        /// The names of the agents from the root down to this one.
        pub const fn path(self) -> &'static [&'static str] {
            Desk::PATHS[self as usize].1
        }
        /// The agent's parent in the flow, if it is not the root.
        pub const fn parent(self) -> ::core::option::Option<Self> {
            match Desk::__PARENTS[self as usize] {
                ::core::option::Option::Some(p) => {
                    ::core::option::Option::Some(Self::ALL[p])
                }
                ::core::option::Option::None => ::core::option::Option::None,
            }
        }
        /// The agent's sub-agents, in order.
        pub const fn children(self) -> &'static [Self] {
            Self::__CHILDREN[self as usize]
        }
        const __CHILDREN: &'static [&'static [Self]] = &[
            &[DeskAgent::Refund, DeskAgent::Complaint, DeskAgent::Billing],
            &[],
            &[DeskAgent::Escalation],
            &[],
            &[],
        ];
    }
    #[automatically_derived]
    impl ::core::fmt::Display for DeskAgent {
        fn fmt(&self, __f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
            __f.write_str(self.name())
        }
    }
    #[automatically_derived]
    impl ::core::str::FromStr for DeskAgent {
        type Err = ::agentweave::__private::UnknownAgent;
        fn from_str(__s: &str) -> ::core::result::Result<Self, Self::Err> {
            let mut __i = 0;
            while __i < Self::ALL.len() {
                if Self::ALL[__i].name() == __s {
                    return ::core::result::Result::Ok(Self::ALL[__i]);
                }
                __i += 1;
            }
            ::core::result::Result::Err(::agentweave::__private::UnknownAgent {
                flow: Desk::NAME,
                name: ::core::convert::From::from(__s),
                known: Desk::AGENTS,
            })
        }
    }
    ///The agents node `triage` of flow [`Desk`] may transfer to: the target type of its agent (its transfer enum, declared with `#[agent(transfers = [...])]`, which the flow checks against the node's sub-agents and parent).
    #[allow(dead_code, private_interfaces, private_bounds)]
    pub type DeskTriageTarget = <<Desk as __AgentflowFacts>::__Agent0 as ::agentweave::__private::AgentTargets>::Targets;
    ///The agents node `refund` of flow [`Desk`] may transfer to: the target type of its agent (its transfer enum, declared with `#[agent(transfers = [...])]`, which the flow checks against the node's sub-agents and parent).
    #[allow(dead_code, private_interfaces, private_bounds)]
    pub type DeskRefundTarget = <<Desk as __AgentflowFacts>::__Agent1 as ::agentweave::__private::AgentTargets>::Targets;
    ///The agents node `complaint` of flow [`Desk`] may transfer to: the target type of its agent (its transfer enum, declared with `#[agent(transfers = [...])]`, which the flow checks against the node's sub-agents and parent).
    #[allow(dead_code, private_interfaces, private_bounds)]
    pub type DeskComplaintTarget = <<Desk as __AgentflowFacts>::__Agent2 as ::agentweave::__private::AgentTargets>::Targets;
    ///node `escalation` of flow `Desk` may transfer nowhere: it is a leaf barred from its parent (`no_parent`), so it has no targets and its builder closure gets `FlowNode<NoTarget>`. To let it transfer, give it sub-agents (`escalation => [...]`) or remove `no_parent`
    #[doc(hidden)]
    #[deprecated(
        note = "node `escalation` of flow `Desk` may transfer nowhere: it is a leaf barred from its parent (`no_parent`), so it has no targets and its builder closure gets `FlowNode<NoTarget>`. To let it transfer, give it sub-agents (`escalation => [...]`) or remove `no_parent`"
    )]
    #[allow(dead_code)]
    pub enum DeskEscalationTarget {}
    ///The agents node `dyn billing` of flow [`Desk`] may transfer to: its sub-agents, and its parent unless the node is `no_parent` (if the agent itself is declared `#[agent(no_parent)]`, a transfer to the parent is refused at run time).
    #[derive(
        ::core::fmt::Debug,
        ::core::clone::Clone,
        ::core::marker::Copy,
        ::core::cmp::PartialEq,
        ::core::cmp::Eq
    )]
    #[allow(dead_code, clippy::enum_variant_names)]
    pub enum DeskBillingTarget {
        ///Transfer to `triage`, its parent.
        Triage,
    }
    #[allow(dead_code)]
    impl DeskBillingTarget {
        /// Every target, sub-agents first.
        pub const ALL: &'static [Self] = &[DeskBillingTarget::Triage];
        /// The target as an agent of the flow.
        pub const fn agent(self) -> DeskAgent {
            match self {
                DeskBillingTarget::Triage => DeskAgent::Triage,
            }
        }
        /// The name of the agent this target transfers to.
        pub const fn as_str(self) -> &'static str {
            self.agent().name()
        }
    }
    #[automatically_derived]
    impl ::core::fmt::Display for DeskBillingTarget {
        fn fmt(&self, __f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
            __f.write_str(self.as_str())
        }
    }
    #[automatically_derived]
    impl ::agentweave::__private::TransferTarget for DeskBillingTarget {
        const ALL: &'static [Self] = DeskBillingTarget::ALL;
        fn agent_name(self) -> &'static str {
            self.as_str()
        }
    }
    #[automatically_derived]
    impl ::agentweave::__private::AgentTransfer for DeskBillingTarget {
        type Agent = DeskBillingTarget;
    }
    #[automatically_derived]
    impl ::agentweave::__private::FlowPlaces<DeskBillingTarget> for Desk {
        const NODE: usize = 4usize;
    }
    #[allow(dead_code)]
    impl Desk {
        ///An expected trajectory of this flow, for `agentweave::eval` (which turns it into a `TrajectoryExpectation`): `Desk::trajectory().agent(DeskAgent::Triage).transfer(DeskTriageTarget::Refund)`. Agent steps take [`DeskAgent`], transfer steps a node's target enum, so only the flow's agents and the transfers it allows can be named.
        pub fn trajectory() -> ::agentweave::__private::TrajectorySpec<Self> {
            ::agentweave::__private::TrajectorySpec::__new(Self::NAME)
        }
        /// For each node, the nodes it may transfer to in the tree (its sub-agents, then its
        /// parent unless barred), for the compile-time checks of `trajectory!`.
        #[doc(hidden)]
        pub const __TRAJECTORY_TARGETS: &'static [&'static [usize]] = &[
            &[1usize, 2usize, 4usize],
            &[0usize],
            &[3usize, 0usize],
            &[],
            &[0usize],
        ];
        /// Whether each node is filled by an agent type, whose transfers are the ones it
        /// declared (`__TRAJECTORY_DECLARED`), for `trajectory!`.
        #[doc(hidden)]
        pub const __TRAJECTORY_TYPED: &'static [bool] = &[true, true, true, true, false];
        /// The transfers each node's agent type declares (none for a `dyn` node).
        #[doc(hidden)]
        pub const __TRAJECTORY_DECLARED: &'static [&'static [&'static str]] = <Self as __AgentflowFacts>::TRANSFERS;
        /// Each node as `trajectory!` may name it besides its agent's name: the node's
        /// identifier (`refund` for `#[agent(name = "refund-desk")] async fn refund`).
        #[doc(hidden)]
        pub const __LABELS: &'static [&'static str] = &[
            "triage",
            "refund",
            "complaint",
            "escalation",
            "billing",
        ];
    }
    #[automatically_derived]
    impl ::agentweave::__private::FlowNames for Desk {
        const AGENTS: &'static [&'static str] = Desk::AGENTS;
    }
    #[automatically_derived]
    impl ::agentweave::__private::FlowAgentOf<Desk> for DeskAgent {
        fn agent_name(self) -> &'static str {
            self.name()
        }
    }
    #[automatically_derived]
    impl<__T: ::agentweave::__private::FlowTransferOf<Desk>> ::core::convert::From<__T>
    for DeskAgent {
        fn from(__target: __T) -> Self {
            let __name = ::agentweave::__private::FlowTransferOf::<
                Desk,
            >::target_name(__target);
            let mut __i = 0;
            while __i < Self::ALL.len() - 1 && Self::ALL[__i].name() != __name {
                __i += 1;
            }
            Self::ALL[__i]
        }
    }
    ///A builder of [`Desk`]: call one setter per node whose agent is given at run time (`dyn billing`), then `build()`. Each type parameter is `Unset` until its setter is called.
    #[must_use]
    #[derive(::core::fmt::Debug)]
    #[allow(dead_code)]
    pub struct DeskBuilder<S0 = ::agentweave::__private::Unset> {
        pub(super) billing: S0,
    }
    ///Marker types naming the `dyn` and `runtime` nodes of [`Desk`] in the messages of its builder.
    #[doc(hidden)]
    #[allow(non_snake_case)]
    pub mod DeskNodes {
        #[allow(non_camel_case_types)]
        #[derive(::core::fmt::Debug)]
        pub struct billing;
    }
    #[allow(dead_code)]
    impl DeskBuilder {
        fn __agentflow_new() -> Self {
            DeskBuilder {
                billing: ::agentweave::__private::Unset,
            }
        }
    }
    #[doc(hidden)]
    #[allow(dead_code)]
    impl Desk {
        const __NAMES: ::agentweave::__private::check::NameIndex<5usize, 16usize> = ::agentweave::__private::check::name_index::<
            5usize,
            16usize,
        >(Self::AGENTS);
        const __CHECKED: ::agentweave::__private::check::FlowFacts<'static> = ::agentweave::__private::check::FlowFacts {
            flow: "Desk",
            agents: Self::AGENTS,
            nodes: &["triage", "refund", "complaint", "escalation", "dyn billing"],
            parents: Self::__PARENTS,
            children: Self::__CHILDREN,
            marked_no_parent: &[false, false, false, true, false],
            task: &[false, false, false, false, false],
            delegated: &[false, false, false, false, false],
            workflows: &["", "", "", "", ""],
            transfers: <Self as __AgentflowFacts>::TRANSFERS,
            no_parent: <Self as __AgentflowFacts>::NO_PARENT,
            returns: <Self as __AgentflowFacts>::RETURNS,
            accepts: <Self as __AgentflowFacts>::ACCEPTS,
            payloads: <Self as __AgentflowFacts>::TRANSFER_PAYLOADS,
            earlier: &Self::__NAMES.earlier,
            hashes: &Self::__NAMES.hashes,
            slots: &Self::__NAMES.slots,
            unique: Self::__NAMES.unique,
        };
        const __FAILING: [bool; 5usize] = ::agentweave::__private::check::failing::<
            5usize,
        >(&Self::__CHECKED);
    }
    #[doc(hidden)]
    pub(super) const __AGENTFLOW_PAYLOAD_AT: [usize; 6usize] = ::agentweave::__private::check::payload_positions::<
        6usize,
    >(
        &Desk::__CHECKED,
        &[
            (0usize, 1usize),
            (1usize, 0usize),
            (0usize, 2usize),
            (2usize, 0usize),
            (2usize, 3usize),
            (3usize, 2usize),
        ],
    );
    #[doc(hidden)]
    #[track_caller]
    const fn __agentflow_fits(node: usize) {
        if Desk::__FAILING[node] {
            Desk::__CHECKED.assert_node(node)
        }
    }
    #[doc(hidden)]
    #[allow(dead_code)]
    const triage_fits_this_flow: () = __agentflow_fits(0usize);
    #[doc(hidden)]
    #[allow(dead_code)]
    const refund_fits_this_flow: () = __agentflow_fits(1usize);
    #[doc(hidden)]
    #[allow(dead_code)]
    const complaint_fits_this_flow: () = __agentflow_fits(2usize);
    #[doc(hidden)]
    #[allow(dead_code)]
    const escalation_fits_this_flow: () = __agentflow_fits(3usize);
    #[doc(hidden)]
    #[allow(dead_code)]
    const billing_fits_this_flow: () = __agentflow_fits(4usize);
}
#[allow(unused_imports)]
pub use desk_flow::*;
#[allow(unused_imports)]
pub use desk_flow::Desk as Desk;
#[automatically_derived]
#[allow(unused_parens)]
impl desk_flow::__AgentflowFacts for desk_flow::Desk {
    const AGENTS: &'static [&'static str] = &[
        <triage as ::agentweave::__private::AgentSpec>::NAME,
        <refund as ::agentweave::__private::AgentSpec>::NAME,
        <complaint as ::agentweave::__private::AgentSpec>::NAME,
        <escalation as ::agentweave::__private::AgentSpec>::NAME,
        "billing",
    ];
    const BARRED: &'static [bool] = &[
        <triage as ::agentweave::__private::AgentSpec>::NO_PARENT,
        <refund as ::agentweave::__private::AgentSpec>::NO_PARENT,
        <complaint as ::agentweave::__private::AgentSpec>::NO_PARENT,
        true,
        false,
    ];
    const DESCRIPTIONS: &'static [&'static str] = &[
        <triage as ::agentweave::__private::AgentSpec>::DESCRIPTION,
        <refund as ::agentweave::__private::AgentSpec>::DESCRIPTION,
        <complaint as ::agentweave::__private::AgentSpec>::DESCRIPTION,
        <escalation as ::agentweave::__private::AgentSpec>::DESCRIPTION,
        "",
    ];
    const TRANSFERS: &'static [&'static [&'static str]] = &[
        <triage as ::agentweave::__private::AgentSpec>::TRANSFERS,
        <refund as ::agentweave::__private::AgentSpec>::TRANSFERS,
        <complaint as ::agentweave::__private::AgentSpec>::TRANSFERS,
        <escalation as ::agentweave::__private::AgentSpec>::TRANSFERS,
        &[],
    ];
    const NO_PARENT: &'static [bool] = &[
        <triage as ::agentweave::__private::AgentSpec>::NO_PARENT,
        <refund as ::agentweave::__private::AgentSpec>::NO_PARENT,
        <complaint as ::agentweave::__private::AgentSpec>::NO_PARENT,
        <escalation as ::agentweave::__private::AgentSpec>::NO_PARENT,
        false,
    ];
    const RETURNS: &'static [::core::option::Option<&'static str>] = &[
        <triage as ::agentweave::__private::AgentSpec>::RETURNS,
        <refund as ::agentweave::__private::AgentSpec>::RETURNS,
        <complaint as ::agentweave::__private::AgentSpec>::RETURNS,
        <escalation as ::agentweave::__private::AgentSpec>::RETURNS,
        ::core::option::Option::None,
    ];
    const ACCEPTS: &'static [::core::option::Option<&'static str>] = &[
        <triage as ::agentweave::__private::AgentSpec>::ACCEPTS,
        <refund as ::agentweave::__private::AgentSpec>::ACCEPTS,
        <complaint as ::agentweave::__private::AgentSpec>::ACCEPTS,
        <escalation as ::agentweave::__private::AgentSpec>::ACCEPTS,
        ::core::option::Option::None,
    ];
    const TRANSFER_PAYLOADS: &'static [&'static [&'static str]] = &[
        <triage as ::agentweave::__private::AgentSpec>::TRANSFER_PAYLOADS,
        <refund as ::agentweave::__private::AgentSpec>::TRANSFER_PAYLOADS,
        <complaint as ::agentweave::__private::AgentSpec>::TRANSFER_PAYLOADS,
        <escalation as ::agentweave::__private::AgentSpec>::TRANSFER_PAYLOADS,
        &[],
    ];
    type __Agent0 = (triage);
    type __Agent1 = (refund);
    type __Agent2 = (complaint);
    #[allow(unused_parens)]
    const __PAYLOADS: () = {
        ::agentweave::__private::same_payload::<
            (triage),
            (refund),
            { desk_flow::__AGENTFLOW_PAYLOAD_AT[0usize] },
        >();
        ::agentweave::__private::same_payload::<
            (refund),
            (triage),
            { desk_flow::__AGENTFLOW_PAYLOAD_AT[1usize] },
        >();
        ::agentweave::__private::same_payload::<
            (triage),
            (complaint),
            { desk_flow::__AGENTFLOW_PAYLOAD_AT[2usize] },
        >();
        ::agentweave::__private::same_payload::<
            (complaint),
            (triage),
            { desk_flow::__AGENTFLOW_PAYLOAD_AT[3usize] },
        >();
        ::agentweave::__private::same_payload::<
            (complaint),
            (escalation),
            { desk_flow::__AGENTFLOW_PAYLOAD_AT[4usize] },
        >();
        ::agentweave::__private::same_payload::<
            (escalation),
            (complaint),
            { desk_flow::__AGENTFLOW_PAYLOAD_AT[5usize] },
        >();
    };
}
#[automatically_derived]
#[allow(unused_parens)]
impl ::agentweave::__private::FlowPlaces<(triage)> for desk_flow::Desk {
    const NODE: usize = 0usize;
}
#[automatically_derived]
#[allow(unused_parens)]
impl ::agentweave::__private::FlowPlaces<(refund)> for desk_flow::Desk {
    const NODE: usize = 1usize;
}
#[automatically_derived]
#[allow(unused_parens)]
impl ::agentweave::__private::FlowPlaces<(complaint)> for desk_flow::Desk {
    const NODE: usize = 2usize;
}
#[allow(dead_code)]
impl<S0> desk_flow::DeskBuilder<S0> {
    ///Gives the `dyn` node `billing` its agent: the closure is called with the node (its name and its legal transfer targets, [`DeskBillingTarget`]) and returns the agent, which takes its name from the node, as in `ChatModelAgent::builder(node, model)`. `build()` checks that the agent carries the node's name.
    pub fn billing<__M, __A>(
        self,
        __agentflow_make: __M,
    ) -> desk_flow::DeskBuilder<
        ::agentweave::__private::Set<::agentweave::__private::DynAgent>,
    >
    where
        S0: ::agentweave::__private::NotGiven<
            desk_flow::Desk,
            desk_flow::DeskNodes::billing,
        >,
        __M: ::agentweave::__private::NodeMaker<
            desk_flow::Desk,
            desk_flow::DeskNodes::billing,
            desk_flow::DeskBillingTarget,
            __A,
        >,
        __A: ::agentweave::__private::NodeAgent<
            desk_flow::Desk,
            desk_flow::DeskNodes::billing,
        >,
    {
        let __agent = __agentflow_make(
            ::agentweave::__private::FlowNode::__new(
                "Desk",
                "billing",
                <desk_flow::DeskBillingTarget as ::agentweave::__private::TransferTarget>::ALL,
            ),
        );
        desk_flow::DeskBuilder {
            billing: ::agentweave::__private::Set(
                ::agentweave::__private::DynAgent(
                    ::agentweave::__private::Arc::new(__agent),
                ),
            ),
        }
    }
    #[doc(hidden)]
    pub fn triage<__X>(self, _: __X) -> Self
    where
        __X: ::agentweave::__private::NoSetter<desk_flow::Desk, triage>,
    {
        self
    }
    #[doc(hidden)]
    pub fn refund<__X>(self, _: __X) -> Self
    where
        __X: ::agentweave::__private::NoSetter<desk_flow::Desk, refund>,
    {
        self
    }
    #[doc(hidden)]
    pub fn complaint<__X>(self, _: __X) -> Self
    where
        __X: ::agentweave::__private::NoSetter<desk_flow::Desk, complaint>,
    {
        self
    }
    #[doc(hidden)]
    pub fn escalation<__X>(self, _: __X) -> Self
    where
        __X: ::agentweave::__private::NoSetter<desk_flow::Desk, escalation>,
    {
        self
    }
}
#[allow(dead_code)]
impl<S0> desk_flow::DeskBuilder<S0> {
    /**Builds the flow's tree: bottom-up, each agent's node given its options and then its sub-agents, exactly as `set_sub_agents` calls written by hand would.

# Errors

If a `dyn` node's agent has another name than the node, or an agent's `OnSubAgents` hook refuses its place in the tree.*/
    #[allow(unused_parens)]
    pub fn build(
        self,
    ) -> ::core::result::Result<desk_flow::Desk, ::agentweave::__private::FlowError>
    where
        S0: ::agentweave::__private::DynGiven<
            desk_flow::Desk,
            desk_flow::DeskNodes::billing,
        >,
    {
        let __agentflow_slot_billing = ::agentweave::__private::DynGiven::<
            desk_flow::Desk,
            desk_flow::DeskNodes::billing,
        >::into_agent(self.billing);
        if ::agentweave::__private::Agent::name(&*__agentflow_slot_billing.0)
            != "billing"
        {
            return ::core::result::Result::Err(::agentweave::__private::FlowError::NodeNameMismatch {
                flow: ::core::convert::From::from("Desk"),
                node: ::core::convert::From::from("billing"),
                agent: ::core::convert::From::from(
                    ::agentweave::__private::Agent::name(&*__agentflow_slot_billing.0),
                ),
            });
        }
        ::core::result::Result::Ok(desk_flow::Desk {
            flow: ::agentweave::__private::FlowAgent::with_flow_description(
                ::agentweave::__private::set_sub_agents(
                    ::agentweave::__private::flow_built_node(
                        ::core::marker::PhantomData::<(triage)>,
                        false,
                    ),
                    [
                        ::agentweave::__private::flow_built_node(
                                ::core::marker::PhantomData::<(refund)>,
                                false,
                            )
                            .context(
                                ::agentweave::__private::ContextPolicy::UserInputOnly,
                            ),
                        ::agentweave::__private::set_sub_agents(
                            ::agentweave::__private::flow_built_node(
                                ::core::marker::PhantomData::<(complaint)>,
                                false,
                            ),
                            [
                                ::agentweave::__private::flow_built_node(
                                    ::core::marker::PhantomData::<(escalation)>,
                                    true,
                                ),
                            ],
                        )?,
                        ::agentweave::__private::FlowAgent::from_arc(
                                __agentflow_slot_billing.0,
                            )
                            .disallow_transfer_to_parent(false),
                    ],
                )?,
                "The desk.",
            ),
        })
    }
}
