use agentweave::prelude::*;

#[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct Ticket {
    pub id: u64,
}

#[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct Order {
    pub id: u64,
}

/// Sends orders to a map whose agent takes tickets.
#[agent(transfers = [answers(Vec<Order>)])]
async fn triage(_cx: &AgentContext) -> TriageTransfer {
    TriageTransfer::Answers(vec![Order { id: 1 }])
}

#[agent(accepts = Ticket)]
async fn refund(_cx: &AgentContext) {}

flow! {
    Desk: triage => [answers = map(payload) [refund]]
}

fn main() {}
