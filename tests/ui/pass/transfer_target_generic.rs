//! A generic helper over `FlowNode<T>` with the prelude and `agentweave::spec`'s two names in scope.
use agentweave::prelude::*;
use agentweave::spec::{FlowNode, TransferTarget};

#[agent]
async fn triage(_cx: &AgentContext) {}

flow! {
    Desk: triage => [dyn refund]
}

fn describe<T: TransferTarget>(node: FlowNode<T>) -> String {
    format!("{} may go to {:?}", node.name(), node.target_names())
}

fn main() {
    let desk = Desk::builder()
        .refund(|node| {
            assert_eq!(describe(node), "refund may go to [\"triage\"]");
            FnAgent::new(node, |_, _| async move { Ok(()) })
        })
        .build()
        .unwrap();
    assert_eq!(desk.flow().shape(), "triage(refund)");
}
