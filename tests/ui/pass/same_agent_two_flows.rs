//! One agent type placed in two flows, at different places.
use agentweave::prelude::*;

#[agent(transfers = [refund])]
async fn triage(_cx: &AgentContext) {}
#[agent(transfers = [triage])]
async fn refund(_cx: &AgentContext) {}
#[agent(transfers = [refund])]
async fn intake(_cx: &AgentContext) {}

flow! {
    Desk: triage => [refund]
}

flow! {
    /// Here `refund` sits under `intake`, and `triage` under `refund`: each agent's declared
    /// targets are checked against its neighbours in this flow.
    Kiosk: intake => [refund => [triage]]
}

fn main() {
    assert_eq!(Desk::new().unwrap().flow().shape(), "triage(refund)");
    assert_eq!(
        Kiosk::new().unwrap().flow().shape(),
        "intake(refund(triage))"
    );
    assert_ne!(Desk::FINGERPRINT, Kiosk::FINGERPRINT);
}
