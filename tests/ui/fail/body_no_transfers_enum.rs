//! A body returning a transfer enum its agent does not declare: one error, at the type.
use agentweave::prelude::*;

#[agent]
async fn triage(_cx: &AgentContext) -> TriageTransfer {
    TriageTransfer::Refund
}

fn main() {}
