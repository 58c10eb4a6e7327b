//! A standard-library type as a node: two errors at it (not an agent; the flow cannot build it).
use agentweave::prelude::*;

#[agent]
async fn triage(_cx: &AgentContext) {}

flow! { Desk: triage => [String] }

fn main() {}
