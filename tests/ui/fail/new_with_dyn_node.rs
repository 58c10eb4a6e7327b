use agentweave::prelude::*;

#[agent]
async fn triage(_cx: &AgentContext) {}

flow! {
    Desk: triage => [dyn refund]
}

fn main() {
    let _ = Desk::new();
}
