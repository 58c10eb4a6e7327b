use agentweave::prelude::*;

#[agent]
async fn triage(_cx: &AgentContext) {}
#[agent]
async fn refund(_cx: &AgentContext) {}
#[agent]
async fn complaint(_cx: &AgentContext) {}

// Four mistakes, four errors in one compile; `Desk` still exists for the code below.
flow! {
    Desk: triage => [refund(loud), complaint => [], refund, dyn]
}

fn main() {
    let _ = Desk::new();
}
