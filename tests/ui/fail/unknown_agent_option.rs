use agentweave::prelude::*;

#[agent(transfer = [refund], name = 7)]
async fn triage(_cx: &AgentContext) {}

fn main() {
    let _ = triage;
}
