//! A transfer step names only transfers the flow allows: with the typed builder, it is typed
//! by its source node's target enum (refund's has no `Complaint`: siblings do not transfer),
//! and another flow's agents or targets are not steps of this one; with `trajectory!`, the
//! transfer is checked at compile time and the error says where the agent may transfer.
use agentweave::prelude::*;
use agentweave::trajectory;

flow! { Desk: dyn triage => [dyn refund, dyn complaint(no_parent)] }
flow! { Shop: dyn cart => [dyn checkout] }

fn main() {
    let _ = Desk::trajectory()
        .agent(DeskAgent::Refund)
        .transfer(DeskRefundTarget::Complaint);
    let _ = Desk::trajectory().transfer(ShopCartTarget::Checkout);
    let _ = Desk::trajectory().agent(ShopAgent::Cart);
    let _ = trajectory!(Desk: agent refund, transfer refund -> complaint);
    let _ = trajectory!(Desk: transfer complaint -> triage);
    let _ = trajectory!(Desk: transfer triage -> billing);
}
