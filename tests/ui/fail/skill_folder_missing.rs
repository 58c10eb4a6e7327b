//! A skill folder that does not exist does not compile: the error, at the path, names the
//! skill, the path and the fix.
use agentweave::prelude::*;

#[agent(skills = ["skills/releese-notes"])]
async fn writer(_cx: &AgentContext) {}

fn main() {}
