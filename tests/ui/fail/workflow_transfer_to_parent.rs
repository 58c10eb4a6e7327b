use agentweave::prelude::*;

#[agent]
async fn draft(_cx: &AgentContext) {}

/// Hands back to the pipeline when done.
#[agent(transfers = [pipeline])]
async fn review(_cx: &AgentContext) {}

flow! {
    Desk: pipeline = sequential [draft, review]
}

fn main() {}
