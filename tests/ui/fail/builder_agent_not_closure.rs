//! An agent value given to a `dyn` node's setter instead of a closure.
use agentweave::prelude::*;

#[agent]
async fn triage(_cx: &AgentContext) {}

flow! {
    Desk: triage => [dyn refund]
}

fn main() {
    let refund = FnAgent::new("refund", |_, _| async move { Ok(()) });
    let _ = Desk::builder().refund(refund);
}
