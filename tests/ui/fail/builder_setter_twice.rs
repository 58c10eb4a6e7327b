//! A `dyn` node's setter called twice: the second call names the node and says it was given.
use agentweave::prelude::*;

#[agent]
async fn triage(_cx: &AgentContext) {}

flow! {
    Desk: triage => [dyn refund, dyn billing]
}

fn main() {
    let _ = Desk::builder()
        .refund(|node| FnAgent::new(node, |_, _| async move { Ok(()) }))
        .refund(|node| FnAgent::new(node, |_, _| async move { Ok(()) }));
}
