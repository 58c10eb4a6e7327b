//! The estimated prompt tokens of each agent's running conversation, kept beside the run's
//! budget ledger when a budget reads them (input, total tokens, money): a model call's check
//! estimates only the messages added since the agent's last check, not the whole prompt again.
//! Kept in the session (allocated the first time a budget reads them), not in the agent
//! run's future: a run without budgets carries nothing for it.

use std::sync::Arc;

use crate::history::estimate_tokens;
use crate::message::MessageRef;

/// The estimated tokens of `messages` (see [`estimate_tokens`]).
pub(crate) fn estimated(messages: &[MessageRef]) -> u64 {
    messages.iter().map(|m| estimate_tokens(m) as u64).sum()
}

/// One agent's conversation as last counted: the agent (its shared name's address), how many
/// of the conversation's first messages were counted, the first and last of them (to tell that
/// a conversation is still the one counted: the loop only appends), and their tokens.
#[derive(Debug, Default, Clone, Copy)]
struct Counted {
    agent: usize,
    counted: usize,
    first: usize,
    last: usize,
    tokens: u64,
}

/// How many agents' counts are kept (the agents that checked last; a run's agents mostly run
/// one after another, lanes of a parallel workflow a few at a time).
const KEPT: usize = 4;

/// The counts of the agents' conversations: the last [`KEPT`] agents that checked, in a fixed
/// array (no allocation as agents come and go).
#[derive(Debug, Default)]
pub(crate) struct PromptTokens {
    agents: [Counted; KEPT],
    /// The slot the next new agent takes.
    next: usize,
}

fn address(message: &MessageRef) -> usize {
    Arc::as_ptr(message) as *const u8 as usize
}

fn agent_address(agent: &Arc<str>) -> usize {
    Arc::as_ptr(agent) as *const u8 as usize
}

impl PromptTokens {
    /// Notes that `agent`'s new conversation `messages` ends with its input of `input_len`
    /// messages estimated at `input_tokens` (the input cache counted them as the run grew):
    /// the messages before the input (the system message) are estimated here.
    pub(crate) fn seed(
        &mut self,
        agent: &Arc<str>,
        messages: &[MessageRef],
        input_len: usize,
        input_tokens: u64,
    ) {
        let Some(head) = messages.len().checked_sub(input_len) else {
            return;
        };
        let k = self.slot(agent);
        self.agents[k] = Counted {
            agent: agent_address(agent),
            counted: messages.len(),
            first: messages.first().map_or(0, address),
            last: messages.last().map_or(0, address),
            tokens: estimated(&messages[..head]) + input_tokens,
        };
    }

    /// The estimated tokens of `agent`'s conversation `messages`: only the messages added
    /// since its last count are estimated; a conversation that is not the one counted is
    /// counted whole.
    pub(crate) fn of(&mut self, agent: &Arc<str>, messages: &[MessageRef]) -> u64 {
        let k = self.slot(agent);
        let c = &mut self.agents[k];
        let intact = c.agent == agent_address(agent)
            && c.counted <= messages.len()
            && (c.counted == 0
                || (address(&messages[0]) == c.first
                    && address(&messages[c.counted - 1]) == c.last));
        if !intact {
            *c = Counted {
                agent: agent_address(agent),
                ..Counted::default()
            };
        }
        c.tokens += estimated(&messages[c.counted..]);
        c.counted = messages.len();
        c.first = messages.first().map_or(0, address);
        c.last = messages.last().map_or(0, address);
        c.tokens
    }

    /// `agent`'s slot: the one holding its count, else the oldest one's.
    fn slot(&mut self, agent: &Arc<str>) -> usize {
        let at = agent_address(agent);
        match self.agents.iter().position(|c| c.agent == at) {
            Some(k) => k,
            None => {
                let k = self.next;
                self.next = (k + 1) % KEPT;
                self.agents[k] = Counted::default();
                k
            }
        }
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
        let agent: Arc<str> = "clerk".into();
        let mut all = messages(&["twelve bytes", "x"]);
        let mut prompts = PromptTokens::default();
        assert_eq!(prompts.of(&agent, &all), estimated(&all));
        all.extend(messages(&["a longer message of forty bytes, or so!!"]));
        assert_eq!(prompts.of(&agent, &all), estimated(&all));
    }

    #[test]
    fn a_replaced_or_shortened_conversation_is_counted_again() {
        let agent: Arc<str> = "clerk".into();
        let all = messages(&["one", "two", "three"]);
        let mut prompts = PromptTokens::default();
        prompts.of(&agent, &all);
        let other = messages(&["another", "conversation", "entirely, and longer"]);
        assert_eq!(prompts.of(&agent, &other), estimated(&other));
        assert_eq!(prompts.of(&agent, &other[..1]), estimated(&other[..1]));
        // The same last message after another first one is another conversation.
        let mut forked = messages(&["a different system message, much longer than one"]);
        forked.extend(other[1..].iter().cloned());
        assert_eq!(prompts.of(&agent, &forked), estimated(&forked));
    }

    #[test]
    fn each_agent_keeps_its_own_count() {
        let (a, b): (Arc<str>, Arc<str>) = ("a".into(), "b".into());
        let mut prompts = PromptTokens::default();
        let first = messages(&["short", "talk"]);
        let second = messages(&["a rather longer conversation", "with more words in it"]);
        assert_eq!(prompts.of(&a, &first), estimated(&first));
        assert_eq!(prompts.of(&b, &second), estimated(&second));
        assert_eq!(prompts.of(&a, &first), estimated(&first));
    }

    #[test]
    fn an_agent_whose_count_was_dropped_is_counted_again() {
        let mut prompts = PromptTokens::default();
        let talk = messages(&["a conversation", "of two messages"]);
        let agents: Vec<Arc<str>> = (0..=KEPT).map(|k| format!("agent{k}").into()).collect();
        for agent in &agents {
            assert_eq!(prompts.of(agent, &talk), estimated(&talk));
        }
        // The first agent's slot went to the last one: its next count reads every message.
        assert_eq!(prompts.of(&agents[0], &talk), estimated(&talk));
    }

    #[test]
    fn a_seeded_count_uses_the_inputs_estimate_and_adds_the_system_message() {
        let agent: Arc<str> = "clerk".into();
        let input = messages(&["the user asks", "an agent said"]);
        let mut all = messages(&["you are the refund agent"]);
        all.extend(input.iter().cloned());
        let mut prompts = PromptTokens::default();
        prompts.seed(&agent, &all, input.len(), estimated(&input));
        assert_eq!(prompts.of(&agent, &all), estimated(&all));
        // A seed is trusted (the input cache's count is tested there): a wrong one shows.
        prompts.seed(&agent, &all, input.len(), 1);
        assert_ne!(prompts.of(&agent, &all), estimated(&all));
    }
}
