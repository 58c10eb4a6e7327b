//! An agent body cannot transfer anywhere it did not declare: there is no method for it, and
//! the one transfer function (what a returned variant uses) takes a typed target, not a name.
use agentweave::prelude::*;

#[agent(transfers = [refund])]
async fn triage(cx: &AgentContext) -> TriageTransfer {
    cx.__transfer("complaint");
    // No `transfer` method either; rustc's near-name hints for it depend on the dependency graph.
    TriageTransfer::Refund
}

#[agent(transfers = [refund])]
async fn router(cx: &AgentContext) -> AgentResult {
    agentweave::__private::transfer(cx, "complaint")
}

fn main() {}
