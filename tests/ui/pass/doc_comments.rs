//! Doc comments become descriptions and flow docs; `description` overrides a doc comment.
use agentweave::prelude::*;

/// Decides which desk owns the request.
///
/// Second paragraph.
#[agent(transfers = [refund])]
async fn triage(_cx: &AgentContext) {}

/// This doc comment is for rustdoc only.
#[agent(description = "Issues refunds.")]
async fn refund(_cx: &AgentContext) {}

flow! {
    /// The desk.
    ///
    /// More about the desk.
    pub Desk: triage => [refund],
}

fn main() {
    assert_eq!(
        <triage as AgentSpec>::DESCRIPTION,
        "Decides which desk owns the request.\n\nSecond paragraph."
    );
    let flow = Desk::new().unwrap().into_flow();
    assert_eq!(flow.find("refund").unwrap().description(), "Issues refunds.");
}
