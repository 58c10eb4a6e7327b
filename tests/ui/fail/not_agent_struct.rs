//! A plain struct as a node: two errors at it (not an agent; the flow cannot build it), with what to write.
use agentweave::prelude::*;

#[agent]
async fn triage(_cx: &AgentContext) {}

#[derive(Default)]
struct Lookup;

flow! { Desk: triage => [Lookup] }

fn main() {}
