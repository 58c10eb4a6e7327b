//! `trajectory!` holds a node filled by an agent type to the transfers its agent declares: a
//! sibling it never declared, and the parent of an agent declared `no_parent`, do not compile.
use agentweave::prelude::*;
use agentweave::trajectory;

#[agent(transfers = [refund])]
async fn triage(_cx: &AgentContext) -> TriageTransfer {
    TriageTransfer::Refund
}

#[agent]
async fn refund(_cx: &AgentContext) {}

#[agent]
async fn complaint(_cx: &AgentContext) {}

/// Barred from its parent by its own declaration.
#[agent(no_parent)]
async fn escalation(_cx: &AgentContext) {}

flow! { Desk: triage => [refund, complaint => [escalation]] }

fn main() {
    let _ = trajectory!(Desk: transfer triage -> complaint);
    let _ = trajectory!(Desk: transfer escalation -> complaint);
}
