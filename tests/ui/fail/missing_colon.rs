use agentweave::prelude::*;

#[agent]
async fn triage(_cx: &AgentContext) {}

flow! {
    Desk triage
}

fn main() {
    // The flow type still exists, so this line adds no second error.
    let _ = Desk::new();
}
