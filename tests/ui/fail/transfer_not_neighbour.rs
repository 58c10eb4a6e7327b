use agentweave::prelude::*;

/// Routes requests.
#[agent(transfers = [refund, billing])]
async fn triage(_cx: &AgentContext) -> TriageTransfer {
    TriageTransfer::Refund
}
#[agent]
async fn refund(_cx: &AgentContext) {}

flow! {
    Desk: triage => [refund]
}

fn main() {}
