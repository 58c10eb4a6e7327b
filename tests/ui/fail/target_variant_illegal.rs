//! A target variant that is not legal for the node: `billing` is not its neighbour.
use agentweave::prelude::*;

#[agent]
async fn triage(_cx: &AgentContext) {}

flow! {
    Desk: triage => [dyn refund, dyn billing]
}

fn main() {
    let _ = DeskRefundTarget::Billing;
}
