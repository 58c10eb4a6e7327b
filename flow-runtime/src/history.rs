//! What an agent sees of the conversation: history entries, rewriters and context policies.

use std::fmt;
use std::sync::Arc;

use crate::event::AgentError;
use crate::input::Messages;
use crate::message::{ContentPart, Message, MessageRef, Role};
use crate::session::SessionEvent;

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
    /// [thread](crate::Runner::turn), earlier turns have smaller numbers and the running
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

/// Writes the summary of earlier turns for [`ContextPolicy::Summary`]: given the agent's name
/// and the entries of the turns to summarise, returns the message that stands for them.
///
/// Implemented for closures `Fn(&str, &[HistoryEntry]) -> Result<Message, AgentError>`.
pub trait Summarizer: Send + Sync + 'static {
    /// The message that stands for `entries` in `agent_name`'s input.
    fn summarize(&self, agent_name: &str, entries: &[HistoryEntry]) -> Result<Message, AgentError>;
}

impl<F> Summarizer for F
where
    F: Fn(&str, &[HistoryEntry]) -> Result<Message, AgentError> + Send + Sync + 'static,
{
    fn summarize(&self, agent_name: &str, entries: &[HistoryEntry]) -> Result<Message, AgentError> {
        self(agent_name, entries)
    }
}

/// How much of the conversation an agent is given, and in what form. Declared per agent (per
/// tree node); the default is Eino's.
///
/// In a [thread](crate::Runner::turn), the entries are the whole conversation: every earlier
/// turn's user input and recorded messages, then the running turn's; each entry knows its
/// [`turn`](HistoryEntry::turn). The policies apply to them exactly as within one run: another
/// agent's tool calls from an earlier turn reach an agent as `For context:` messages, never as
/// tool calls of tools it does not have. [`LastTurns`](ContextPolicy::LastTurns) and
/// [`Summary`](ContextPolicy::Summary) limit how much of the thread an agent sees; a thread's
/// earlier turns are only read from the store as far back as the policy looks
/// ([`thread_window`](ContextPolicy::thread_window)).
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
    /// The turns before the last `keep_turns` (the running one counted) are replaced by one
    /// message written by `summarizer`; the rest is rewritten as for [`ContextPolicy::Rewrite`].
    Summary {
        /// How many of the latest turns are kept whole (at least the running one).
        keep_turns: usize,
        /// Writes the message standing for the older turns.
        summarizer: Arc<dyn Summarizer>,
    },
    /// A rewriter of your own.
    Custom(Arc<dyn HistoryRewriter>),
}

impl ContextPolicy {
    /// A policy from a custom rewriter.
    pub fn custom(rewriter: impl HistoryRewriter) -> Self {
        ContextPolicy::Custom(Arc::new(rewriter))
    }

