//! The vocabulary of a tree and of the code `#[agent]` and `flow!` generate: what an agent
//! type declares ([`AgentSpec`](crate::AgentSpec), [`FlowBuilt`], [`IntoOutcome`]), a flow's
//! nodes and their options ([`FlowNode`], [`NodeOptions`], [`AgentInfo`]), transfer targets
//! and typed payloads ([`TransferTarget`], [`Payload`], [`Accepts`]), delegation
//! ([`Delegation`], [`Returns`], [`Finish`], [`TaskResult`]), a flow's shape fingerprint
//! ([`fingerprint_of`]), and expected trajectories ([`expected`]).

pub use flow_runtime::spec::expected;
pub use flow_runtime::{
    fingerprint_of, Accepts, AgentInfo, Delegation, Finish, FlowBuilt, FlowNode, IntoOutcome,
    NoPayload, NoTarget, NodeOptions, OnSubAgents, Payload, Returns, TaskResult, TransferTarget,
    UnknownAgent,
};
