//! A skill whose `allowed-tools` names a tool the agent does not declare (`fetch_url`) does not
//! compile, on `#[agent]` and on a `flow!` node.
use agentweave::prelude::*;

#[agent(skills = ["skills/web-fetch"], tools = [read_file, write_file])]
async fn browser(_cx: &AgentContext) {}

flow! { Desk: dyn researcher(skills = ["skills/web-fetch"], tools = [read_file]) }

fn main() {}
