use agentweave::prelude::*;

#[agent(transfers = [escalation])]
async fn complaint(_cx: &AgentContext) {}

/// Never hands back, yet declares it does.
#[agent(no_parent, transfers = [complaint])]
async fn escalation(_cx: &AgentContext) {}

flow! {
    Desk: complaint => [escalation]
}

fn main() {}
