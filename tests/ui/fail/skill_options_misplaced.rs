//! `skills` and `tools` where they cannot work: on a node naming an agent type (which declares
//! its skills itself), on a workflow, `tools` without `skills`, and one skill listed twice.
use agentweave::prelude::*;

#[agent]
async fn writer(_cx: &AgentContext) {}

#[agent(tools = [read_file])]
async fn reader(_cx: &AgentContext) {}

#[agent(skills = ["skills/release-notes", "skills/release-notes/"])]
async fn twice(_cx: &AgentContext) {}

flow! {
    Desk: steps(skills = ["skills/release-notes"]) = sequential[
        writer(skills = ["skills/release-notes"]),
        dyn notes(tools = [read_file]),
    ]
}

fn main() {}
