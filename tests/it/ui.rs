//! Compile-time behaviour of `#[agent]` and `flow!`: every misuse fails with its message
//! (`tests/ui/fail/*.stderr`), every supported form compiles (`tests/ui/pass`).
//!
//! Regenerate the expected messages with `TRYBUILD=overwrite cargo test --test it -- ui::`, then read
//! the diff.
//!
//! The messages are those of the default features: rustc's "the following other types implement
//! trait `Agent`" lists every implementor it can see, and the `a2a` feature adds `A2aAgent` to
//! that list. With `a2a` on (`--all-features`), the cases are not compared; the test says so.

#[test]
fn ui() {
    if cfg!(feature = "a2a") {
        eprintln!(
            "ui: skipped with the `a2a` feature: the expected messages are those of the default \
             features (rustc lists `A2aAgent` among the implementors of `Agent` too); run \
             `cargo test --test it -- ui::` without it"
        );
        return;
    }
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/fail/*.rs");
    t.pass("tests/ui/pass/*.rs");
}
