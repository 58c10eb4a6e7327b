//! Two agents whose names differ only in case style: one error, no cascade.
use agentweave::prelude::*;

#[agent]
async fn triage(_cx: &AgentContext) {}

#[agent]
async fn refund_desk(_cx: &AgentContext) {}

#[agent(name = "refund-desk")]
async fn refund_desk2(_cx: &AgentContext) {}

flow! {
    Desk: triage => [refund_desk, dyn RefundDesk]
}

fn main() {}

mod second {
    use agentweave::prelude::*;

    #[agent]
    async fn triage(_cx: &AgentContext) {}

    #[agent]
    async fn refund_desk(_cx: &AgentContext) {}

    /// A struct agent whose type name matches the other agent's camel case.
    #[agent(name = "RefundDesk")]
    #[derive(Default)]
    struct RefundDesk;

    #[agent]
    impl RefundDesk {
        async fn run(&self, _cx: &AgentContext) {}
    }

    flow! {
        Desk: triage => [refund_desk, RefundDesk]
    }
}
