//! `trajectory!` names an agent by its name, a name that is no identifier as a string, or its
//! node's identifier; the steps hold the agents' names, as the typed builder's do.
use agentweave::prelude::*;
use agentweave::spec::expected::ExpectedStep;
use agentweave::trajectory;

#[agent(transfers = ["refund-desk", billing])]
async fn triage(_cx: &AgentContext) -> TriageTransfer {
    TriageTransfer::RefundDesk
}

/// Renamed.
#[agent(name = "refund-desk", transfers = [triage])]
async fn refund(_cx: &AgentContext) -> Option<RefundTransfer> {
    None
}

flow! { Desk: triage => [refund, dyn billing] }

fn main() {
    let by_name = trajectory!(Desk:
        agent "refund-desk",
        transfer triage -> "refund-desk",
        transfer "refund-desk" -> triage,
        transfer triage -> billing,
        tool lookup by "refund-desk",
    );
    let by_node = trajectory!(Desk:
        agent refund,
        transfer triage -> refund,
        transfer refund -> triage,
        transfer triage -> billing,
        tool lookup by refund,
    );
    assert_eq!(by_name, by_node);
    assert_eq!(
        by_node.steps()[1],
        ExpectedStep::Transfer { from: "triage", to: "refund-desk" }
    );
    assert_eq!(
        by_node.steps()[..4],
        Desk::trajectory()
            .agent(DeskAgent::Refund)
            .transfer(DeskTriageTarget::RefundDesk)
            .transfer(DeskRefundTarget::Triage)
            .transfer(DeskTriageTarget::Billing)
            .steps()[..]
    );
}
