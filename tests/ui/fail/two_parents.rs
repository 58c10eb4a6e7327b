use agentweave::prelude::*;

#[agent]
async fn triage(_cx: &AgentContext) {}
#[agent]
async fn refund(_cx: &AgentContext) {}
#[agent]
async fn complaint(_cx: &AgentContext) {}

flow! {
    Desk: triage => [refund, complaint => [refund]]
}

fn main() {}
