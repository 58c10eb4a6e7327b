//! The integration tests of agentweave-temporal: one test binary, a module per area. Each test binary
//! links the whole dependency graph, so one per crate keeps `cargo test` from spending its
//! time linking.
//! An area behind a feature is a `#[cfg(feature = ...)]` module here.
//! The files left in `tests/` are binaries of their own, each saying why at its top.
//! What the tests share is in `tests/support` ([`support`]).

#[cfg(feature = "sdk")]
#[path = "../support/mod.rs"]
mod support;

mod effects_in_process;
#[cfg(feature = "sdk")]
mod retries;
#[cfg(feature = "sdk")]
mod spending;
#[cfg(feature = "sdk")]
mod temporal;
#[cfg(feature = "sdk")]
mod thread_semantics;
