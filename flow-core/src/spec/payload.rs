//! Typed transfer payloads for `#[agent]` bodies: [`Accepts`] (the payload an agent declares it
//! receives, `#[agent(accepts = T)]`), [`AgentContext::payload`] (reading it, typed by that
//! declaration), and the type-level comparison `flow!` makes between the payload a sender's
//! transfer carries and the one its target accepts ([`SendsAt`], [`SamePayload`]).
//!
//! The payload types are compared by the trait system, not by their spelling: an alias or an
//! import of one type is that type, and two types of the same name in two modules are two types.

use serde::de::DeserializeOwned;

use super::{AgentContext, AgentResult, AgentSpec};
use crate::event::AgentError;

/// The payload an agent receives with a transfer to it: `#[agent(accepts = T)]` implements it.
/// A body reads it with [`AgentContext::payload`], whose type comes from here.
#[diagnostic::on_unimplemented(
    message = "agent `{Self}` declares no payload, so a transfer to it carries none to read",
    label = "`{Self}` has no `accepts = ...`",
    note = "declare what the agent receives with `#[agent(accepts = RefundRequest)]` (a type \
            with serde's Serialize and Deserialize), and send it from the agent that transfers \
            to it with `#[agent(transfers = [refund(RefundRequest)])]`"
)]
pub trait Accepts: AgentSpec {
    /// The payload type it receives.
    type Payload: DeserializeOwned + 'static;
}

/// Stands for "no payload" where `flow!` compares the payload a transfer carries with the one
/// its target accepts: a sender that sends none, or a target that declares none.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NoPayload {}

/// The payload agent `Self` sends with its `K`-th declared transfer, to an agent `To`, and the
/// one `To` accepts: `#[agent(transfers = [refund(RefundRequest)])]` implements it for each
/// transfer that carries a payload; `K = usize::MAX` (a transfer `flow!` does not compare)
/// gives [`NoPayload`] on both sides. Not a public API.
#[doc(hidden)]
pub trait SendsAt<const K: usize, To: ?Sized> {
    /// The payload the transfer carries.
    type Sent: ?Sized;
    /// The payload `To` accepts.
    type Expected: ?Sized;
}

impl<A: ?Sized, To: ?Sized> SendsAt<{ usize::MAX }, To> for A {
    type Sent = NoPayload;
    type Expected = NoPayload;
}

/// Holds when agent `From`'s transfer to agent `To` sends the payload type `To` accepts:
/// `flow!` asserts it (through [`same_payload`]) for each transfer between two agent types of a flow where both sides
/// declare a payload (a side that declares none is reported by the flow's own checks, naming
/// what to write). Not a public API.
#[doc(hidden)]
#[diagnostic::on_unimplemented(
    message = "agent `{From}` sends a `{Sent}` with its transfer to agent `{To}`, but `{To}` \
               accepts a `{Expected}`",
    label = "`{From}` sends `{Sent}` to `{To}`, which accepts `{Expected}`",
    note = "the type in the sender's `#[agent(transfers = [target(Type)])]` and the one in the \
            target's `#[agent(accepts = Type)]` must be one type (an alias or an import of a type \
            is that type; two types of the same name in two modules are two types): send the \
            type `{To}` accepts, or change one of the two declarations"
)]
pub trait SamePayload<From: ?Sized, To: ?Sized, Sent: ?Sized, Expected: ?Sized> {}

/// The type [`SamePayload`] is asserted of. Not a public API.
#[doc(hidden)]
pub struct PayloadCheck;

#[diagnostic::do_not_recommend]
impl<F: ?Sized, T: ?Sized, P: ?Sized> SamePayload<F, T, P, P> for PayloadCheck {}

/// Compiles only if agent `F`'s transfer to agent `T`, its `K`-th declared one, sends the
/// payload type `T` accepts: what `flow!` calls for each transfer between two agent types of a
/// flow (`K` is `usize::MAX` where there is nothing to compare). Not a public API.
#[doc(hidden)]
pub const fn same_payload<F: ?Sized + SendsAt<K, T>, T: ?Sized, const K: usize>()
where
    PayloadCheck: SamePayload<F, T, F::Sent, F::Expected>,
{
}

impl AgentContext {
    /// The payload the transfer that reached this agent carried, as the type the agent `A`
    /// declares with `#[agent(accepts = T)]`: `cx.payload::<refund>()` in the body of
    /// `refund` (`cx.payload::<Self>()` in a struct agent's `run`). The type comes from the
    /// declaration, so a body cannot read the payload as another type; `None` if the transfer
    /// carried none (see [`RunContext::transfer_payload`](crate::RunContext::transfer_payload)).
    ///
    /// (The delegation chapter of the guide has a whole example.)
    ///
    ///
    /// # Errors
    ///
    /// If the payload does not decode as `A`'s payload type, or if `A` is not the running agent
    /// (a body reads its own payload, not another agent's).
    pub fn payload<A: Accepts>(&self) -> Option<AgentResult<A::Payload>> {
        let value = self.run_context().transfer_payload()?;
        let me = self.cx.agent_name();
        if me != A::NAME {
            return Some(Err(AgentError::failed(
                me,
                format!(
                    "asked for the payload of agent '{}', but it is agent '{me}': a body reads \
                     its own agent's payload (`cx.payload::<Self>()` in a struct agent's `run`)",
                    A::NAME
                ),
            )));
        }
        Some(serde_json::from_value(value).map_err(|e| {
            AgentError::failed(
                me,
                format!("the payload of the transfer to it does not decode: {e}"),
            )
        }))
    }
}
