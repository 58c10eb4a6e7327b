//! The checkpoint store contract's checks: the public conformance suite's.

pub use flow_runtime::store::conformance::{
    lifecycle, one_claim_among_tasks, pending_and_purge, refuses_escaping_ids, size_limit,
};
