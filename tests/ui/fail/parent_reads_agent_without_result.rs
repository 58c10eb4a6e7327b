use agentweave::prelude::*;

#[agent(transfers = [refund])]
async fn triage(cx: &AgentContext) -> Option<TriageTransfer> {
    match cx.task_result::<refund>() {
        Some(_) => None,
        None => Some(TriageTransfer::Refund),
    }
}

#[agent]
async fn refund(cx: &AgentContext) {
    cx.say("refunded");
}

fn main() {}
