use agentweave::prelude::*;

/// Looks orders up.
#[agent]
struct Lookup {
    endpoint: String,
}

#[agent]
impl Lookup {
    async fn lookup(&self, cx: &AgentContext) {
        cx.say(self.endpoint.clone());
    }
}

fn main() {}
