use agentweave::prelude::*;

#[agent]
async fn triage(_cx: &AgentContext) {}

/// Looks orders up with a client it holds.
#[agent]
struct Lookup {
    endpoint: String,
}

#[agent]
impl Lookup {
    async fn run(&self, cx: &AgentContext) {
        cx.say(self.endpoint.clone());
    }
}

// `Lookup` holds state, so the flow cannot build it: its node needs `(runtime)`.
flow! {
    Desk: triage => [Lookup]
}

fn main() {}
