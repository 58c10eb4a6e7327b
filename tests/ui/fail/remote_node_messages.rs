//! A `remote` node is named as remote in every message: a builder missing it, and `runtime`
//! on it.
use agentweave::prelude::*;

#[agent(transfers = [billing])]
async fn triage(_cx: &AgentContext) -> TriageTransfer {
    TriageTransfer::Billing
}

flow! { Desk: triage => [remote billing] }

mod second {
    use agentweave::prelude::*;
    flow! { Shop: dyn cart => [remote payments(runtime)] }
}

fn main() {
    let _ = Desk::builder().build();
}
