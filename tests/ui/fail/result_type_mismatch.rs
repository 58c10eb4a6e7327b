use agentweave::prelude::*;
use agentweave::spec::Finish;

#[derive(serde::Serialize, serde::Deserialize)]
struct RefundOutcome {
    approved: bool,
}

#[derive(serde::Serialize, serde::Deserialize)]
struct Complaint {
    text: String,
}

#[agent(returns = RefundOutcome)]
async fn refund(_cx: &AgentContext) -> Finish<Complaint> {
    Finish(Complaint { text: "late".into() })
}

fn main() {}
