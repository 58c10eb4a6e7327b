use agentweave::prelude::*;

#[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
struct RefundRequest {
    order_id: u64,
}

#[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
struct Customer {
    id: u64,
}

#[agent(transfers = [refund(RefundRequest, Customer)])]
async fn triage(_cx: &AgentContext) {}

fn main() {}
