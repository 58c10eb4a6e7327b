//! A payload variant returned without its payload: rustc's type mismatch at the value, with
//! its fix (construct the variant with the payload).
use agentweave::prelude::*;

#[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
struct RefundRequest {
    order_id: u64,
}

#[agent(transfers = [refund(RefundRequest)])]
async fn intake(_cx: &AgentContext) -> IntakeTransfer {
    IntakeTransfer::Refund
}

fn main() {}
