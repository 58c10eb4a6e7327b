use agentweave::prelude::*;

#[agent]
async fn answer(_cx: &AgentContext) {}

flow! {
    Desk: fan = map(value = "tickets", last_output) [answer]
}

fn main() {}
