use agentweave::prelude::*;

#[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
struct RefundRequest {
    order_id: u64,
}

#[agent(transfers = [refund(RefundRequest)])]
async fn triage(_cx: &AgentContext) -> TriageTransfer {
    TriageTransfer::Refund(RefundRequest { order_id: 1 })
}

/// Declares no payload.
#[agent]
async fn refund(cx: &AgentContext) {
    cx.say("refunded");
}

flow! {
    Desk: triage => [refund]
}

fn main() {}
