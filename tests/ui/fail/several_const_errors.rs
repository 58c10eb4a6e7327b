use agentweave::prelude::*;

#[agent(transfers = [refund, billing])]
async fn triage(_cx: &AgentContext) {}
#[agent(transfers = [shipping])]
async fn refund(_cx: &AgentContext) {}
/// Calls itself `refund` too.
#[agent(name = "refund")]
async fn payouts(_cx: &AgentContext) {}

// Three nodes fail their checks; each is reported, at its node.
flow! {
    Desk: triage => [refund, payouts]
}

fn main() {}
