use agentweave::prelude::*;

#[agent]
async fn answer(_cx: &AgentContext) {}

flow! {
    Desk: fan = map [answer]
}

fn main() {}
