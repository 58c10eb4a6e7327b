//! A setter for a node the flow builds itself (an `#[agent]` fn): it has no setter.
use agentweave::prelude::*;

#[agent]
async fn triage(_cx: &AgentContext) {}

#[agent]
async fn lookup(_cx: &AgentContext) {}

flow! {
    Desk: triage => [lookup, dyn refund]
}

fn main() {
    let _ = Desk::builder().lookup(|node| FnAgent::new(node, |_, _| async move { Ok(()) }));
}
