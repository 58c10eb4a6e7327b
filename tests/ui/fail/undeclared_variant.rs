use agentweave::prelude::*;

#[agent(transfers = [refund])]
async fn triage(_cx: &AgentContext) -> TriageTransfer {
    TriageTransfer::Billing
}

fn main() {}
