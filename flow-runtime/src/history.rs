//! What an agent sees of the conversation: history entries, rewriters and context policies.

use std::fmt;
use std::fmt::Write as _;
use std::sync::Arc;

use crate::event::AgentError;
use crate::input::Messages;
use crate::message::{Message, MessageRef, Role};

/// One entry of the history an agent's input is made from.
#[derive(Debug, Clone, PartialEq)]
pub struct HistoryEntry {
    /// Whether this is the run's input (from the user; never rewritten by the built-in policies).
    pub is_user_input: bool,
    /// The agent that produced the message (empty for user input).
    pub agent_name: Arc<str>,
    /// The message itself, shared.
    pub message: MessageRef,
}

/// Maps history entries to the messages the next agent receives.
///
/// Implemented for closures `Fn(&str, &[HistoryEntry]) -> Result<Vec<MessageRef>, AgentError>`,
/// whose first argument is the name of the agent about to run.
///
/// ```
/// use std::sync::Arc;
/// use flow_runtime::{ContextPolicy, HistoryEntry, Message, MessageRef};
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
#[derive(Clone, Default)]
pub enum ContextPolicy {
    /// Eino-compatible: user input and the agent's own messages as they are, every other
    /// agent's message rewritten by [`rewrite_for_context`].
    #[default]
    Rewrite,
    /// Only the run's input from the user.
    UserInputOnly,
    /// The user input, then the last `n` other entries, rewritten as for [`ContextPolicy::Rewrite`].
    LastN(usize),
    /// A rewriter of your own.
    Custom(Arc<dyn HistoryRewriter>),
}

impl ContextPolicy {
    /// A policy from a custom rewriter.
    pub fn custom(rewriter: impl HistoryRewriter) -> Self {
        ContextPolicy::Custom(Arc::new(rewriter))
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
            ContextPolicy::Custom(_) => f.write_str("Custom(..)"),
        }
    }
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

/// What one node's input was built from last time, kept in the session so the next input of
/// the same node extends it with the events recorded since instead of starting over: a
/// transfer then costs O(1) amortised in the length of the run.
pub(crate) struct InputCache {
    /// The run input it started from (its address and length).
    root: (usize, usize),
    /// Session events already turned into entries.
    pub(crate) seen: usize,
    /// The history entries so far (root input first).
    pub(crate) entries: Vec<HistoryEntry>,
    /// `entries[..done]` rewritten by [`ContextPolicy::Rewrite`] for this node.
    rewritten: Arc<Vec<MessageRef>>,
    done: usize,
}

impl InputCache {
    /// A cache holding only the run's input.
    pub(crate) fn new(root: &[MessageRef], user: &Arc<str>) -> Self {
        InputCache {
            root: (root.as_ptr() as usize, root.len()),
            seen: 0,
            entries: root
                .iter()
                .map(|m| HistoryEntry {
                    is_user_input: true,
                    agent_name: Arc::clone(user),
                    message: Arc::clone(m),
                })
                .collect(),
            rewritten: Arc::default(),
            done: 0,
        }
    }

    /// Whether this cache was built on `root`.
    pub(crate) fn starts_with(&self, root: &[MessageRef]) -> bool {
        self.root == (root.as_ptr() as usize, root.len())
    }

    /// Drops the last entry (a transfer's tool call, skipped with its result).
    pub(crate) fn pop_entry(&mut self) {
        self.entries.pop();
        if self.done > self.entries.len() {
            Arc::make_mut(&mut self.rewritten).pop();
            self.done -= 1;
        }
    }

    /// The input `policy` gives `agent_name`: under [`ContextPolicy::Rewrite`] only the
    /// entries added since the last call are rewritten; other policies see all entries.
    pub(crate) fn input(
        &mut self,
        agent_name: &str,
        policy: &ContextPolicy,
    ) -> Result<Messages, AgentError> {
        if !matches!(policy, ContextPolicy::Rewrite) {
            return policy.apply(agent_name, &self.entries).map(Messages::from);
        }
        if self.done < self.entries.len() {
            let all = Arc::make_mut(&mut self.rewritten);
            all.extend(
                self.entries[self.done..]
                    .iter()
                    .map(|e| rewrite_entry(agent_name, e)),
            );
            self.done = self.entries.len();
        }
        Ok(Messages::prefix_of(&self.rewritten, self.done))
    }
}

/// Rewrites another agent's message as a user message that gives context, the way Eino does:
///
/// - an assistant message: `For context: [A] said: CONTENT.` (if it has content), then
///   `` [A] called tool: `NAME` with arguments: ARGS.`` for each tool call;
/// - a tool result with content: ``For context: [A] `TOOL` tool returned result: CONTENT.``;
/// - anything else: `For context:`.
///
/// ```
/// use flow_runtime::{rewrite_for_context, Message};
/// let m = rewrite_for_context("triage", &Message::assistant("it is a refund"));
/// assert_eq!(m.content, "For context: [triage] said: it is a refund.");
/// ```
pub fn rewrite_for_context(agent_name: &str, message: &Message) -> Message {
    // Sized for the common shapes, so the text is written without regrowing.
    let calls: usize = message
        .tool_calls
        .iter()
        .map(|c| c.name.len() + c.arguments.len() + agent_name.len() + 40)
        .sum();
    let mut text = String::with_capacity(40 + agent_name.len() + message.content.len() + calls);
    text.push_str("For context:");
    match message.role {
        Role::Assistant => {
            if !message.content.is_empty() {
                let _ = write!(text, " [{agent_name}] said: {}.", message.content);
            }
            for call in &message.tool_calls {
                let _ = write!(
                    text,
                    " [{agent_name}] called tool: `{}` with arguments: {}.",
                    call.name, call.arguments
                );
            }
        }
        Role::Tool if !message.content.is_empty() => {
            let _ = write!(
                text,
                " [{agent_name}] `{}` tool returned result: {}.",
                message.tool_name.as_deref().unwrap_or(""),
                message.content
            );
        }
        _ => {}
    }
    Message::user(text)
}
