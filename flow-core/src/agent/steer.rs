//! Steering a running turn: [`SteerQueue`], the messages sent to a run while it runs, which
//! its LLM agents take in at their next safe point.
//!
//! A [`ChatModelAgent`](crate::ChatModelAgent) takes the queued messages after the current
//! model call's tool calls have run, before it asks the model again (or, when the model gave
//! its final answer, right after it, asking the model once more): each becomes a user message
//! of that agent, recorded in the run's record at that place and added to the conversation.
//! Messages are taken in the order they were sent, each by one agent, once.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use crate::message::Message;
use crate::run_path::RunPath;

/// The steering messages a recovered run took in before its worker died, given back where its
/// journal shows them taken. A host that recovers runs from a journal implements it (the
/// in-process runtime's replay does) and gives it to the run's queue with
/// [`SteerQueue::replaying`]: at each safe point, the agent at `at` first takes what this
/// gives, then the messages sent to the run since.
pub trait ReplayedSteers: Send + Sync {
    /// The messages the agent at `at` took in at the safe point it has reached (empty: none
    /// were taken there).
    fn take(&self, at: &RunPath) -> Vec<Message>;
}

/// The steering messages of one run (cheap to clone: every clone is the same queue).
///
/// ```
/// use agentweave_runtime::{Message, SteerQueue};
/// let queue = SteerQueue::new();
/// queue.push(Message::user("also check the invoice")).unwrap();
/// assert_eq!(queue.take().len(), 1);
/// assert!(queue.take().is_empty(), "each message is taken once");
/// let left = queue.close();
/// assert!(left.is_empty());
/// assert!(queue.push(Message::user("too late")).is_err());
/// ```
#[derive(Clone, Default)]
pub struct SteerQueue(Arc<Mutex<SteerState>>);

#[derive(Default)]
struct SteerState {
    pending: VecDeque<Message>,
    closed: bool,
    /// A recovered run's steers, given back in place (see [`ReplayedSteers`]).
    replayed: Option<Arc<dyn ReplayedSteers>>,
}

/// The run the steer was sent to has ended: the message was not queued.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the run has ended, so it takes no steering message; start a new turn with the message \
     instead"
)]
pub struct SteerClosed;

impl SteerQueue {
    /// An empty, open queue.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, SteerState> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Queues `message` for the run's next safe point; an error once the run has ended
    /// ([`close`](SteerQueue::close)).
    pub fn push(&self, message: Message) -> Result<(), SteerClosed> {
        let mut state = self.lock();
        if state.closed {
            return Err(SteerClosed);
        }
        state.pending.push_back(message);
        Ok(())
    }

    /// Whether messages are waiting.
    pub fn has_pending(&self) -> bool {
        !self.lock().pending.is_empty()
    }

    /// Takes every waiting message, in the order they were sent.
    pub fn take(&self) -> Vec<Message> {
        self.lock().pending.drain(..).collect()
    }

    /// This queue, for a recovered run: at each safe point the agent at a run path first takes
    /// what `replayed` says it took there before its worker died (so the run records them in
    /// the same places), then the messages sent since. Set it before the run starts.
    pub fn replaying(self, replayed: Arc<dyn ReplayedSteers>) -> Self {
        self.lock().replayed = Some(replayed);
        self
    }

    /// What the agent at `at` takes in at the safe point it has reached: a recovered run's
    /// replayed messages for that point (see [`replaying`](Self::replaying)), then every
    /// waiting one.
    pub fn take_at(&self, at: &RunPath) -> Vec<Message> {
        let replayed = self.lock().replayed.clone();
        let mut taken = replayed.map(|r| r.take(at)).unwrap_or_default();
        taken.extend(self.take());
        taken
    }

    /// Closes the queue (the run has ended): later pushes are refused. Gives back the messages
    /// no agent took.
    pub fn close(&self) -> Vec<Message> {
        let mut state = self.lock();
        state.closed = true;
        state.pending.drain(..).collect()
    }
}

impl std::fmt::Debug for SteerQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.lock();
        f.debug_struct("SteerQueue")
            .field("pending", &state.pending.len())
            .field("closed", &state.closed)
            .field("replaying", &state.replayed.is_some())
            .finish()
    }
}
