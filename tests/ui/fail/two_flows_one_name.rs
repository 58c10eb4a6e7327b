use agentweave::prelude::*;

#[agent(transfers = [refund])]
async fn triage(_cx: &AgentContext) {}

#[agent]
async fn refund(_cx: &AgentContext) {}

flow! {
    Desk: triage => [refund]
}

// A second flow of the same name in the same module: one error, at its name (not one per
// generated item).
flow! {
    Desk: triage => [refund, dyn billing]
}

fn main() {}