    /// A summary policy: turns older than the last `keep_turns` (the running one counted) are
    /// replaced by the message `summarizer` writes for them.
    ///
    /// ```
    /// use flow_runtime::{ContextPolicy, HistoryEntry, Message};
    /// let policy = ContextPolicy::summary(2, |_agent: &str, older: &[HistoryEntry]| {
    ///     Ok(Message::system(format!("Earlier: {} messages.", older.len())))
    /// });
    /// # let _ = policy;
    /// ```
    pub fn summary(keep_turns: usize, summarizer: impl Summarizer) -> Self {
        ContextPolicy::Summary {
            keep_turns,
            summarizer: Arc::new(summarizer),
        }
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
            ContextPolicy::Summary {
                keep_turns,
                summarizer,
            } => {
                let from = first_kept_turn(entries, (*keep_turns).max(1));
                let start = entries.partition_point(|e| e.turn < from);
                let mut out = Vec::with_capacity(entries.len() - start + 1);
                if start > 0 {
                    out.push(Arc::new(
                        summarizer.summarize(agent_name, &entries[..start])?,
                    ));
                }
                out.extend(default_rewrite(agent_name, entries[start..].iter()));
                Ok(out)
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
            ContextPolicy::Summary { keep_turns, .. } => {
                write!(f, "Summary {{ keep_turns: {keep_turns}, .. }}")
            }
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

/// How many entries past the run's input an input cache makes room for at its start.
const FIRST_ENTRIES: usize = 4;

/// How many agents' names an input cache makes room for at its start.
const FIRST_AUTHORS: usize = 8;

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
    /// For each entry, the session event it was recorded from (if any), whose rewritten
    /// form every agent of the run shares.
    sources: Vec<Option<Arc<SessionEvent>>>,
    /// The agents with an entry (user input aside).
    authors: rustc_hash::FxHashSet<Arc<str>>,
    /// `entries[..done]` rewritten by [`ContextPolicy::Rewrite`] for this node.
    rewritten: Arc<Vec<MessageRef>>,
    done: usize,
}

impl InputCache {
    /// An empty cache for a run whose input is `root` (its entries are pushed next: a thread's
    /// earlier turns, then the run's input).
    pub(crate) fn new(root: &[MessageRef]) -> Self {
        // Room for the input and a hop's messages (a one-transfer run fits).
        let room = root.len() + FIRST_ENTRIES;
        InputCache {
            root: (root.as_ptr() as usize, root.len()),
            seen: 0,
            entries: Vec::with_capacity(room),
            sources: Vec::with_capacity(room),
            // Room for a few agents, instead of regrowing at 3 and 7.
            authors: rustc_hash::FxHashSet::with_capacity_and_hasher(
                FIRST_AUTHORS,
                Default::default(),
            ),
            rewritten: Arc::new(Vec::with_capacity(room)),
            done: 0,
        }
    }

    /// Whether this cache was built on `root`.
    pub(crate) fn starts_with(&self, root: &[MessageRef]) -> bool {
        self.root == (root.as_ptr() as usize, root.len())
    }

    /// Appends an entry (recorded from `source`, if it comes from this run's session), or
    /// with `skip` leaves out a transfer's messages: the event that carried the transfer
    /// (`is_transfer`) and the tool-call message that asked for it.
    pub(crate) fn push(
        &mut self,
        entry: HistoryEntry,
        source: Option<Arc<SessionEvent>>,
        is_transfer: bool,
        skip: bool,
    ) {
        if !(skip && is_transfer) {
            // The author of the entry before is known already (an agent's messages come in
            // runs: a transfer's call and result, a tool call and its result).
            let known = self.entries.last().is_some_and(|before| {
                !before.is_user_input && Arc::ptr_eq(&before.agent_name, &entry.agent_name)
            });
            if !entry.is_user_input && !known && !self.authors.contains(&entry.agent_name) {
                self.authors.insert(Arc::clone(&entry.agent_name));
            }
            if self.entries.len() == self.entries.capacity() {
                // A run that outgrows its first room is a long one: four times the room, not
                // twice (fewer copies of the three lists while it is short).
                self.reserve(3 * self.entries.len().max(1));
            }
            self.entries.push(entry);
            self.sources.push(source);
            return;
        }
        let message = &entry.message;
        if message.role == Role::Tool {
            if let Some(prev) = self.entries.last() {
                let asked = !prev.is_user_input
                    && prev.agent_name == entry.agent_name
                    && prev.message.role == Role::Assistant
                    && prev.message.tool_calls.iter().any(|c| {
                        message
                            .tool_call_id
                            .as_deref()
                            .map_or(true, |id| c.id == id)
                    });
                if asked {
                    self.pop_entry();
                }
            }
        }
    }

    /// Drops the last entry (a transfer's tool call, skipped with its result).
    fn pop_entry(&mut self) {
        self.entries.pop();
        self.sources.pop();
        if self.done > self.entries.len() {
            Arc::make_mut(&mut self.rewritten).pop();
            self.done -= 1;
        }
    }

    /// Makes room for `n` more entries.
    pub(crate) fn reserve(&mut self, n: usize) {
        self.entries.reserve(n);
        self.sources.reserve(n);
    }

    /// Whether `agent` has an entry (as far as this cache knows: an entry left out since may
    /// still count).
    pub(crate) fn has_spoken(&self, agent: &str) -> bool {
        self.authors.contains(agent)
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
        Ok(self.rewritten_for(Some(agent_name)))
    }

    /// The input [`ContextPolicy::Rewrite`] gives an agent that has no entry here: every
    /// agent's message in its context form. Shared by all such agents of a run.
    pub(crate) fn input_for_newcomer(&mut self) -> Messages {
        self.rewritten_for(None)
    }

    /// The entries rewritten for `agent_name` (`None`: an agent with no entry), extending
    /// what was rewritten last time.
    fn rewritten_for(&mut self, agent_name: Option<&str>) -> Messages {
        if self.done < self.entries.len() {
            let all = Arc::make_mut(&mut self.rewritten);
            // The same room as the entries: it grows with them, at once.
            all.reserve(self.entries.capacity().saturating_sub(all.len()));
            let new = self.entries[self.done..]
                .iter()
                .zip(&self.sources[self.done..]);
            all.extend(new.map(|(e, source)| {
                if e.is_user_input || Some(&*e.agent_name) == agent_name {
                    Arc::clone(&e.message)
                } else if let Some(event) = source {
                    event.context_form(&e.message)
                } else {
                    Arc::new(rewrite_for_context(&e.agent_name, &e.message))
                }
            }));
            self.done = self.entries.len();
        }
        Messages::prefix_of(&self.rewritten, self.done)
    }
}

/// A message of `agent` with its [context form](rewrite_for_context), made ahead of time (a
/// tree makes them for the transfer messages of each of its edges): the session takes the
/// form instead of rewriting when an event it records carries this very message from this
/// very agent.
#[derive(Debug)]
pub(crate) struct ContextForm {
    agent: Arc<str>,
    message: MessageRef,
    form: MessageRef,
}

impl ContextForm {
    /// `message` of `agent`, rewritten now.
    pub(crate) fn new(agent: &Arc<str>, message: &MessageRef) -> Self {
        ContextForm {
            agent: Arc::clone(agent),
            message: Arc::clone(message),
            form: Arc::new(rewrite_for_context(agent, message)),
        }
    }

    /// The context form, if this was made for `message` of `agent`, or for a message of
    /// `agent` that reads the same (a model's transfer call, say, which differs from the
    /// tree's only in its call id).
    pub(crate) fn form_of(&self, agent: &Arc<str>, message: &MessageRef) -> Option<&MessageRef> {
        let same_agent = Arc::ptr_eq(&self.agent, agent) || self.agent == *agent;
        let same_message =
            Arc::ptr_eq(&self.message, message) || reads_the_same(&self.message, message);
        (same_agent && same_message).then_some(&self.form)
    }
}

/// Rewrites another agent's message as a user message that gives context, the way Eino does:
///
/// - an assistant message: `For context: [A] said: CONTENT.` (if it has content), then for
///   each of its [content parts](Message::parts) ` [A] said: TEXT.` for text and
///   ` [A] shared DESCRIPTION.` for anything else (an image: `an image at URL`,
///   `an image (image/png, N bytes)`, see [`ContentPart::describe`]), then
///   `` [A] called tool: `NAME` with arguments: ARGS.`` for each tool call;
/// - a tool result: ``For context: [A] `TOOL` tool returned result: CONTENT.`` (if it has
///   content), then per part ``[A] `TOOL` tool returned result: TEXT.`` or
///   ``[A] `TOOL` tool returned DESCRIPTION.``;
/// - anything else: `For context:`.
///
/// The rewritten message is text only: images are described, not passed on (a
/// [custom policy](ContextPolicy::Custom) can pass them on).
///
/// ```
/// use flow_runtime::{rewrite_for_context, Message};
/// let m = rewrite_for_context("triage", &Message::assistant("it is a refund"));
/// assert_eq!(m.content, "For context: [triage] said: it is a refund.");
/// let m = rewrite_for_context(
///     "scanner",
///     &Message::assistant("the receipt").with_image_url("https://x/r.png"),
/// );
/// assert_eq!(
///     m.content,
///     "For context: [scanner] said: the receipt. [scanner] shared an image at https://x/r.png."
/// );
/// ```
pub fn rewrite_for_context(agent_name: &str, message: &Message) -> Message {
    // Sized for the common shapes, so the text is written without regrowing.
    let calls: usize = message
        .tool_calls
        .iter()
        .map(|c| c.name.len() + c.arguments.len() + agent_name.len() + 40)
        .sum();
    let tool = message.tool_name.as_deref().map_or(0, str::len);
    let mut text =
        String::with_capacity(64 + agent_name.len() + tool + message.content.len() + calls);
    text.push_str("For context:");
    // Written piece by piece: this runs once per message another agent reads.
    let said = |text: &mut String, what: &str| {
        push_all(text, &[" [", agent_name, "] said: ", what, "."]);
    };
    match message.role {
        Role::Assistant => {
            if !message.content.is_empty() {
                said(&mut text, &message.content);
            }
            // Parts other agents cannot see are described, not dropped.
            for part in &message.parts {
                match part {
                    ContentPart::Text { text: more } => said(&mut text, more),
                    other => push_all(
                        &mut text,
                        &[" [", agent_name, "] shared ", &other.describe(), "."],
                    ),
                }
            }
            for call in &message.tool_calls {
                push_all(
                    &mut text,
                    &[
                        " [",
                        agent_name,
                        "] called tool: `",
                        &call.name,
                        "` with arguments: ",
                        &call.arguments,
                        ".",
                    ],
                );
            }
        }
        Role::Tool => {
            let tool = message.tool_name.as_deref().unwrap_or("");
            let returned = |text: &mut String, what: &str, result: &str| {
                push_all(
                    text,
                    &[
                        " [",
                        agent_name,
                        "] `",
                        tool,
                        "` tool returned ",
                        what,
                        result,
                        ".",
                    ],
                );
            };
            if !message.content.is_empty() {
                returned(&mut text, "result: ", &message.content);
            }
            for part in &message.parts {
                match part {
                    ContentPart::Text { text: more } => returned(&mut text, "result: ", more),
                    other => returned(&mut text, "", &other.describe()),
                }
            }
        }
        _ => {}
    }
    Message::user(text)
}

/// Whether [`rewrite_for_context`] makes the same form of `a` and `b` (for one agent): they
/// agree on all it reads (call ids aside).
pub(crate) fn reads_the_same(a: &Message, b: &Message) -> bool {
    a.role == b.role
        && a.content == b.content
        && a.parts == b.parts
        && a.tool_name == b.tool_name
        && a.tool_calls.len() == b.tool_calls.len()
        && a.tool_calls
            .iter()
            .zip(&b.tool_calls)
            .all(|(x, y)| x.name == y.name && x.arguments == y.arguments)
}

fn push_all(text: &mut String, pieces: &[&str]) {
    for piece in pieces {
        text.push_str(piece);
    }
}
