//! `#[agent]` on the `run` method of a struct agent's impl block: one error, at the method.
use agentweave::prelude::*;

#[agent]
struct Lookup;

impl Lookup {
    #[agent]
    async fn run(&self, cx: &AgentContext) {
        cx.say("looked up");
    }
}

fn main() {}
