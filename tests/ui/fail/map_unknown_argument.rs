use agentweave::prelude::*;

#[agent]
async fn answer(_cx: &AgentContext) {}

flow! {
    Desk: fan = map(value = "tickets", parallelism = 4) [answer]
}

fn main() {}
