//! What an agent sees of the conversation: history entries, rewriters and context policies.
//!
//! - `policy`: [`ContextPolicy`] (Eino's rewrite by default, or the last turns, a summary, a
//!   custom rewriter) over [`HistoryEntry`]s; [`HistoryRewriter`] and [`Summarizer`];
//! - `earlier`: a thread's earlier turns as history entries, read once per turn from its
//!   [`ThreadStore`](crate::ThreadStore);
//! - the per-message rewrite itself, [`rewrite_for_context`], is a word of the runtime
//!   (`context_form`), shared with events and sessions below this module.

mod earlier;
mod policy;

pub use crate::context_form::rewrite_for_context;
pub(crate) use earlier::ThreadHistory;
pub use policy::{ContextPolicy, HistoryEntry, HistoryRewriter, Summarizer};
