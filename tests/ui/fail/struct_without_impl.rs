use agentweave::prelude::*;

/// Looks orders up; its `#[agent] impl` block with `async fn run` is missing.
#[agent]
struct Lookup {
    endpoint: String,
}

fn main() {}
