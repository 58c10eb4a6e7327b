//! Workflow nodes anywhere in a tree: the root, a transfer target, inside another workflow.
use agentweave::prelude::*;

#[agent(transfers = [research])]
async fn triage(_cx: &AgentContext) -> TriageTransfer {
    TriageTransfer::Research
}

#[agent]
async fn draft(cx: &AgentContext) {
    cx.say("draft");
}

/// Reviews; may transfer to its own sub-agent, not to the loop.
#[agent(transfers = [fact_check])]
async fn review(_cx: &AgentContext) -> Option<ReviewTransfer> {
    None
}

#[agent]
async fn fact_check(_cx: &AgentContext) {}

flow! {
    /// A desk that hands research to a workflow.
    pub Desk: triage => [
        research(skip_transfer_messages) = sequential [
            draft,
            checks = loop(unbounded) [review => [fact_check]],
        ],
        dyn billing,
    ]
}

#[agent]
async fn left(_cx: &AgentContext) {}

#[agent]
async fn right(_cx: &AgentContext) {}

flow! {
    Lanes: both = parallel [left, right,]
}

fn main() {
    assert_eq!(
        Desk::FINGERPRINT,
        agentweave::spec::fingerprint_of(
            "triage(research(draft^,checks^(review^(fact_check))),billing)"
        )
    );
    let lanes = Lanes::new().unwrap();
    assert_eq!(lanes.flow().shape(), "both(left^,right^)");
    assert_eq!(Lanes::FINGERPRINT, lanes.flow().fingerprint());
    // `review` may transfer to its sub-agent, not to the loop that runs it.
    assert_eq!(DeskReviewTarget::ALL, [DeskReviewTarget::FactCheck]);
}
