//! A plain struct as a node: one error naming it, with what to write.
use agentflow::prelude::*;

#[agent]
async fn triage(_cx: &AgentContext) {}

#[derive(Default)]
struct Lookup;

flow! { Desk: triage => [Lookup] }

fn main() {}
