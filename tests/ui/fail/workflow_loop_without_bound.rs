use agentweave::prelude::*;

#[agent]
async fn draft(_cx: &AgentContext) {}

#[agent]
async fn review(_cx: &AgentContext) {}

flow! {
    Desk: revise = loop [draft, review]
}

fn main() {}
