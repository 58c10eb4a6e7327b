use agentweave::prelude::*;

mod intake {
    #[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
    pub struct Request {
        pub order_id: u64,
    }
}

mod refunds {
    #[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
    pub struct Request {
        pub amount: u64,
    }
}

#[agent(transfers = [refund(intake::Request)])]
async fn triage(_cx: &AgentContext) -> TriageTransfer {
    TriageTransfer::Refund(intake::Request { order_id: 1 })
}

#[agent(accepts = refunds::Request)]
async fn refund(cx: &AgentContext) {
    cx.say("refunded");
}

flow! {
    Desk: triage => [refund]
}

fn main() {}
