//! Transfer targets: [`TransferTarget`] (the generated transfer enums), [`NoTarget`], and
//! [`transfer`], what returning a variant does.

use std::fmt;

use super::{AgentContext, AgentResult};
use crate::event::AgentError;

/// A legal transfer target of one agent: implemented by the enum `#[agent(transfers = [...])]`
/// generates (`TriageTransfer::Refund`).
pub trait TransferTarget: Copy + fmt::Display + Send + Sync + 'static {
    /// Every target, in declaration order.
    const ALL: &'static [Self];

    /// The name of the agent this target transfers to.
    fn agent_name(self) -> &'static str;
}

/// The target type of an agent type: its transfer enum, [`NoTarget`] if it declares no
/// transfers. `#[agent]` implements it; a `flow!` node filled by the agent type names it as its
/// `{Flow}{Node}Target` (a transfer the agent makes is one it declared). Not a public API.
#[doc(hidden)]
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an agent type, so it has no transfer targets",
    label = "not an agent",
    note = "put #[agent] on `{Self}` (see the error about `AgentSpec`)"
)]
pub trait AgentTargets {
    /// The agent's transfer enum (for one whose transfers carry payloads, the enum of its
    /// targets without them).
    type Targets: TransferTarget;
    /// The payload type the agent receives with a transfer to it (`#[agent(accepts = T)]`),
    /// or [`NoPayload`](super::NoPayload): what `flow!` compares, as a type, with the payload
    /// each neighbour sends it.
    type Accepts;
}

/// A target type and whose it is: an agent's transfer enum (`TriageTransfer` of `triage`,
/// implemented by `#[agent]`), or the enum `flow!` generates for a `dyn` or `runtime` node (its
/// own). Not a public API.
#[doc(hidden)]
pub trait AgentTransfer: TransferTarget {
    /// The agent type that transfers, or the node's generated enum.
    type Agent;
}

/// The transfer enum `#[agent]` generates for an agent's targets: its variants, their agent
/// names (`name`, the one fn an enum implements) and whose targets they are. The runtime
/// derives [`TransferTarget`] and [`AgentTransfer`] from it, each impl written once here instead
/// of once per enum. Not a public API.
#[doc(hidden)]
pub trait TargetTable: Copy + fmt::Display + Send + Sync + 'static {
    /// The agent type whose targets these are.
    type Agent;
    /// Every target, in declaration order.
    const ALL: &'static [Self];
    /// The name of the agent this target transfers to.
    fn name(self) -> &'static str;
}

#[diagnostic::do_not_recommend]
impl<T: TargetTable> TransferTarget for T {
    const ALL: &'static [Self] = T::ALL;
    fn agent_name(self) -> &'static str {
        self.name()
    }
}

impl<T: TargetTable> AgentTransfer for T {
    type Agent = T::Agent;
}

/// Transfers the running agent to `target`, one of the targets it declared with
/// `#[agent(transfers = [...])]`: what returning a variant of a transfer enum does. The
/// `IntoOutcome` impl `#[agent]` generates for the enum calls it.
///
/// The context carries the running agent's declared targets (set when the generated code
/// starts the body), and a target outside them is refused with an error, so neither this
/// function nor a hand-written [`TransferTarget`] can make an agent transfer anywhere it did not
/// declare (`flow!` checks the declared ones against the tree at compile time).
///
/// # Errors
///
/// If `target` is not one of the running agent's declared transfers; nothing is emitted then.
pub fn transfer<T: TransferTarget>(cx: &AgentContext, target: T) -> AgentResult {
    let name = target.agent_name();
    if !cx.declared.contains(&name) {
        let declared = if cx.declared.is_empty() {
            "none".to_owned()
        } else {
            cx.declared.join(", ")
        };
        return Err(AgentError::failed(
            cx.cx.agent_name(),
            format!(
                "refused a transfer to '{name}': it is not among the agent's declared \
                 transfers ({declared}); declare it with #[agent(transfers = [...])]"
            ),
        ));
    }
    cx.cx.transfer(name);
    Ok(())
}

/// The target type of a node that may transfer nowhere (a leaf barred from its parent, or the
/// root of a one-node flow): it has no values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NoTarget {}

impl fmt::Display for NoTarget {
    fn fmt(&self, _f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {}
    }
}

impl TransferTarget for NoTarget {
    const ALL: &'static [Self] = &[];
    fn agent_name(self) -> &'static str {
        match self {}
    }
}

/// Transfers the running agent to `target` (by name), one of its declared targets: what
/// returning a payload-less variant of a transfer enum with payloads does.
///
/// # Errors
///
/// If `target` is not one of the running agent's declared transfers.
pub fn transfer_named(cx: &AgentContext, target: &'static str) -> AgentResult {
    check_declared(cx, target)?;
    cx.cx.transfer(target);
    Ok(())
}

/// Transfers the running agent to `target` with `payload`: what returning a variant
/// `TriageTransfer::Refund(request)` does. The target reads it with
/// [`RunContext::transfer_payload`](crate::RunContext::transfer_payload) or
/// [`AgentContext::payload`].
///
/// # Errors
///
/// If `target` is not one of the running agent's declared transfers, or the payload does not
/// turn into JSON.
pub fn transfer_with<P: serde::Serialize>(
    cx: &AgentContext,
    target: &'static str,
    payload: &P,
) -> AgentResult {
    check_declared(cx, target)?;
    let value = serde_json::to_value(payload).map_err(|e| {
        AgentError::failed(
            cx.cx.agent_name(),
            format!("could not turn the payload of its transfer to '{target}' into JSON: {e}"),
        )
    })?;
    cx.cx.transfer_with(target, value);
    Ok(())
}

fn check_declared(cx: &AgentContext, name: &str) -> AgentResult {
    if cx.declared.contains(&name) {
        return Ok(());
    }
    let declared = if cx.declared.is_empty() {
        "none".to_owned()
    } else {
        cx.declared.join(", ")
    };
    Err(AgentError::failed(
        cx.cx.agent_name(),
        format!(
            "refused a transfer to '{name}': it is not among the agent's declared transfers \
             ({declared}); declare it with #[agent(transfers = [...])]"
        ),
    ))
}
