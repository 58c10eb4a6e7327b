//! A URL written on a `remote` node: one error at the URL, saying where it goes.
use agentflow::prelude::*;

flow! { Desk: dyn triage => [remote billing = "http://billing.internal:9999"] }

mod second {
    use agentflow::prelude::*;
    flow! { Shop: dyn cart => [remote payments("http://payments.internal:9999")] }
}

fn main() {}
