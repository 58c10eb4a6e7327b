//! `flow!` inside a generic function, naming the function's type parameter as a node.
use agentweave::prelude::*;

#[agent]
async fn triage(_cx: &AgentContext) {}

fn make<A: Agent + Default>() {
    flow! {
        Desk: triage => [A]
    }
}

fn main() {}
