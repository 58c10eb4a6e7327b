//! What a run gets from the world: the [`Host`] contract (waits, the clock, fresh ids) and its
//! hosts: [`TokioHost`] for the runs a [`Runner`](crate::Runner) starts, [`StdHost`] for any
//! executor, and [`ManualHost`], stepped by hand in deterministic tests (give one to
//! `Runner::builder(..).host(..)`); [`within`] bounds a piece of work by a host's time.

pub use agentweave_runtime::host::*;
