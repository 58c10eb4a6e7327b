use agentweave::prelude::*;

#[agent(transfers = [answers])]
async fn triage(_cx: &AgentContext) -> TriageTransfer {
    TriageTransfer::Answers
}

flow! {
    Desk: triage => [answers = map(payload) [dyn refund]]
}

fn main() {}
