use agentweave::prelude::*;

#[agent]
async fn refund(_cx: &AgentContext) {}

flow! {
    Desk: refund(task)
}

fn main() {}
