use agentweave::prelude::*;

#[agent]
fn triage(_cx: &AgentContext) {}

flow! {
    Desk: triage
}

fn main() {
    let _ = Desk::new();
}
