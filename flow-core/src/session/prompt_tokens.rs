//! The estimated prompt tokens of one agent run's conversation, kept beside the run's event
//! queue (see `Context`) when a budget reads them (input, total tokens, money): a model call's
//! check estimates only the messages added since the run's last check, not the whole prompt
//! again. It lives on the heap beside the queue, not in the agent run's future, and is read
//! without a lock: a run without budgets never touches it.

use std::sync::atomic::AtomicU64;
use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use crate::history::estimate_tokens;
use crate::message::MessageRef;

/// The estimated tokens of `messages` (see [`estimate_tokens`]).
pub(crate) fn estimated(messages: &[MessageRef]) -> u64 {
    messages.iter().map(|m| estimate_tokens(m) as u64).sum()
}

/// One agent run's conversation as last counted: how many of its first messages were counted,
/// the first and last of them (to tell that a conversation is still the one counted: the loop
/// only appends), and their tokens. In atomics, read and written without a lock: an agent
/// run's model calls are made one after another, so nothing else writes it meanwhile (and a
/// count that does not match its conversation is made again).
#[derive(Debug, Default)]
pub(crate) struct PromptCount {
    counted: AtomicUsize,
    first: AtomicUsize,
    last: AtomicUsize,
    tokens: AtomicU64,
}

fn address(message: &MessageRef) -> usize {
    Arc::as_ptr(message) as *const u8 as usize
}

impl PromptCount {
    /// Notes that the run's first conversation `messages` ends with its input of `input_len`
    /// messages estimated at `input_tokens` (the input cache counted them as the run grew):
    /// the messages before the input (the system message) are estimated here, unless
    /// `head_tokens` gives their estimate (the agent's fixed system message, estimated once).
    #[inline]
    pub(crate) fn seed(
        &self,
        messages: &[MessageRef],
        input_len: usize,
        input_tokens: u64,
        head_tokens: Option<u64>,
    ) {
        let Some(head) = messages.len().checked_sub(input_len) else {
            return;
        };
        let head_tokens = head_tokens.unwrap_or_else(|| estimated(&messages[..head]));
        self.note(messages, head_tokens + input_tokens);
    }

    /// The estimated tokens of the conversation `messages`: only the messages added since the
    /// last count are estimated; a conversation that is not the one counted is counted whole.
    #[inline]
    pub(crate) fn of(&self, messages: &[MessageRef]) -> u64 {
        // The common case, a conversation counted as it is (a run's first request, seeded):
        // nothing to estimate, nothing to note.
        let counted = self.counted.load(Relaxed);
        if let (true, Some(first), Some(last)) =
            (counted == messages.len(), messages.first(), messages.last())
        {
            if address(first) == self.first.load(Relaxed)
                && address(last) == self.last.load(Relaxed)
            {
                return self.tokens.load(Relaxed);
            }
        }
        self.of_grown(messages)
    }

    /// [`of`](Self::of) for a conversation that grew since its last count, or another one.
    fn of_grown(&self, messages: &[MessageRef]) -> u64 {
        let counted = self.counted.load(Relaxed);
        let intact = counted <= messages.len()
            && (counted == 0
                || (address(&messages[0]) == self.first.load(Relaxed)
                    && address(&messages[counted - 1]) == self.last.load(Relaxed)));
        let (counted, tokens) = if intact {
            (counted, self.tokens.load(Relaxed))
        } else {
            (0, 0)
        };
        let tokens = tokens + estimated(&messages[counted..]);
        self.note(messages, tokens);
        tokens
    }

    /// Notes `messages`, estimated at `tokens`, as the conversation counted.
    #[inline]
    fn note(&self, messages: &[MessageRef], tokens: u64) {
        self.counted.store(messages.len(), Relaxed);
        self.first
            .store(messages.first().map_or(0, address), Relaxed);
        self.last.store(messages.last().map_or(0, address), Relaxed);
        self.tokens.store(tokens, Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::Message;

    fn messages(texts: &[&str]) -> Vec<MessageRef> {
        texts.iter().map(|t| Arc::new(Message::user(*t))).collect()
    }

    #[test]
    fn a_growing_conversation_is_counted_as_a_whole_each_time() {
        let mut all = messages(&["twelve bytes", "x"]);
        let prompt = PromptCount::default();
        assert_eq!(prompt.of(&all), estimated(&all));
        all.extend(messages(&["a longer message of forty bytes, or so!!"]));
        assert_eq!(prompt.of(&all), estimated(&all));
    }

    #[test]
    fn a_replaced_or_shortened_conversation_is_counted_again() {
        let all = messages(&["one", "two", "three"]);
        let prompt = PromptCount::default();
        prompt.of(&all);
        let other = messages(&["another", "conversation", "entirely, and longer"]);
        assert_eq!(prompt.of(&other), estimated(&other));
        assert_eq!(prompt.of(&other[..1]), estimated(&other[..1]));
        // The same last message after another first one is another conversation.
        let mut forked = messages(&["a different system message, much longer than one"]);
        forked.extend(other[1..].iter().cloned());
        assert_eq!(prompt.of(&forked), estimated(&forked));
    }

    #[test]
    fn a_seeded_count_uses_the_inputs_estimate_and_adds_the_system_message() {
        let input = messages(&["the user asks", "an agent said"]);
        let mut all = messages(&["you are the refund agent"]);
        all.extend(input.iter().cloned());
        let prompt = PromptCount::default();
        prompt.seed(&all, input.len(), estimated(&input), None);
        assert_eq!(prompt.of(&all), estimated(&all));
        // The system message's estimate given (a tool set's, made once) is the same.
        prompt.seed(
            &all,
            input.len(),
            estimated(&input),
            Some(estimated(&all[..1])),
        );
        assert_eq!(prompt.of(&all), estimated(&all));
        // A seed is trusted (the input cache's count is tested there): a wrong one shows.
        prompt.seed(&all, input.len(), 1, None);
        assert_ne!(prompt.of(&all), estimated(&all));
    }
}
