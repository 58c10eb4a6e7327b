//! The target enum of a node that may transfer nowhere (a leaf barred from its parent).
use agentweave::prelude::*;

#[agent]
async fn triage(_cx: &AgentContext) {}

flow! {
    Desk: triage => [dyn refund(no_parent)]
}

fn main() {
    let _ = DeskRefundTarget::Triage;
}
