//! Typed `map` nodes of `flow!`: [`MapAgent`] (an agent whose item type is declared, the one a
//! map hands it), [`map_payload`] (the payload a `map(payload)` node accepts: a list of those
//! items) and [`MapOver`] (the map node as a transfer target, whose payload type `flow!`
//! compares with what its sender sends).
//!
//! A map's agent declares the item it takes with `#[agent(accepts = Ticket)]` and the result it
//! gives with `#[agent(returns = Outcome)]`. The map then checks each item against `Ticket`
//! before running it (an item that is not one fails as that item), hands it to the agent as its
//! payload (`cx.payload::<Self>()`), and an item that ends with `Finish(outcome)` has `outcome`
//! as its result ([`MapOutput::results_of`](crate::workflow::MapOutput::results_of) reads them
//! typed). `flow!` checks the types it can see at compile time: a `map(payload)` node's agent
//! must declare its item type, and the agent that transfers to the map must send a list of it.

use std::marker::PhantomData;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::Serialize;

use super::{Accepts, AgentSpec, AgentTargets, NoTarget};
use crate::agent::Payload;

/// An agent a map can run over typed items: one that declares the item type it takes with
/// `#[agent(accepts = T)]` (every such agent is one).
#[diagnostic::on_unimplemented(
    message = "agent `{Self}` declares no item type, so a `map(payload)` node cannot run it over \
               the items of the transfer's payload",
    label = "`{Self}` has no `accepts = ...`",
    note = "declare the item it takes with `#[agent(accepts = Ticket)]` (a type with serde's \
            Serialize and Deserialize and schemars' JsonSchema): the map then accepts a \
            `Vec<Ticket>` with the transfer to it, and `{Self}` reads its item with \
            `cx.payload::<Self>()`",
    note = "or take the items from elsewhere: `map(last_output)` (the previous agent's answer) \
            or `map(value = \"KEY\")` (a session value)"
)]
pub trait MapAgent: AgentSpec {
    /// The item type it takes.
    type Item: DeserializeOwned + Serialize + JsonSchema + 'static;
}

#[diagnostic::do_not_recommend]
impl<A> MapAgent for A
where
    A: Accepts,
    A::Payload: Serialize + JsonSchema,
{
    type Item = A::Payload;
}

/// The payload a `map(payload)` node whose agent is `A` accepts: a list of `A`'s items, as a
/// JSON array (what `flow!` gives such a node; a map built in code declares it with
/// `FlowAgent::accepts::<Vec<Item>>()`).
///
/// ```
/// # use agentweave_runtime::spec::{AgentSpec, Accepts};
/// # struct Refund;
/// # impl AgentSpec for Refund {
/// #     const NAME: &'static str = "refund";
/// #     const DESCRIPTION: &'static str = "";
/// #     const TRANSFERS: &'static [&'static str] = &[];
/// #     const NO_PARENT: bool = false;
/// # }
/// # impl Accepts for Refund { type Payload = u32; }
/// let payload = agentweave_runtime::spec::map_payload::<Refund>();
/// assert!(payload.check(&serde_json::json!([1, 2])).is_ok());
/// assert!(payload.check(&serde_json::json!(["one"])).is_err());
/// ```
pub fn map_payload<A: MapAgent>() -> Payload {
    Payload::of::<Vec<A::Item>>()
}

/// A `map(payload)` node of a flow whose agent is `A`, seen as the target of a transfer: it
/// accepts a `Vec` of `A`'s items, which `flow!` compares (by type, through
/// [`same_payload`](super::same_payload)) with the payload the transferring agent declares.
/// Not a public API.
#[doc(hidden)]
pub struct MapOver<A: ?Sized>(PhantomData<fn() -> Box<A>>);

impl<A: MapAgent> AgentTargets for MapOver<A> {
    type Targets = NoTarget;
    type Accepts = Vec<A::Item>;
}

/// Holds when agent `From`'s transfer to a `map(payload)` node over agent `A` sends the list
/// of items the map takes (`Vec` of `A`'s item type): `flow!` asserts it through
/// [`same_items`]. Not a public API.
#[doc(hidden)]
#[diagnostic::on_unimplemented(
    message = "agent `{From}` sends a `{Sent}` with its transfer to the map over agent `{A}`, \
               but the map takes a `{Expected}`, a list of the items `{A}` takes",
    label = "`{From}` sends `{Sent}` to the map over `{A}`, which takes `{Expected}`",
    note = "send the items the map's agent takes, as in `#[agent(transfers = [map_name({Expected})])]` \
            (an alias or an import of a type is that type), or change the item type `{A}` \
            declares with `#[agent(accepts = ...)]`"
)]
pub trait SameItems<From: ?Sized, A: ?Sized, Sent: ?Sized, Expected: ?Sized> {}

#[diagnostic::do_not_recommend]
impl<F: ?Sized, A: ?Sized, P: ?Sized> SameItems<F, A, P, P> for super::PayloadCheck {}

/// Compiles only if agent `F`'s `K`-th declared transfer, to a `map(payload)` node over agent
/// `A`, sends a list of `A`'s items: what `flow!` calls for an agent and its `map(payload)`
/// sub-agent (`K` is `usize::MAX` where there is nothing to compare). Not a public API.
#[doc(hidden)]
pub const fn same_items<F: ?Sized + super::SendsAt<K, MapOver<A>>, A: ?Sized, const K: usize>()
where
    super::PayloadCheck: SameItems<F, A, F::Sent, F::Expected>,
{
}
