//! `context = last(-1)`: a count is a positive number.
use agentweave::prelude::*;

#[agent]
async fn triage(_cx: &AgentContext) {}

#[agent]
async fn refund(_cx: &AgentContext) {}

flow! {
    Desk: triage => [refund(context = last(-1))]
}

fn main() {}
