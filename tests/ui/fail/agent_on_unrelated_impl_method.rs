//! `#[agent]` on a method inside an impl of a type that is not an agent.
use agentweave::prelude::*;

struct Helper;

impl Helper {
    #[agent]
    async fn run(&self, _cx: &AgentContext) {}
}

fn main() {}
