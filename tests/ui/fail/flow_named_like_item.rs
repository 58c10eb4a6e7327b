use agentweave::prelude::*;

#[agent(transfers = [refund])]
async fn triage(_cx: &AgentContext) {}

#[agent]
async fn refund(_cx: &AgentContext) {}

struct Desk {
    _open: bool,
}

// A flow named like a struct of the same module: one error, at the flow's name.
flow! {
    Desk: triage => [refund]
}

// A flow named like one of its own agents: one error, at the flow's name.
flow! {
    #[allow(non_camel_case_types)]
    triage: triage => [refund]
}

fn main() {}
