use agentweave::prelude::*;

#[agent]
async fn triage(_cx: &AgentContext) {}
#[agent]
async fn refund(_cx: &AgentContext) {}
/// Another agent that calls itself `refund`.
#[agent(name = "refund")]
async fn refund_v2(_cx: &AgentContext) {}

flow! {
    Desk: triage => [refund, refund_v2]
}

fn main() {}
