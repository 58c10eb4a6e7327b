//! The context policy: what an agent sees of the conversation ([`ContextPolicy`], over
//! [`HistoryEntry`]s, with [`HistoryRewriter`]s).

use std::fmt;
use std::sync::Arc;

use crate::context_form::rewrite_for_context;
use crate::event::AgentError;
use crate::message::MessageRef;

/// One entry of the history an agent's input is made from.
#[derive(Debug, Clone, PartialEq)]
pub struct HistoryEntry {
    /// Whether this is the run's input (from the user; never rewritten by the built-in policies).
    pub is_user_input: bool,
    /// The agent that produced the message (empty for user input).
    pub agent_name: Arc<str>,
    /// The message itself, shared.
    pub message: MessageRef,
    /// The turn of the conversation it belongs to: 0 for a run outside a thread; in a
    /// thread, earlier turns have smaller numbers and the running
    /// turn the largest.
    pub turn: u64,
}

/// Maps history entries to the messages the next agent receives.
///
/// Implemented for closures `Fn(&str, &[HistoryEntry]) -> Result<Vec<MessageRef>, AgentError>`,
/// whose first argument is the name of the agent about to run.
///
/// ```
/// use std::sync::Arc;
/// use agentweave_runtime::{ContextPolicy, HistoryEntry, Message, MessageRef};
/// // Keep only what the user said, as the agent would receive it.
/// let policy = ContextPolicy::custom(|_agent: &str, entries: &[HistoryEntry]| {
///     Ok(entries
///         .iter()
///         .filter(|e| e.is_user_input)
///         .map(|e| Arc::clone(&e.message))
///         .collect::<Vec<MessageRef>>())
/// });
/// # let _ = policy;
/// ```
pub trait HistoryRewriter: Send + Sync + 'static {
    /// The messages `agent_name` should receive for these entries.
    fn rewrite(
        &self,
        agent_name: &str,
        entries: &[HistoryEntry],
    ) -> Result<Vec<MessageRef>, AgentError>;
}

impl<F> HistoryRewriter for F
where
    F: Fn(&str, &[HistoryEntry]) -> Result<Vec<MessageRef>, AgentError> + Send + Sync + 'static,
{
    fn rewrite(
        &self,
        agent_name: &str,
        entries: &[HistoryEntry],
    ) -> Result<Vec<MessageRef>, AgentError> {
        self(agent_name, entries)
    }
}

/// How much of the conversation an agent is given, and in what form. Declared per agent (per
/// tree node); the default is Eino's.
///
/// In a thread, the entries are the whole conversation: every earlier
/// turn's user input and recorded messages, then the running turn's; each entry knows its
/// [`turn`](HistoryEntry::turn). The policies apply to them exactly as within one run: another
/// agent's tool calls from an earlier turn reach an agent as `For context:` messages, never as
/// tool calls of tools it does not have. [`LastTurns`](ContextPolicy::LastTurns) limits how
/// much of the thread an agent sees; a thread's
/// earlier turns are only read from the store as far back as the policy looks
/// ([`thread_window`](ContextPolicy::thread_window)).
///
/// To replace the older part of a long conversation by a summary, give the LLM agent a
/// [`ContextBudget`](crate::history::ContextBudget): its [`Summarizer`](crate::history::Summarizer)
/// (a model, or a function of yours) writes the summary once, the summary is recorded, and every
/// later input starts from it. A digest computed afresh at each input is a
/// [custom](ContextPolicy::custom) rewriter.
#[derive(Clone, Default)]
#[non_exhaustive]
pub enum ContextPolicy {
    /// Eino-compatible: user input and the agent's own messages as they are, every other
    /// agent's message rewritten by [`rewrite_for_context`].
    #[default]
    Rewrite,
    /// Only what the user said: the run's input, and in a thread every turn's input.
    UserInputOnly,
    /// The user input, then the last `n` other entries, rewritten as for [`ContextPolicy::Rewrite`].
    LastN(usize),
    /// Only the last `n` turns of a thread, the running one included (so `LastTurns(1)`, like
    /// `LastTurns(0)`, is the running turn alone), rewritten as for [`ContextPolicy::Rewrite`].
    LastTurns(usize),
    /// A rewriter of your own.
    Custom(Arc<dyn HistoryRewriter>),
}

impl ContextPolicy {
    /// A policy from a custom rewriter.
    pub fn custom(rewriter: impl HistoryRewriter) -> Self {
        ContextPolicy::Custom(Arc::new(rewriter))
    }

    /// How many turns before the running one this policy looks at in a thread: `Some(n)` for
    /// [`LastTurns(n + 1)`](ContextPolicy::LastTurns), `None` (all of them) for the others.
    /// A turn reads no earlier record from the thread store than this.
    pub fn thread_window(&self) -> Option<u64> {
        match self {
            ContextPolicy::LastTurns(n) => Some((*n as u64).saturating_sub(1)),
            _ => None,
        }
    }

    /// Applies the policy for `agent_name`.
    pub fn apply(
        &self,
        agent_name: &str,
        entries: &[HistoryEntry],
    ) -> Result<Vec<MessageRef>, AgentError> {
        match self {
            ContextPolicy::Rewrite => Ok(default_rewrite(agent_name, entries.iter())),
            ContextPolicy::UserInputOnly => Ok(entries
                .iter()
                .filter(|e| e.is_user_input)
                .map(|e| Arc::clone(&e.message))
                .collect()),
            ContextPolicy::LastN(n) => {
                let user = entries.iter().filter(|e| e.is_user_input);
                let others: Vec<&HistoryEntry> =
                    entries.iter().filter(|e| !e.is_user_input).collect();
                let tail = others[others.len().saturating_sub(*n)..].iter().copied();
                Ok(default_rewrite(agent_name, user.chain(tail)))
            }
            ContextPolicy::LastTurns(n) => {
                let from = first_kept_turn(entries, (*n).max(1));
                let start = entries.partition_point(|e| e.turn < from);
                Ok(default_rewrite(agent_name, entries[start..].iter()))
            }
            ContextPolicy::Custom(r) => r.rewrite(agent_name, entries),
        }
    }
}

impl fmt::Debug for ContextPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ContextPolicy::Rewrite => f.write_str("Rewrite"),
            ContextPolicy::UserInputOnly => f.write_str("UserInputOnly"),
            ContextPolicy::LastN(n) => write!(f, "LastN({n})"),
            ContextPolicy::LastTurns(n) => write!(f, "LastTurns({n})"),
            ContextPolicy::Custom(_) => f.write_str("Custom(..)"),
        }
    }
}

/// The first turn of the last `n` turns of `entries` (sorted by turn; the last is running).
fn first_kept_turn(entries: &[HistoryEntry], n: usize) -> u64 {
    let current = entries.last().map_or(0, |e| e.turn);
    (current + 1).saturating_sub(n as u64)
}

fn default_rewrite<'a>(
    agent_name: &str,
    entries: impl Iterator<Item = &'a HistoryEntry>,
) -> Vec<MessageRef> {
    entries.map(|e| rewrite_entry(agent_name, e)).collect()
}

/// One entry as [`ContextPolicy::Rewrite`] hands it to `agent_name`.
fn rewrite_entry(agent_name: &str, e: &HistoryEntry) -> MessageRef {
    if e.is_user_input || &*e.agent_name == agent_name {
        Arc::clone(&e.message)
    } else {
        Arc::new(rewrite_for_context(&e.agent_name, &e.message))
    }
}
