//! A standard-library type as a node: one error naming it.
use agentflow::prelude::*;

#[agent]
async fn triage(_cx: &AgentContext) {}

flow! { Desk: triage => [String] }

fn main() {}
