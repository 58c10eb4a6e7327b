use agentweave::prelude::*;

#[agent]
async fn triage(_cx: &AgentContext) {}
#[agent]
async fn refund(_cx: &AgentContext) {}

flow! {
    Desk: triage => [refund, refund]
}

fn main() {}
