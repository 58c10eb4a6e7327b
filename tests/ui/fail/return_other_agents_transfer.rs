use agentweave::prelude::*;

#[agent(transfers = [refund])]
async fn triage(_cx: &AgentContext) -> TriageTransfer {
    TriageTransfer::Refund
}

// `refund` may not use triage's targets: each agent transfers through its own enum.
#[agent]
async fn refund(_cx: &AgentContext) -> TriageTransfer {
    TriageTransfer::Refund
}

fn main() {}
