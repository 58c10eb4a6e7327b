use agentweave::prelude::*;

#[agent]
async fn answer(_cx: &AgentContext) {}

#[agent]
async fn check(_cx: &AgentContext) {}

flow! {
    Desk: fan = map(value = "tickets") [answer, check]
}

fn main() {}
