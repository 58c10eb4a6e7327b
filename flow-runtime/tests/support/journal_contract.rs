//! The journal store contract's checks: the public conformance suite's.
// Each test crate uses some of them.
#![allow(unused_imports)]

pub use agentweave_runtime::store::conformance::{
    appends_reads_truncates_deletes, deferred_batches_read_back_and_cut,
    deferred_steps_are_encoded_when_read, many_runs_append_at_once, one_append_among_tasks,
    refuses_bad_ids_and_kinds, step, unsynced_appends_keep_the_condition,
};
