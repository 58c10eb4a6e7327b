//! Generated code passes `clippy::pedantic`: `cargo clippy --all-targets -- -D warnings` checks
//! this file. An agent body without `.await` is fine (`unused_async` would advise dropping the
//! `async` that `#[agent]` requires).
#![deny(clippy::pedantic)]

use agentweave::prelude::*;

/// Routes without awaiting anything.
#[agent(transfers = [refund])]
async fn triage(cx: &AgentContext) -> TriageTransfer {
    cx.say("routing");
    TriageTransfer::Refund
}

/// Refunds.
#[agent]
async fn refund(_cx: &AgentContext) {}

/// Holds state.
#[agent(name = "lookup")]
struct Lookup;

#[agent]
impl Lookup {
    async fn run(&self, cx: &AgentContext) {
        cx.say("looked up");
    }
}

flow! {
    /// The desk.
    Desk: triage => [refund, Lookup, dyn billing]
}

#[test]
fn pedantic_agents_build() {
    let desk = Desk::builder()
        .billing(|node| FnAgent::new(node, |_, _| async move { Ok(()) }))
        .build()
        .unwrap();
    assert_eq!(desk.flow().shape(), "triage(refund,lookup,billing)");
}
