//! A skill folder without a `SKILL.md` does not compile.
use agentweave::prelude::*;

#[agent(skills = ["skills/no-skill-md"])]
async fn writer(_cx: &AgentContext) {}

fn main() {}
