//! The closure of a `dyn` node takes no argument.
use agentweave::prelude::*;

#[agent]
async fn triage(_cx: &AgentContext) {}

flow! {
    Desk: triage => [dyn refund]
}

fn main() {
    let _ = Desk::builder().refund(|| FnAgent::new("refund", |_, _| async move { Ok(()) }));
}
