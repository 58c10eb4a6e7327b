//! The guide's chapters (`docs/src/*.md`) and the README as doctests: `cargo test --doc`
//! compiles and runs every Rust code block in them. Only built for doctests.
//!
//! A new chapter gets one item here (a test checks that every chapter in
//! `docs/src/SUMMARY.md` has one).

#[doc = include_str!("../README.md")]
pub struct Readme;

#[doc = include_str!("../docs/src/introduction.md")]
pub struct Introduction;

#[doc = include_str!("../docs/src/model.md")]
pub struct Model;

#[doc = include_str!("../docs/src/dsl.md")]
pub struct Dsl;

#[doc = include_str!("../docs/src/interrupts-and-stores.md")]
pub struct InterruptsAndStores;

#[doc = include_str!("../docs/src/threads.md")]
pub struct Threads;

#[doc = include_str!("../docs/src/memory.md")]
pub struct Memory;

#[doc = include_str!("../docs/src/skills.md")]
pub struct SkillsAndTheAgentKit;

#[doc = include_str!("../docs/src/durable-execution.md")]
pub struct DurableExecution;

/// The server chapter needs the `server` feature
/// (`cargo test -p agentweave --features server --doc`).
#[cfg_attr(feature = "server", doc = include_str!("../docs/src/server.md"))]
pub struct Server;

#[doc = include_str!("../docs/src/security.md")]
pub struct Security;

#[doc = include_str!("../docs/src/evaluation.md")]
pub struct Evaluation;

#[doc = include_str!("../docs/src/delegation.md")]
pub struct Delegation;

#[doc = include_str!("../docs/src/interoperability.md")]
pub struct Interoperability;

#[doc = include_str!("../docs/src/reliability.md")]
pub struct Reliability;

#[doc = include_str!("../docs/src/budgets.md")]
pub struct Budgets;

#[doc = include_str!("../docs/src/performance.md")]
pub struct Performance;

/// The Temporal chapter needs the `temporal` feature
/// (`cargo test -p agentweave --features temporal --doc`).
#[cfg_attr(feature = "temporal", doc = include_str!("../docs/src/temporal.md"))]
pub struct Temporal;

#[doc = include_str!("../docs/src/architecture.md")]
pub struct Architecture;
