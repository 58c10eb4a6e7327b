//! The integration tests of agentweave-a2a: one test binary, a module per area. Each test binary
//! links the whole dependency graph, so one per crate keeps `cargo test` from spending its
//! time linking.

mod hostile;
mod remote_node;
