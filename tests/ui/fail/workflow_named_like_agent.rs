use agentweave::prelude::*;

#[agent]
async fn triage(_cx: &AgentContext) {}
#[agent]
async fn refund(_cx: &AgentContext) {}
#[agent]
async fn audit(_cx: &AgentContext) {}

// A workflow node named like its sibling agent: two different nodes with one name.
flow! {
    Desk: triage => [refund, refund = sequential [audit]]
}

fn main() {}
