//! [`Messages`]: an agent's input conversation, shared rather than copied.

use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

use crate::message::MessageRef;

/// The messages of an [`AgentInput`](crate::AgentInput): a read-only view of a conversation
/// that is shared, not copied. It derefs to `[MessageRef]` (`len`, `iter`, indexing, `last`,
/// `to_vec` …), and cloning it costs O(1).
///
/// The runtime builds a node's input incrementally: the conversation a node saw last time is
/// extended by what was recorded since, so handing an agent its input costs O(1) amortised
/// in the length of the run, not O(run).
///
/// ```
/// use std::sync::Arc;
/// use agentweave_runtime::{Message, Messages};
/// let m: Messages = vec![Arc::new(Message::user("hi"))].into();
/// assert_eq!(m.len(), 1);
/// assert_eq!(m[0].content, "hi");
/// assert_eq!(m.clone(), m);
/// ```
#[derive(Clone, Default)]
pub struct Messages {
    all: Arc<Vec<MessageRef>>,
    // Both halves of one word, so that `Messages` stays two words: an agent's input moves
    // through every hop of a run.
    len: u32,
    /// The estimated tokens of these messages (see
    /// [`estimate_tokens`](crate::history::estimate_tokens)) when whoever made them kept the
    /// count as they grew (the input cache, in a run whose budgets read the prompt's size);
    /// `NOT_COUNTED` otherwise.
    tokens: u32,
}

const NOT_COUNTED: u32 = u32::MAX;

impl Messages {
    /// The first `len` messages of `all` (all of them if it is shorter).
    pub(crate) fn prefix_of(all: &Arc<Vec<MessageRef>>, len: usize) -> Self {
        Messages {
            all: Arc::clone(all),
            len: short(len.min(all.len())),
            tokens: NOT_COUNTED,
        }
    }

    /// These messages, known to estimate at `tokens` tokens.
    pub(crate) fn with_estimated_tokens(mut self, tokens: u64) -> Self {
        // A count too large to keep is left unknown: whoever needs it counts again.
        self.tokens = u32::try_from(tokens).unwrap_or(NOT_COUNTED);
        self
    }

    /// The estimated tokens of these messages, if their maker kept the count.
    pub(crate) fn estimated_tokens(&self) -> Option<u64> {
        (self.tokens != NOT_COUNTED).then_some(u64::from(self.tokens))
    }

    /// How many messages these are: the slice's length, read without making the slice.
    #[inline]
    pub(crate) fn count(&self) -> usize {
        self.len as usize
    }
}

/// A conversation's length as kept (no conversation held in memory has 2^32 messages).
fn short(len: usize) -> u32 {
    u32::try_from(len).expect("a conversation of fewer than 2^32 messages")
}

impl Deref for Messages {
    type Target = [MessageRef];
    fn deref(&self) -> &[MessageRef] {
        &self.all[..self.len as usize]
    }
}

impl From<Vec<MessageRef>> for Messages {
    #[inline]
    fn from(all: Vec<MessageRef>) -> Self {
        Messages {
            len: short(all.len()),
            all: Arc::new(all),
            tokens: NOT_COUNTED,
        }
    }
}

impl FromIterator<MessageRef> for Messages {
    fn from_iter<I: IntoIterator<Item = MessageRef>>(iter: I) -> Self {
        iter.into_iter().collect::<Vec<_>>().into()
    }
}

impl<'a> IntoIterator for &'a Messages {
    type Item = &'a MessageRef;
    type IntoIter = std::slice::Iter<'a, MessageRef>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl PartialEq for Messages {
    fn eq(&self, other: &Messages) -> bool {
        **self == **other
    }
}

impl fmt::Debug for Messages {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}
