//! Two `dyn` nodes whose names differ only in case style: one error, nothing after it.
use agentweave::prelude::*;

flow! { Desk: dyn triage => [dyn refund_desk, dyn RefundDesk] }

fn main() {
    let _ = Desk::builder();
}
