//! The closure of a `dyn` node returns a `Result` of the agent.
use agentweave::prelude::*;
use agentweave::model::ScriptStep;
use agentweave::model::ScriptedModel;

#[agent]
async fn triage(_cx: &AgentContext) {}

flow! {
    Desk: triage => [dyn refund]
}

fn main() {
    let model = ScriptedModel::new(Vec::<ScriptStep>::new());
    let _ = Desk::builder().refund(|node| ChatModelAgent::builder(node, model).build());
}
