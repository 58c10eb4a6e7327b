//! [`InputCache`]: what one node's input was built from last time, kept in the session so the
//! next input extends it instead of starting over.

use std::sync::Arc;

use super::SessionEvent;
use crate::context_form::rewrite_for_context;
use crate::event::AgentError;
use crate::history::{context_form_tokens, estimate_tokens, ContextPolicy, HistoryEntry};
use crate::input::Messages;
use crate::message::{Message, MessageRef, Role};

/// How many entries past the run's input an input cache makes room for at its start.
const FIRST_ENTRIES: usize = 4;

/// Up to how many authors an input cache keeps in a list (compared one by one) before it
/// keeps them in a set.
const LISTED_AUTHORS: usize = 32;

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
    /// The positions of the entries that are a delegated agent's result (their event finished
    /// a task), in order: few or none, so nothing is kept for the other entries.
    results: Vec<usize>,
    /// The agents with an entry (user input aside).
    authors: Authors,
    /// `entries[..done]` rewritten by [`ContextPolicy::Rewrite`] for this node.
    rewritten: Arc<Vec<MessageRef>>,
    done: usize,
    /// The estimated tokens of `rewritten[..done]`, kept as it grows when the run's budgets
    /// read the prompt's size (each message is estimated once a run, not once a model call).
    rewritten_tokens: Option<u64>,
    /// The summaries agents recorded when their context budget compacted their conversation
    /// (never entries: no other agent sees them), in order.
    compactions: Vec<Compacted>,
}

/// The agents with an entry in a cache: a run has few, so a list until it has many (a new
/// cache allocates nothing for it, where a set allocates its table). Each name is kept with
/// its hash, so a lookup hashes once and compares numbers, as a set would. The first is kept
/// in place (a one-agent conversation, the most common input, allocates nothing here).
#[derive(Default)]
struct Authors {
    first: Option<(u64, Arc<str>)>,
    list: Vec<(u64, Arc<str>)>,
    /// All of them, once there are more than [`LISTED_AUTHORS`].
    set: Option<rustc_hash::FxHashSet<Arc<str>>>,
}

impl Authors {
    fn hash(agent: &str) -> u64 {
        use std::hash::BuildHasher;
        rustc_hash::FxBuildHasher.hash_one(agent)
    }

    fn contains(&self, agent: &str) -> bool {
        match &self.set {
            Some(set) => set.contains(agent),
            None => self.listed(Self::hash(agent), agent),
        }
    }

    fn listed(&self, hash: u64, agent: &str) -> bool {
        let is = |(h, a): &(u64, Arc<str>)| *h == hash && **a == *agent;
        self.first.as_ref().is_some_and(is) || self.list.iter().any(is)
    }

    fn insert(&mut self, agent: &Arc<str>) {
        match &mut self.set {
            Some(set) => {
                if !set.contains(&**agent) {
                    set.insert(Arc::clone(agent));
                }
            }
            None => {
                let hash = Self::hash(agent);
                if self.listed(hash, agent) {
                    return;
                }
                if self.first.is_none() {
                    self.first = Some((hash, Arc::clone(agent)));
                    return;
                }
                if self.list.len() + 1 < LISTED_AUTHORS {
                    self.list.push((hash, Arc::clone(agent)));
                    return;
                }
                let mut set: rustc_hash::FxHashSet<Arc<str>> = self
                    .first
                    .take()
                    .into_iter()
                    .chain(self.list.drain(..))
                    .map(|(_, a)| a)
                    .collect();
                set.insert(Arc::clone(agent));
                self.set = Some(set);
            }
        }
    }
}

