//! Static facts of agents and what agent bodies written with `#[agent]` use.
//!
//! The `agentweave` facade's `#[agent]` and `flow!` macros build on the items here:
//!
//! - [`AgentSpec`]: an agent type's name, description, declared transfer targets and whether it
//!   is barred from its parent, as associated consts, so a tree can be checked by the compiler.
//! - [`AgentContext`]: what an `#[agent]` body emits through. It has no way to transfer by name:
//!   a body transfers by returning a variant of its generated transfer enum.
//! - [`IntoOutcome`]: what an `#[agent]` body may return: `()`, [`Exit`], its own transfer enum,
//!   or an [`Option`] or [`AgentResult`] of one of these.
//! - [`TransferTarget`]: implemented by the generated transfer enums.
//!
//! The [`check`] module holds the `const fn`s the generated code evaluates at compile time.
//!
//! Files, one concept each:
//!
//! - `agent_spec.rs`: [`AgentSpec`] and [`FlowBuilt`], the facts of an agent type.
//! - `body.rs`: [`run_body`], the glue around an `#[agent]` fn's body, written once.
//! - `context.rs`: [`AgentContext`], the context of an `#[agent]` body.
//! - `outcome.rs`: [`AgentResult`], [`Exit`], [`IntoOutcome`]: what a body returns.
//! - `target.rs`: [`TransferTarget`], [`NoTarget`] and [`transfer`]: where a body may go.
//! - `builder.rs`: the facts of a flow's builder: slots, [`FlowNode`], [`UnknownAgent`].
//! - `payload.rs`: [`Accepts`], [`AgentContext::payload`] and the payload types `flow!`
//!   compares: typed transfer payloads.
//! - `task.rs`: [`Returns`], [`Finish`] and [`AgentContext::task_result`]: typed delegation.
//! - `map_items.rs`: [`MapAgent`] and [`map_payload`]: the item types of typed `map` nodes.
//! - `render.rs`: text renderings of a flow's tree (Mermaid, SVG, Graphviz).
//! - `check.rs`: the compile-time checks `flow!` evaluates, with their messages.
//! - `paths.rs`: each agent's path from the root, as `flow!`'s `PATHS`, computed at compile time.
//! - `expected.rs`: [`TrajectorySpec`](expected::TrajectorySpec), an expected trajectory
//!   written against a flow's generated types (`Flow::trajectory()`), for `agentweave-eval`.

mod agent_spec;
mod body;
mod builder;
mod context;
mod map_items;
mod outcome;
mod payload;
mod target;
mod task;

#[doc(hidden)]
pub mod check;
pub mod expected;
#[doc(hidden)]
pub mod paths;
#[doc(hidden)]
pub mod render;

pub use agent_spec::{flow_built_node, flow_node, AgentSpec, FlowBuilt};
#[doc(hidden)]
pub use body::{
    body_future, run_body, run_body_cx, run_boxed, run_boxed_input, AgentBody, AgentFnBody,
    AgentFnBodyCx, BodyFuture,
};
pub use builder::{
    DynAgent, DynGiven, FlowNode, NewNeedsNoAgents, NoSetter, NodeAgent, NodeMaker, NotGiven,
    RemoteGiven, RuntimeGiven, Set, UnknownAgent, Unset, UseTheBuilder,
};
pub use context::AgentContext;
pub use map_items::{map_payload, MapAgent};
#[doc(hidden)]
pub use map_items::{same_items, MapOver, SameItems};
pub use outcome::{AgentResult, Exit, IntoOutcome};
#[doc(hidden)]
pub use payload::{same_payload, PayloadCheck, SamePayload, SendsAt};
pub use payload::{Accepts, NoPayload};
pub use target::{transfer, transfer_named, transfer_with, NoTarget, TransferTarget};
#[doc(hidden)]
pub use target::{AgentTargets, AgentTransfer, TargetTable};
pub use task::{Finish, ResultOf, Returns};
