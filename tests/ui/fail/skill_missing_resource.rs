//! A `SKILL.md` whose instructions link to a resource the folder does not have
//! (`references/checklist.md`) does not compile.
use agentweave::prelude::*;

#[agent(skills = ["skills/release-notes", "skills/missing-link"])]
async fn writer(_cx: &AgentContext) {}

fn main() {}
