use agentweave::prelude::*;

/// Decides which desk owns the request.
#[agent]
async fn triage(_cx: &AgentContext) {}

/// Refunds orders.
#[agent]
async fn refund(_cx: &AgentContext) {}

flow! {
    Desk: triage => [
        /// Handles refunds.
        refund,
        /// Fine: a `dyn` node's doc comment describes it in the flow's pictures.
        dyn billing,
        #[allow(unused)]
        /// Fine: a workflow's doc comment is its description.
        checks = sequential [dyn auditor],
    ]
}

fn main() {}
