//! The estimated prompt tokens of one agent run's conversation, kept with the run's event
//! queue (see `Context`) when a budget reads them (input, total tokens, money): a model call's
//! check estimates only the messages added since the run's last check, not the whole prompt
//! again. It lives on the heap beside the queue, not in the agent run's future, and is taken
//! without the session's lock: a run without budgets never touches it.

use std::sync::Arc;

use crate::history::estimate_tokens;
use crate::message::MessageRef;

/// The estimated tokens of `messages` (see [`estimate_tokens`]).
pub(crate) fn estimated(messages: &[MessageRef]) -> u64 {
    messages.iter().map(|m| estimate_tokens(m) as u64).sum()
}

/// One agent run's conversation as last counted: how many of its first messages were counted,
/// the first and last of them (to tell that a conversation is still the one counted: the loop
/// only appends), and their tokens.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct PromptCount {
    counted: usize,
    first: usize,
    last: usize,
    tokens: u64,
}

fn address(message: &MessageRef) -> usize {
    Arc::as_ptr(message) as *const u8 as usize
}

impl PromptCount {
    /// Notes that the run's first conversation `messages` ends with its input of `input_len`
    /// messages estimated at `input_tokens` (the input cache counted them as the run grew):
    /// the messages before the input (the system message) are estimated here.
    pub(crate) fn seed(&mut self, messages: &[MessageRef], input_len: usize, input_tokens: u64) {
        let Some(head) = messages.len().checked_sub(input_len) else {
            return;
        };
        *self = PromptCount {
            counted: messages.len(),
            first: messages.first().map_or(0, address),
            last: messages.last().map_or(0, address),
            tokens: estimated(&messages[..head]) + input_tokens,
        };
    }

    /// The estimated tokens of the conversation `messages`: only the messages added since the
    /// last count are estimated; a conversation that is not the one counted is counted whole.
    pub(crate) fn of(&mut self, messages: &[MessageRef]) -> u64 {
        let intact = self.counted <= messages.len()
            && (self.counted == 0
                || (address(&messages[0]) == self.first
                    && address(&messages[self.counted - 1]) == self.last));
        if !intact {
            *self = PromptCount::default();
        }
        self.tokens += estimated(&messages[self.counted..]);
        self.counted = messages.len();
        self.first = messages.first().map_or(0, address);
        self.last = messages.last().map_or(0, address);
        self.tokens
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
        let mut prompt = PromptCount::default();
        assert_eq!(prompt.of(&all), estimated(&all));
        all.extend(messages(&["a longer message of forty bytes, or so!!"]));
        assert_eq!(prompt.of(&all), estimated(&all));
    }

    #[test]
    fn a_replaced_or_shortened_conversation_is_counted_again() {
        let all = messages(&["one", "two", "three"]);
        let mut prompt = PromptCount::default();
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
        let mut prompt = PromptCount::default();
        prompt.seed(&all, input.len(), estimated(&input));
        assert_eq!(prompt.of(&all), estimated(&all));
        // A seed is trusted (the input cache's count is tested there): a wrong one shows.
        prompt.seed(&all, input.len(), 1);
        assert_ne!(prompt.of(&all), estimated(&all));
    }
}
