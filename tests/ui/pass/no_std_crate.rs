//! `#[agent]` and `flow!` in a `no_std` crate: the generated code names `std` only through
//! `agentweave`, which brings it.
#![no_std]

use agentweave::prelude::*;

#[agent]
async fn triage(_cx: &AgentContext) {}

#[agent]
async fn refund(_cx: &AgentContext) {}

flow! {
    Desk: triage => [refund]
}

fn main() {
    let desk = Desk::new().unwrap();
    assert_eq!(desk.flow().shape(), "triage(refund)");
}
