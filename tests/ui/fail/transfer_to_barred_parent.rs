use agentweave::prelude::*;

#[agent(transfers = [escalation])]
async fn complaint(_cx: &AgentContext) {}

/// Hands back to the complaint desk when done.
#[agent(transfers = [complaint])]
async fn escalation(_cx: &AgentContext) {}

flow! {
    Desk: complaint => [escalation(no_parent)]
}

fn main() {}
