use agentweave::prelude::*;
use agentweave::spec::Finish;

#[derive(serde::Serialize, serde::Deserialize)]
struct RefundOutcome {
    approved: bool,
}

#[agent(returns = RefundOutcome)]
async fn refund(_cx: &AgentContext) -> Finish<RefundOutcome> {
    Finish(RefundOutcome { approved: true })
}

flow! {
    Desk: refund
}

fn main() {}
