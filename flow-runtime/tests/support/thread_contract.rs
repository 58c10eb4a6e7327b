//! The thread store contract's checks: the public conformance suite's.

pub use flow_runtime::store::conformance::{
    appends_reads_list_delete, leases, one_winner_among_tasks, refuses_bad_ids,
    thread_size_limit as size_limit,
};
