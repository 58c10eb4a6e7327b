//! A setter for a node the flow does not have.
use agentweave::prelude::*;

#[agent]
async fn triage(_cx: &AgentContext) {}

flow! {
    Desk: triage => [dyn refund]
}

fn main() {
    let _ = Desk::builder().payments(|node| FnAgent::new(node, |_, _| async move { Ok(()) }));
}
