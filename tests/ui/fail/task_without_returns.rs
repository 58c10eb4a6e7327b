use agentweave::prelude::*;

#[agent(transfers = [refund])]
async fn triage(_cx: &AgentContext) -> TriageTransfer {
    TriageTransfer::Refund
}

/// Never finishes: it declares no result.
#[agent]
async fn refund(cx: &AgentContext) {
    cx.say("refunded");
}

flow! {
    Desk: triage => [refund(task)]
}

fn main() {}
