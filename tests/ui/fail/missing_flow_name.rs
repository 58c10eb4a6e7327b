use agentweave::prelude::*;

#[agent]
async fn triage(_cx: &AgentContext) {}
#[agent]
async fn refund(_cx: &AgentContext) {}

flow! {
    pub: triage => [refund]
}

fn main() {}

// No name at all: the root agent comes first.
flow! {
    triage => [refund]
}
