use agentweave::prelude::*;

#[agent]
async fn triage(_cx: &AgentContext) {}
#[agent]
async fn complaint(_cx: &AgentContext) {}

flow! {
    Desk: triage => [complaint => [triage]]
}

fn main() {}
