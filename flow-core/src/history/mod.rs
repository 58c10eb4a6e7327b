//! What an agent sees of the conversation: history entries, rewriters and context policies.
//!
//! - `policy`: [`ContextPolicy`] (Eino's rewrite by default, or the last turns, the user's
//!   input only, a custom rewriter) over [`HistoryEntry`]s; [`HistoryRewriter`];
//! - `budget`: [`ContextBudget`], a token budget for what an agent sends its model: counting
//!   ([`TokenCounter`], corrected by the model's reported usage: [`UsageCalibration`]), where
//!   a compaction cuts ([`plan_compaction`]), who summarises
//!   ([`Summarizer`], [`ModelSummarizer`]) and the mark the summary's event carries
//!   ([`CompactionRecord`]); the ReAct agent applies it before each model call;
//! - `tiktoken` (feature `tiktoken`): `TiktokenCounter`, exact counts with OpenAI's
//!   tokenizers;
//! - `earlier`: a thread's earlier turns as history entries, read once per turn from its
//!   `ThreadStore`;
//! - the per-message rewrite itself, [`rewrite_for_context`], is a word of the runtime
//!   (`context_form`), shared with events and sessions below this module.

mod budget;
mod earlier;
mod policy;
#[cfg(feature = "tiktoken")]
mod tiktoken;

pub use crate::context_form::rewrite_for_context;
pub(crate) use budget::context_form_tokens;
pub use budget::{
    estimate_tokens, plan_compaction, summary_message, CompactionRecord, ContextBudget,
    EstimatedTokens, ModelSummarizer, Summarizer, TokenCounter, UsageCalibration,
    DEFAULT_SUMMARY_PROMPT,
};
#[doc(hidden)]
pub use earlier::ThreadHistory;
pub use earlier::{EarlierTurn, EarlierTurns};
pub use policy::{ContextPolicy, HistoryEntry, HistoryRewriter};
#[cfg(feature = "tiktoken")]
pub use tiktoken::{TiktokenCounter, UnknownTokenizer};
