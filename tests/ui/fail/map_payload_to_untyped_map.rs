use agentweave::prelude::*;

/// Sends a list to a map that takes its items from a session value.
#[agent(transfers = [answers(Vec<u64>)])]
async fn triage(_cx: &AgentContext) -> TriageTransfer {
    TriageTransfer::Answers(vec![1])
}

#[agent]
async fn refund(_cx: &AgentContext) {}

flow! {
    Desk: triage => [answers = map(value = "tickets") [refund]]
}

fn main() {}
