//! A URL written on a `remote` node: one error at the URL, saying where it goes.
use agentweave::prelude::*;

flow! { Desk: dyn triage => [remote billing = "http://billing.internal:9999"] }

mod second {
    use agentweave::prelude::*;
    flow! { Shop: dyn cart => [remote payments("http://payments.internal:9999")] }
}

fn main() {}
