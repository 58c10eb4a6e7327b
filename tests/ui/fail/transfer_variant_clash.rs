use agentweave::prelude::*;

// `refund_desk` and `refund-desk` would both be the variant `RefundDesk`.
#[agent(transfers = [refund_desk, "refund-desk"])]
async fn triage(_cx: &AgentContext) -> TriageTransfer {
    TriageTransfer::RefundDesk
}

fn main() {}