/// A summary an agent recorded ([`CompactionRecord`](crate::history::CompactionRecord)).
struct Compacted {
    agent: Arc<str>,
    /// How many entries came before it.
    at: usize,
    /// How many of the agent's entries just before it the summary does not replace.
    kept: usize,
    summary: MessageRef,
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
            results: Vec::new(),
            authors: Authors::default(),
            rewritten: Arc::new(Vec::with_capacity(room)),
            done: 0,
            rewritten_tokens: None,
            compactions: Vec::new(),
        }
    }

    /// Keeps the estimated tokens of the rewritten input from now on (see
    /// [`Messages::estimated_tokens`]): asked at every hop of a run whose budgets read the
    /// prompt's size, so the common case (counting already) is a test where it is asked.
    #[inline]
    pub(crate) fn count_tokens(&mut self) {
        if self.rewritten_tokens.is_none() {
            self.start_counting();
        }
    }

    /// [`count_tokens`](Self::count_tokens)'s first time: what was rewritten so far, estimated.
    #[cold]
    fn start_counting(&mut self) {
        let all = &self.rewritten[..self.done];
        self.rewritten_tokens = Some(all.iter().map(|m| estimate_tokens(m) as u64).sum());
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
        is_result: bool,
        skip: bool,
    ) {
        if !(skip && is_transfer) {
            // The author of the entry before is known already (an agent's messages come in
            // runs: a transfer's call and result, a tool call and its result).
            let known = self.entries.last().is_some_and(|before| {
                !before.is_user_input && Arc::ptr_eq(&before.agent_name, &entry.agent_name)
            });
            if !entry.is_user_input && !known {
                self.authors.insert(&entry.agent_name);
            }
            if self.entries.len() == self.entries.capacity() {
                // A run that outgrows its first room is a long one: four times the room, not
                // twice (fewer copies of the lists while it is short).
                self.reserve(3 * self.entries.len().max(1));
            }
            if is_result {
                self.results.push(self.entries.len());
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

    /// Records the summary `agent` wrote of its older entries (all but the `kept` entries it
    /// saw just before this point).
    pub(crate) fn push_compaction(&mut self, agent: &Arc<str>, kept: usize, summary: MessageRef) {
        self.authors.insert(agent);
        self.compactions.push(Compacted {
            agent: Arc::clone(agent),
            at: self.entries.len(),
            kept,
            summary,
        });
    }

    /// The latest summary `agent` recorded, if any.
    fn compaction_of(&self, agent: &str) -> Option<&Compacted> {
        self.compactions.iter().rev().find(|c| &*c.agent == agent)
    }

    /// The input `policy` gives `agent`, which compacted its conversation into `compacted`:
    /// the summary, then the policy over the entries it kept and every later one. `visible`
    /// are the entries the agent may see, with their positions among all entries.
    fn input_compacted(
        &self,
        agent: &str,
        policy: &ContextPolicy,
        compacted: &Compacted,
        visible: Vec<(usize, HistoryEntry)>,
    ) -> Result<Messages, AgentError> {
        let before = visible.partition_point(|(i, _)| *i < compacted.at);
        let mut start = before.saturating_sub(compacted.kept);
        // Never a tool result without the call it answers.
        while start > 0 && visible[start].1.message.role == Role::Tool {
            start -= 1;
        }
        let kept: Vec<HistoryEntry> = visible.into_iter().skip(start).map(|(_, e)| e).collect();
        let mut out = Vec::with_capacity(kept.len() + 1);
        out.push(Arc::clone(&compacted.summary));
        out.extend(policy.apply(agent, &kept)?);
        Ok(Messages::from(out))
    }

    /// Drops the last entry (a transfer's tool call, skipped with its result).
    fn pop_entry(&mut self) {
        self.entries.pop();
        self.sources.pop();
        if self.results.last() == Some(&self.entries.len()) {
            self.results.pop();
        }
        if self.done > self.entries.len() {
            let popped = Arc::make_mut(&mut self.rewritten).pop();
            if let (Some(tokens), Some(popped)) = (&mut self.rewritten_tokens, popped) {
                *tokens -= estimate_tokens(&popped) as u64;
            }
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
        if let Some(compacted) = self.compaction_of(agent_name) {
            let visible = self.entries.iter().cloned().enumerate().collect();
            return self.input_compacted(agent_name, policy, compacted, visible);
        }
        if !matches!(policy, ContextPolicy::Rewrite) {
            return policy.apply(agent_name, &self.entries).map(Messages::from);
        }
        Ok(self.rewritten_for(Some(agent_name)))
    }

    /// The input `policy` gives `agent_name`, a parent of delegated sub-agents, scoped: the
    /// entries of the agents in `hidden` (its delegated sub-agents and everything below them)
    /// are left out, except the results of the agents in `returning` (its delegated
    /// sub-agents themselves): their events that finished a task and, for those in
    /// `single_turn`, their answers (assistant messages without tool calls).
    pub(crate) fn input_scoped(
        &self,
        agent_name: &str,
        policy: &ContextPolicy,
        hidden: &[Arc<str>],
        returning: &[Arc<str>],
        single_turn: &[Arc<str>],
    ) -> Result<Messages, AgentError> {
        let has = |names: &[Arc<str>], name: &Arc<str>| names.iter().any(|n| n == name);
        let visible = self
            .entries
            .iter()
            .enumerate()
            .filter(|(i, e)| {
                if e.is_user_input || !has(hidden, &e.agent_name) {
                    return true;
                }
                if !has(returning, &e.agent_name) {
                    return false;
                }
                self.results.binary_search(i).is_ok()
                    || (has(single_turn, &e.agent_name)
                        && e.message.role == Role::Assistant
                        && e.message.tool_calls.is_empty())
            })
            .map(|(i, e)| {
                let mut e = e.clone();
                // An LLM task's result is its `finish_task` call's result: the parent reads it
                // as the task's message, as a code task's (`For context: [refund] said: ..`).
                if e.message.role == Role::Tool && self.results.binary_search(&i).is_ok() {
                    e.message = Arc::new(Message::assistant(e.message.content.clone()));
                }
                (i, e)
            });
        if let Some(compacted) = self.compaction_of(agent_name) {
            return self.input_compacted(agent_name, policy, compacted, visible.collect());
        }
        let entries: Vec<HistoryEntry> = visible.map(|(_, e)| e).collect();
        policy.apply(agent_name, &entries).map(Messages::from)
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
            // Counted as they are rewritten when the run's budgets read the prompt's size: a
            // context form's estimate is read off its text (it has nothing else).
            match &mut self.rewritten_tokens {
                Some(tokens) => *tokens += extend_rewritten::<true>(all, new, agent_name),
                None => {
                    extend_rewritten::<false>(all, new, agent_name);
                }
            }
            self.done = self.entries.len();
        }
        let messages = Messages::prefix_of(&self.rewritten, self.done);
        match self.rewritten_tokens {
            Some(tokens) => messages.with_estimated_tokens(tokens),
            None => messages,
        }
    }
}

/// Appends the entries `new` to `all` as `agent_name` reads them (its own and the user's as
/// they are, every other agent's in their context form); with `COUNT`, returns their
/// estimated tokens (zero without).
#[inline]
fn extend_rewritten<'a, const COUNT: bool>(
    all: &mut Vec<MessageRef>,
    new: impl Iterator<Item = (&'a HistoryEntry, &'a Option<Arc<SessionEvent>>)>,
    agent_name: Option<&str>,
) -> u64 {
    let mut tokens = 0u64;
    all.extend(new.map(|(e, source)| {
        if e.is_user_input || Some(&*e.agent_name) == agent_name {
            if COUNT {
                tokens += estimate_tokens(&e.message) as u64;
            }
            Arc::clone(&e.message)
        } else {
            let form = match source {
                Some(event) => event.context_form(&e.message),
                None => Arc::new(rewrite_for_context(&e.agent_name, &e.message)),
            };
            if COUNT {
                tokens += context_form_tokens(&form);
            }
            form
        }
    }));
    tokens
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn authors_are_found_in_the_list_and_after_it_turns_into_a_set() {
        let mut authors = Authors::default();
        let names: Vec<Arc<str>> = (0..LISTED_AUTHORS + 8)
            .map(|i| Arc::from(format!("agent{i}")))
            .collect();
        for (i, name) in names.iter().enumerate() {
            assert!(!authors.contains(name));
            authors.insert(name);
            // Twice: still one entry.
            authors.insert(&Arc::from(&**name));
            assert!(authors.contains(name));
            assert_eq!(
                authors.set.is_some(),
                i >= LISTED_AUTHORS,
                "after {} names",
                i + 1
            );
        }
        assert!(names.iter().all(|n| authors.contains(n)));
        assert!(!authors.contains("someone else"));
        assert_eq!(authors.set.as_ref().map(|s| s.len()), Some(names.len()));
    }
}
