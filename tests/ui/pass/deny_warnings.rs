//! Generated code causes no warnings, with every lint group that matters denied.
#![deny(warnings, missing_docs, unused, nonstandard_style, rust_2018_idioms, unreachable_pub)]
#![deny(missing_debug_implementations)]

use agentweave::prelude::*;

/// Routes.
#[agent(transfers = [refund, lookup])]
async fn triage(_cx: &AgentContext) -> AgentResult<Option<TriageTransfer>> {
    Ok(None)
}

/// Refunds.
#[agent(no_parent)]
async fn refund(_cx: &AgentContext, _input: AgentInput) -> Exit {
    Exit
}

/// Looks orders up.
#[agent(name = "lookup", transfers = [triage])]
#[derive(Debug)]
struct Lookup {
    endpoint: String,
}

#[agent]
impl Lookup {
    async fn run(&self, cx: &AgentContext, _input: AgentInput) -> LookupTransfer {
        cx.say(self.endpoint.clone());
        LookupTransfer::Triage
    }
}

flow! {
    /// A private flow whose generated items are mostly unused.
    Unused: triage => [refund, Lookup(runtime), dyn billing]
}

flow! {
    /// A flow that is used.
    Used: triage => [refund(skip_transfer_messages), Lookup(runtime, context = user_input_only)]
}

fn main() {
    let flow = Used::builder()
        .lookup(Lookup {
            endpoint: "orders".into(),
        })
        .build()
        .unwrap();
    assert_eq!(flow.flow().shape(), "triage(refund^,lookup)");
}
