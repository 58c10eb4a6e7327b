use agentweave::prelude::*;

#[agent]
async fn triage(_cx: &AgentContext) {}

flow! {
    Desk: triage => []
}

fn main() {}
