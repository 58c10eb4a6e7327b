//! Compile-time behaviour of `#[agent]` and `flow!`: every misuse fails with its message
//! (`fail/*.stderr`), every supported form compiles (`pass`).
//!
//! Regenerate the expected messages with `TRYBUILD=overwrite cargo test -p agentflow-ui-tests`,
//! then read the diff.
//!
//! The cases build against the facade without its features (this package depends on it with
//! `default-features = false`): rustc's "the following other types implement trait `Agent`"
//! lists every implementor it can see, so the expected messages are those of that build whatever
//! features the rest of the workspace is built with.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("fail/*.rs");
    t.pass("pass/*.rs");
}
