//! [`ThreadHandle`]: one thread of a runner's store, and everything read or changed on it
//! apart from its turns (which are requests: [`TurnRequest`](super::TurnRequest)): its
//! records and messages, its values, its steps (time travel: history, fork, re-run from a
//! step), its runs, withdrawing the turn it waits on, deleting it.

use serde_json::{Map, Value};

use super::run_handle::RunInfo;
use super::runs::Runner;
use super::thread_values::ThreadState;
use super::time_travel::{Fork, ThreadStep, TimeTravelError};
use super::turn::{ThreadMessage, Turn};
use crate::event::InterruptInfo;
use crate::store::{ThreadError, ThreadRecord};

/// One thread of a runner's [`ThreadStore`](crate::ThreadStore), from [`Runner::thread`]: its
/// reads (records, messages, values, steps, runs) and the changes that are not turns (values,
/// forks, re-runs from a step, withdrawing, deleting).
///
/// ```
/// use agentweave_runtime::{FlowAgent, FnAgent, InMemoryStore, Message, Runner, TurnRequest};
/// # futures::executor::block_on(async {
/// let bot = FnAgent::new("bot", |cx, _| async move { cx.say("hello"); Ok(()) });
/// let runner = Runner::builder(FlowAgent::new(bot)).stores(InMemoryStore::new()).build();
/// runner.turn(TurnRequest::new("ada", Message::user("hi"))).await.unwrap().finish().await;
/// let thread = runner.thread("ada");
/// let messages = thread.messages().await.unwrap();
/// assert_eq!(messages.len(), 2);
/// assert_eq!(messages[1].message.content, "hello");
/// # });
/// ```
#[derive(Debug, Clone)]
pub struct ThreadHandle<'a> {
    pub(super) runner: &'a Runner,
    pub(super) id: String,
}

impl Runner {
    /// The thread `id` of this runner's thread store: its reads and the changes that are
    /// not turns (see [`ThreadHandle`]). Nothing is read until a method is called.
    pub fn thread(&self, id: &str) -> ThreadHandle<'_> {
        ThreadHandle {
            runner: self,
            id: id.to_owned(),
        }
    }

    /// The ids of the threads in the store, sorted.
    pub async fn threads(&self) -> Result<Vec<String>, ThreadError> {
        self.list_threads().await
    }
}

