//! Flows and agents in modules, with `pub`, `pub(crate)` and private visibility, named by path.
mod agents {
    use agentweave::prelude::*;

    /// The entry point.
    #[agent(transfers = [refund])]
    pub async fn triage(_cx: &AgentContext) {}

    /// Refunds.
    #[agent]
    pub(crate) async fn refund(_cx: &AgentContext) {}
}

mod flows {
    use agentweave::flow;

    flow! {
        /// Public.
        pub Desk: crate::agents::triage => [crate::agents::refund]
    }

    flow! {
        /// Crate-visible.
        pub(crate) CrateDesk: crate::agents::triage => [crate::agents::refund]
    }

    flow! {
        /// Private to this module.
        Private: crate::agents::triage => [crate::agents::refund]
    }

    pub(crate) fn private_shape() -> String {
        Private::new().unwrap().flow().shape()
    }
}

fn main() {
    let desk: agentweave::FlowAgent = flows::Desk::new().unwrap().into();
    assert_eq!(desk.shape(), "triage(refund)");
    assert_eq!(flows::CrateDesk::AGENTS, ["triage", "refund"]);
    assert_eq!(flows::DeskAgent::Refund.to_string(), "refund");
    assert_eq!(flows::private_shape(), "triage(refund)");
}
