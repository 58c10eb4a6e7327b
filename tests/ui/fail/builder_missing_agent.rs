//! `build()` before every `dyn` and `runtime` node was given: one error per missing node, each
//! naming the node and the setter to call.
use agentweave::prelude::*;

#[agent]
async fn triage(_cx: &AgentContext) {}

/// Looks orders up.
#[agent(name = "lookup")]
struct Lookup {
    endpoint: String,
}

#[agent]
impl Lookup {
    async fn run(&self, cx: &AgentContext) {
        cx.say(self.endpoint.clone());
    }
}

flow! {
    Desk: triage => [dyn refund, Lookup(runtime), dyn billing]
}

fn main() {
    // `billing` was given; `refund` and `Lookup` were not.
    let _ = Desk::builder()
        .billing(|node| FnAgent::new(node, |_, _| async move { Ok(()) }))
        .build();
}
