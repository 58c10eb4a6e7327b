//! The integration tests of agentweave-core: one test binary, a module per area. Each test binary
//! links the whole dependency graph, so one per crate keeps `cargo test` from spending its
//! time linking.

mod manual_host;
