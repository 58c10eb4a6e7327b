use agentweave::prelude::*;

#[agent]
async fn draft(_cx: &AgentContext) {}

flow! {
    Desk: pipeline = serial [draft]
}

fn main() {}
