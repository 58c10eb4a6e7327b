//! The compile-time tests of agentflow's `#[agent]` and `flow!` (trybuild): `fail/*.rs` with the
//! message rustc gives each (`fail/*.stderr`), `pass/*.rs` the forms that compile. This library
//! is empty; the cases run with `cargo test -p agentweave-ui-tests`.
