use agentweave::prelude::*;
use agentweave::spec::Finish;

#[derive(serde::Serialize, serde::Deserialize)]
struct RefundOutcome {
    approved: bool,
}

#[agent(transfers = [refund])]
async fn triage(_cx: &AgentContext) -> TriageTransfer {
    TriageTransfer::Refund
}

/// Always finishes a task, but its node is a plain chat node.
#[agent(returns = RefundOutcome)]
async fn refund(_cx: &AgentContext) -> Finish<RefundOutcome> {
    Finish(RefundOutcome { approved: true })
}

flow! {
    Desk: triage => [refund]
}

fn main() {}
