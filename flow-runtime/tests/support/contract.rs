//! The checkpoint store contract's checks: the public conformance suite's.
// Each test crate uses some of them.
#![allow(unused_imports)]

pub use agentweave_runtime::store::conformance::{
    lifecycle, one_claim_among_tasks, pending_and_purge, refuses_escaping_ids, size_limit,
};
