//! The record of one run.
//!
//! - `record`: [`Session`] (the events the run's agents recorded, in order, and the session
//!   values every agent of the run reads and writes) and [`SessionEvent`] (one recorded event,
//!   with its message's context form written once);
//! - `input_cache`: what each node's input was built from last time, so a transfer extends it
//!   instead of rebuilding (kept in the session, read by the tree's run);
//! - `prompt_tokens`: an agent run's prompt tokens as its budget checks last counted them (kept
//!   with the run's event queue, only when a budget reads them);
//! - `usage`: the run's token usage, kept among the values.
//!
//! The session sits below the agent model: it knows events and messages, and the history
//! policies an input is shaped by, not agents or trees.

mod input_cache;
mod prompt_tokens;
mod record;
mod usage;

pub(crate) use input_cache::InputCache;
pub(crate) use prompt_tokens::PromptCount;
pub(crate) use record::InputKey;
pub use record::{Session, SessionEvent};
