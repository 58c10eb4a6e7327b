use agentweave::prelude::*;

// A transfer to itself: reported once, by #[agent], not again by the flow.
#[agent(transfers = [triage, refund])]
async fn triage(_cx: &AgentContext) {}
#[agent]
async fn refund(_cx: &AgentContext) {}

flow! {
    Desk: triage => [refund]
}

fn main() {}
