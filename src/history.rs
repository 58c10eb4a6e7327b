//! What each agent sees of a run's history and of earlier turns: [`ContextPolicy`], its
//! rewriter and summarizer, and the context budget that compacts a long conversation
//! ([`ContextBudget`]).

pub use agentweave_runtime::history::*;
