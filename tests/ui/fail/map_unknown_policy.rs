use agentweave::prelude::*;

#[agent]
async fn answer(_cx: &AgentContext) {}

flow! {
    Desk: fan = map(last_output, on_failure = retry) [answer]
}

fn main() {}
