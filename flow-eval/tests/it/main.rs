//! The integration tests of agentweave-eval: one test binary, a module per area. Each test binary
//! links the whole dependency graph, so one per crate keeps `cargo test` from spending its
//! time linking.
//! An area behind a feature is a `#[cfg(feature = ...)]` module here.
//! What the tests share is in `tests/common` ([`common`]).

#[path = "../common/mod.rs"]
mod common;

mod approvals;
mod cassette;
mod evalset;
mod html_browser;
#[cfg(feature = "openai")]
mod litellm_record_replay;
mod memory;
mod per_case;
mod toolsets;
mod trajectory;
