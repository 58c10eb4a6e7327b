//! The vocabulary of a tree and of the code `#[agent]` and `flow!` generate: what an agent
//! type declares ([`AgentSpec`](crate::AgentSpec), [`FlowBuilt`], [`IntoOutcome`]), a flow's
//! nodes and their options ([`FlowNode`], [`NodeOptions`], [`AgentInfo`]), transfer targets
//! and typed payloads ([`TransferTarget`], [`Payload`], [`Accepts`]), delegation
//! ([`Delegation`], [`Returns`], [`Finish`], [`TaskResult`]), a flow's shape fingerprint
//! ([`fingerprint_of`]), and expected trajectories ([`expected`]).

pub use agentweave_runtime::{
    fingerprint_of, Accepts, AgentInfo, Delegation, Finish, FlowBuilt, FlowNode, IntoOutcome,
    NoPayload, NoTarget, NodeOptions, OnSubAgents, Payload, Returns, TaskResult, TransferTarget,
    UnknownAgent,
};

/// Expected trajectories written against a flow's generated types: [`TrajectorySpec`]
/// (`Flow::trajectory()`, or the [`trajectory!`](crate::trajectory!) macro). Its agent steps
/// take the flow's agent enum and its transfer steps a node's target enum, so an expectation
/// naming an agent the flow does not have, or a transfer it does not allow, does not compile.
/// The `eval` module (cargo feature `eval`) scores runs against it.
///
/// [`TrajectorySpec`]: crate::spec::expected::TrajectorySpec
pub mod expected {
    pub use agentweave_runtime::spec::expected::{
        ExpectedArgs, ExpectedMode, ExpectedStep, FlowAgentOf, FlowTransferOf, TrajectorySpec,
    };
}
