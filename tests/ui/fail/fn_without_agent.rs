use agentweave::prelude::*;

#[agent]
async fn triage(_cx: &AgentContext) {}

// No #[agent]: a plain fn is not an agent type. The one error is rustc's own "expected type,
// found function `refund`", at the node: name resolution fails before any trait check could
// say "put #[agent] on `refund`", and a fallback that would let one run (importing the node
// under an alias next to a glob-imported stand-in) turns every misspelt node's "cannot find
// type" with its "a struct with a similar name exists" into "unresolved import: no external
// crate".
async fn refund(_cx: &AgentContext) {}

flow! {
    Desk: triage => [refund]
}

fn main() {}
