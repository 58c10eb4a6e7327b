//! A `SKILL.md` whose front matter the format refuses (here a field it does not know) does not
//! compile, by the rules the runtime's loader applies.
use agentweave::prelude::*;

#[agent(skills = ["skills/bad-front-matter"])]
async fn writer(_cx: &AgentContext) {}

fn main() {}
