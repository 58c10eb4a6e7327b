use agentweave::prelude::*;

// A target listed twice, and a transfer to itself.
#[agent(transfers = [refund, refund, triage])]
async fn triage(_cx: &AgentContext) {}

// An empty list.
#[agent(transfers = [])]
async fn refund(_cx: &AgentContext) {}

// An empty name, rejected like `name = ""`.
#[agent(transfers = [""])]
async fn complaint(_cx: &AgentContext) {}

fn main() {}
