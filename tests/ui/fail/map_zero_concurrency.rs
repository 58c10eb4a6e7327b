use agentweave::prelude::*;

#[agent]
async fn answer(_cx: &AgentContext) {}

flow! {
    Desk: fan = map(value = "tickets", concurrency = 0) [answer]
}

fn main() {}
