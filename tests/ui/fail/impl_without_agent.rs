use agentweave::prelude::*;

#[agent]
async fn triage(_cx: &AgentContext) {}

/// Looks orders up.
#[agent]
struct Lookup;

// The impl block lacks #[agent].
impl Lookup {
    async fn run(&self, _cx: &AgentContext) {}
}

flow! {
    Desk: triage => [Lookup]
}

fn main() {}
