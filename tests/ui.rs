//! Compile-time behaviour of `#[agent]` and `flow!`: every misuse fails with its message
//! (`tests/ui/fail/*.stderr`), every supported form compiles (`tests/ui/pass`).
//!
//! Regenerate the expected messages with `TRYBUILD=overwrite cargo test --test ui`, then read
//! the diff.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/fail/*.rs");
    t.pass("tests/ui/pass/*.rs");
}
