//! [`AgentSpec`] and [`FlowBuilt`]: the static facts of an agent type, read by `flow!`.

use crate::agent::Agent;

/// The static facts of an agent type, known at compile time.
///
/// It asks nothing of the type's behaviour (that is [`Agent`]'s), so a type whose `Agent`
/// impl is missing is reported once, where it is declared, not at every fact a flow reads.
/// `#[agent]` implements it; `flow!` reads it in `const` items to check a tree. Implement it by
/// hand only for an agent type whose facts are fixed; an agent whose name is chosen at run time
/// fills a `dyn` node of a flow instead.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an agent type, so it cannot be a node of a `flow!`",
    label = "not an agent",
    note = "a node of `flow!` names a type made with `#[agent]` (on an async fn or a struct), \
            or one that implements `AgentSpec`",
    note = "for an agent built at run time (a model agent holding a client), write the node as \
            `dyn NAME` and give the agent to the flow's builder"
)]
pub trait AgentSpec {
    /// The agent's name: unique within a tree, used for transfers and run paths.
    const NAME: &'static str;
    /// What the agent does (its doc comment, for `#[agent]`).
    const DESCRIPTION: &'static str;
    /// The agents it may transfer to, by name, as declared with `#[agent(transfers = [...])]`.
    const TRANSFERS: &'static [&'static str];
    /// Whether the agent never transfers to its parent (`#[agent(no_parent)]`): every node it
    /// fills is barred from its parent.
    const NO_PARENT: bool;
    /// The name of the result type the agent returns to its parent when it finishes a task
    /// (`#[agent(returns = T)]`), if it declares one (see [`Returns`](super::Returns)).
    const RETURNS: Option<&'static str> = None;
    /// The name of the payload type the agent receives with a transfer to it
    /// (`#[agent(accepts = T)]`), if it declares one.
    const ACCEPTS: Option<&'static str> = None;
    /// Makes the [`Payload`](crate::Payload) it declares, if any (the node's
    /// [`FlowAgent::payload`](crate::FlowAgent::payload)).
    const PAYLOAD: Option<fn() -> crate::Payload> = None;
    /// For each of [`TRANSFERS`](AgentSpec::TRANSFERS), the name of the payload type its
    /// transfer carries (`transfers = [refund(RefundRequest)]`), or `""`; empty when none
    /// carries one.
    const TRANSFER_PAYLOADS: &'static [&'static str] = &[];
    /// The skill folders the agent declares (`#[agent(skills = ["skills/pdf-forms"])]`),
    /// checked and embedded when the crate compiled; `agentweave::kit::Skills::of::<A>()` makes
    /// them the agent's skills.
    const SKILLS: &'static [agentweave_skill::EmbeddedSkill] = &[];
}

/// An agent a flow can build on its own: a node of `flow!` that names the type gets
/// [`instance`](FlowBuilt::instance).
///
/// `#[agent]` implements it for agent fns and unit structs. An agent that holds state (a
/// client, a configuration) fills a `runtime` node instead, and the flow's builder is given its
/// value; implement this trait only if the agent has one obvious value.
#[diagnostic::on_unimplemented(
    message = "a flow cannot build `{Self}` on its own",
    label = "the flow would have to make a `{Self}` itself",
    note = "if `{Self}` is an #[agent] struct that holds state, mark the node `runtime`, as in \
            `{Self}(runtime)`, and give the value to the flow's builder; or implement \
            `FlowBuilt` for `{Self}` if it has one obvious value",
    note = "if `{Self}` is not an agent type at all, put #[agent] on it (see the error about \
            `AgentSpec`)"
)]
pub trait FlowBuilt: AgentSpec + Agent + Sized {
    /// The agent's value.
    fn instance() -> Self;
}

/// The node of a flow that runs `agent`: barred from its parent or not, given the payload the
/// agent type declares. What `flow!`'s `build()` writes for each agent-type node, written once
/// here instead of once per node.
#[doc(hidden)]
pub fn flow_node<A: AgentSpec + Agent>(agent: A, barred: bool) -> crate::agent::FlowAgent {
    crate::agent::FlowAgent::new(agent)
        .disallow_transfer_to_parent(barred)
        .payload(A::PAYLOAD.map(|make| make()))
}

/// The node of a flow that runs the agent type `A`, made by [`FlowBuilt::instance`], barred
/// from its parent if the flow marks it so or `A` is declared `no_parent`: what
/// `flow!`'s `build()` writes for each node naming an agent type. Through this one bound a type
/// the flow cannot build is one error, not one per bound of `instance`; `flow!` names `A` in a
/// `PhantomData` type, where a fn written as a node is one "not a type" error. Not a public API.
#[doc(hidden)]
pub fn flow_built_node<A: FlowBuilt>(
    _agent: core::marker::PhantomData<A>,
    marked_no_parent: bool,
) -> crate::agent::FlowAgent {
    flow_node(A::instance(), marked_no_parent || A::NO_PARENT)
}
