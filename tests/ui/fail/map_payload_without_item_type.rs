use agentweave::prelude::*;

#[agent(transfers = [answers(Vec<u64>)])]
async fn triage(_cx: &AgentContext) -> TriageTransfer {
    TriageTransfer::Answers(vec![1, 2])
}

/// Declares no item type, so the map cannot hand it the payload's items.
#[agent]
async fn refund(_cx: &AgentContext) {}

flow! {
    Desk: triage => [answers = map(payload) [refund]]
}

fn main() {}