impl ThreadHandle<'_> {
    /// The thread's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The thread's records, in order (empty for an unknown thread).
    pub async fn records(&self) -> Result<Vec<ThreadRecord>, ThreadError> {
        self.runner.thread_records(&self.id).await
    }

    /// The thread's messages, in order: each turn's user input, then the messages its agents
    /// recorded (streams whole). Empty for an unknown thread.
    pub async fn messages(&self) -> Result<Vec<ThreadMessage>, ThreadError> {
        self.runner.thread_messages(&self.id).await
    }

    /// The values of thread the thread: what its next turn's session starts with (see the
    /// guide's "Durable execution" chapter). [`TimeTravelError::UnknownThread`](super::TimeTravelError::UnknownThread) for a thread
    /// with no records.
    pub async fn values(&self) -> Result<Map<String, Value>, TimeTravelError> {
        self.runner.thread_values(&self.id).await
    }

    /// Changes the values of thread the thread from outside a turn (LangGraph's
    /// `update_state`): merges `values` into the thread's (a `null` value removes its key)
    /// and appends the change as a values step, which [`ThreadHandle::history`](crate::ThreadHandle::history) lists and a
    /// fork carries. The thread's next turn starts with the result. The original records are
    /// not changed: fork at an earlier step to go back.
    ///
    /// Errors, with nothing written: an invalid or unknown thread, a key starting with
    /// [`FRAMEWORK_KEY_PREFIX`](super::FRAMEWORK_KEY_PREFIX) ([`TimeTravelError::ReservedKey`](super::TimeTravelError::ReservedKey)), a thread that waits for
    /// an interrupt's answer or at a fork point ([`TimeTravelError::AwaitingResume`](super::TimeTravelError::AwaitingResume): answer
    /// it first, or fork at the step before it), a thread with a turn running
    /// ([`ThreadError::Busy`](crate::store::ThreadError::Busy)).
    pub async fn update_state(
        &self,
        values: Map<String, Value>,
    ) -> Result<ThreadState, TimeTravelError> {
        self.runner.update_state(&self.id, values).await
    }

    /// [`ThreadHandle::update_state`](crate::ThreadHandle::update_state), recording `by` (the caller, as a service names
    /// it) in the values step's record ([`ThreadRecord::by`]).
    pub async fn update_state_by(
        &self,
        values: Map<String, Value>,
        by: &str,
    ) -> Result<ThreadState, TimeTravelError> {
        self.runner.update_state_by(&self.id, values, by).await
    }

    /// The steps of thread the thread, in order (see the guide's "Durable execution" chapter): each turn's input,
    /// each recorded event, each interrupt, with its id, parent, agent, run path, kind and
    /// time. [`TimeTravelError::UnknownThread`](super::TimeTravelError::UnknownThread) for a thread with no records.
    pub async fn history(&self) -> Result<Vec<ThreadStep>, TimeTravelError> {
        self.runner.thread_history(&self.id).await
    }

    /// Copies thread the thread up to and including step `at_step` into the new thread
    /// `new_thread` (see the guide's "Durable execution" chapter for what the fork can do next, by the kind of
    /// step). The original thread is only read. Errors, with nothing written: an invalid or
    /// unknown thread, a step it does not have, a `new_thread` that already has records (or
    /// has a turn running).
    pub async fn fork(&self, at_step: u64, new_thread: &str) -> Result<Fork, TimeTravelError> {
        self.runner.fork(&self.id, at_step, new_thread).await
    }

    /// Re-runs thread the thread from step `at_step` in the new thread `new_thread` ("re-run
    /// from here"): [`ThreadHandle::fork`](crate::ThreadHandle::fork) there, then [`TurnRequest::resume`](crate::TurnRequest::resume)
    /// the fork with `answers` (for a step inside a turn, no answers: the turn goes on from
    /// the step; for an interrupt, the answers to it, which may differ from the original's).
    /// A step that ends its turn has nothing to re-run ([`TimeTravelError::NothingToRerun`](super::TimeTravelError::NothingToRerun),
    /// checked before anything is written).
    pub async fn run_from(
        &self,
        at_step: u64,
        new_thread: &str,
        answers: impl IntoIterator<Item = (String, Value)>,
    ) -> Result<Turn, TimeTravelError> {
        let answers = answers.into_iter().collect();
        self.runner
            .run_from(&self.id, at_step, new_thread, answers)
            .await
    }

    /// Gives up the turn the thread waits on: appends a record that ends it (no
    /// answer; its one event carries the custom action `{"withdrawn": {"interrupts": [...]}}`,
    /// see [`is_withdrawn`](super::is_withdrawn)), recording `by` as who did, then deletes the turn's checkpoint,
    /// and returns the interrupts dropped. What the turn recorded before it waited stays in the
    /// thread; the next turn starts from a new message, at the agent the withdrawn turn started
    /// at (with [`TurnRouting::LastAgent`](crate::TurnRouting::LastAgent)).
    ///
    /// Holds the thread's lease like a turn: refused with [`ThreadError::Busy`] while a turn
    /// or a resume runs, and with [`ThreadError::NotInterrupted`] if the thread waits on
    /// nothing.
    pub async fn withdraw(&self, by: Option<&str>) -> Result<Vec<InterruptInfo>, ThreadError> {
        self.runner.withdraw_turn(&self.id, by).await
    }

    /// Deletes a thread, the checkpoint of its turn if one waits to be resumed, and every
    /// turn's journal (in the runner's [`RunnerBuilder::journal_store`](crate::RunnerBuilder::journal_store)); returns
    /// whether the thread existed. Refused ([`ThreadError::RunsGoing`], naming how many and the
    /// oldest) while runs of it ([`Runner::start`](crate::Runner::start)) wait or run in this
    /// runner, and ([`ThreadError::Busy`]) while a turn of it runs, in this runner or another
    /// process on the same store. A run that has ended holds nothing: the thread deletes at
    /// once, and the runner forgets its ended runs with it (their events hold its messages).
    pub async fn delete(&self) -> Result<bool, ThreadError> {
        self.runner.delete_thread(&self.id).await
    }

    /// The runs of the thread this runner remembers, oldest first, with their status.
    pub fn runs(&self) -> Vec<RunInfo> {
        self.runner.thread_runs(&self.id)
    }
}
