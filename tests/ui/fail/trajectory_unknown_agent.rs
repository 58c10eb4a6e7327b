//! An expected trajectory names only agents the flow has: with the typed builder, an agent
//! enum has no variant for another; with `trajectory!`, the name is checked at compile time
//! and the error lists the flow's agents.
use agentweave::prelude::*;
use agentweave::trajectory;

flow! { Desk: dyn triage => [dyn refund, dyn complaint] }

fn main() {
    let _ = Desk::trajectory()
        .agent(DeskAgent::Triage)
        .agent(DeskAgent::Billing);
    let _ = trajectory!(Desk: agent triage, agent billing);
    let _ = trajectory!(Desk: tool lookup_order({"order_id": 42}) by refnd);
}
