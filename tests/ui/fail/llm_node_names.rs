//! An LLM agent of a `dyn` node takes its name and targets from the flow: a target the node
//! does not have, or a node the flow does not have, does not compile.
use agentweave::model::{ScriptStep, ScriptedModel};
use agentweave::prelude::*;

flow! { Desk: dyn triage => [dyn refund, dyn complaint => [dyn escalation(no_parent)]] }

fn main() {
    let _ = Desk::builder()
        .triage(|node| {
            // `escalation` is not a neighbour of `triage`.
            let model = ScriptedModel::rules()
                .otherwise(ScriptStep::transfer(DeskTriageTarget::Escalation.as_str()));
            ChatModelAgent::builder(node, model).build().unwrap()
        })
        // A node the flow does not have.
        .refnd(|node| FnAgent::new(node, |_, _| async move { Ok(()) }));
    // `escalation` is barred from its parent and has no sub-agents: it may transfer nowhere.
    let _ = Desk::builder().escalation(|node| {
        let _ = node.targets()[0].as_str();
        FnAgent::new(node, |_, _| async move { Ok(()) })
    });
}
