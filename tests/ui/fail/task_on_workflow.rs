use agentweave::prelude::*;

#[agent(transfers = [pipeline])]
async fn triage(_cx: &AgentContext) -> TriageTransfer {
    TriageTransfer::Pipeline
}

#[agent]
async fn draft(_cx: &AgentContext) {}

flow! {
    Desk: triage => [pipeline(task) = sequential [draft]]
}

fn main() {}
