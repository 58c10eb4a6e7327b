//! The Agent2Agent (A2A) protocol for agentflow.
//!
//! A2A is the protocol agents of different frameworks talk to each other with: an agent
//! publishes an [`AgentCard`](wire::AgentCard) at `/.well-known/agent-card.json`, and takes
//! JSON-RPC 2.0 calls (`SendMessage`, `SendStreamingMessage`, `GetTask`, `CancelTask`,
//! `SubscribeToTask`) whose streamed answers are Server-Sent Events. This crate speaks the
//! protocol's version 1.0, the version the official SDKs (`a2a-sdk` 1.x on PyPI,
//! `@a2a-js/sdk` 1.x on npm) speak.
//!
//! - [`wire`]: the protocol's JSON objects (card, message, part, task, stream events) as serde
//!   types, in the ProtoJSON form of the specification (camelCase fields, enum names such as
//!   `TASK_STATE_INPUT_REQUIRED`).
//! - [`meta`]: agentflow's entry in A2A metadata (who said a message, at which run path).
//! - [`rpc`]: the JSON-RPC envelope, the method names and the A2A error codes.
//!
//! - [`A2aClient`] and [`A2aAgent`] (feature `client`, on by default): a remote A2A agent
//!   called with the bounds of agentweave-runtime's HTTP models, and the same agent as a node of a
//!   tree (its events at the node's run path, its `input-required` an interrupt resumed
//!   through the remote task, its completion the node's end and a transfer back).
//!
//! `agentweave-server` serves any flow as an A2A agent with these types (its `a2a` module).
#![warn(missing_docs)]

// Layout (one concept per file):
// - `wire`: the protocol's objects (agent card, message, part, task, artifact, stream events).
// - `meta`: agentflow's entry in A2A metadata (the agent and run path of a message).
// - `client`: `A2aClient`, bounded calls to a remote agent, and `A2aError`.
// - `agent`: `A2aAgent`, a remote agent as an agent of a tree.
// - `rpc`: JSON-RPC 2.0 requests, responses, method names and error codes.

#[cfg(feature = "client")]
mod agent;
#[cfg(feature = "client")]
mod client;
pub mod meta;
pub mod rpc;
pub mod wire;

#[cfg(feature = "client")]
pub use agent::{describe, A2aAgent};
#[cfg(feature = "client")]
pub use client::{A2aClient, A2aError};

/// The A2A protocol version this crate speaks (the `A2A-Version` header's value).
pub const PROTOCOL_VERSION: &str = "1.0";

/// The path of an agent's card, relative to the agent's base URL.
pub const AGENT_CARD_PATH: &str = "/.well-known/agent-card.json";

/// The HTTP header naming the protocol version a request speaks.
pub const VERSION_HEADER: &str = "A2A-Version";
