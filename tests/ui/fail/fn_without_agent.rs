use agentflow::prelude::*;

#[agent]
async fn triage(_cx: &AgentContext) {}

// No #[agent]: a plain fn is not an agent type.
async fn refund(_cx: &AgentContext) {}

flow! {
    Desk: triage => [refund]
}

fn main() {}
