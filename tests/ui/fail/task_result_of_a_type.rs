use agentweave::prelude::*;
use agentweave::spec::Finish;

#[derive(serde::Serialize, serde::Deserialize)]
struct RefundOutcome {
    approved: bool,
}

#[agent(transfers = [refund])]
async fn triage(cx: &AgentContext) -> Option<TriageTransfer> {
    // The result's type, where the agent that finishes the task goes.
    match cx.task_result::<RefundOutcome>() {
        Some(_) => None,
        None => Some(TriageTransfer::Refund),
    }
}

#[agent(returns = RefundOutcome)]
async fn refund(_cx: &AgentContext) -> Finish<RefundOutcome> {
    Finish(RefundOutcome { approved: true })
}

fn main() {}
