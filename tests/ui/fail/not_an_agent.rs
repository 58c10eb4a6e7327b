use agentweave::prelude::*;

#[agent]
async fn triage(_cx: &AgentContext) {}

#[derive(Default)]
struct Refund;

flow! {
    Desk: triage => [Refund]
}

fn main() {}
