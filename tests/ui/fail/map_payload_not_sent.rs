use agentweave::prelude::*;

#[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct Ticket {
    pub id: u64,
}

/// Transfers to the map without the list of items it takes.
#[agent(transfers = [answers])]
async fn triage(_cx: &AgentContext) -> TriageTransfer {
    TriageTransfer::Answers
}

#[agent(accepts = Ticket)]
async fn refund(_cx: &AgentContext) {}

flow! {
    Desk: triage => [answers = map(payload) [refund]]
}

fn main() {}
