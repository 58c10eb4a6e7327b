//! The thread store contract's checks: the public conformance suite's.
// Each test crate uses some of them.
#![allow(unused_imports)]

pub use agentweave_runtime::store::conformance::{
    appends_reads_list_delete, leases, one_winner_among_tasks, refuses_bad_ids,
    thread_size_limit as size_limit,
};
