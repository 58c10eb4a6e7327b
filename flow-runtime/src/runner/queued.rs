//! Running a run taken from the run queue ([`RunQueue`](crate::store::RunQueue)): the run keeps
//! the id it was queued under (so readers attach to it by that id), and its turn's idempotency
//! scope is that id, so a run started again after its worker died gives its tool calls the same
//! idempotency keys.

use std::sync::Arc;

use super::double_text::drive;
use super::recover::RecoverError;
use super::run_handle::{RunHandle, RunInput};
use super::runs::Runner;
use crate::message::Message;
use crate::store::{validate_thread_id, ThreadError};

impl Runner {
    /// This runner for the queued run `run`: its cancel signal, its id, its scope.
    fn for_queued(&self, run: &RunHandle) -> Runner {
        let mut runner = self.for_run(run);
        runner.threads.scope = Some(Arc::from(run.id()));
        runner
    }

    /// Starts the queued run `run_id`: a turn of `thread_id` with `message`, as a run with
    /// that id (see [`start_run`](Runner::start_run)). Refused ([`ThreadError::Busy`]) while
    /// the thread has a run going in this runner or a turn running elsewhere; nothing runs
    /// then.
    pub async fn start_queued(
        &self,
        run_id: &str,
        thread_id: &str,
        message: Message,
    ) -> Result<RunHandle, ThreadError> {
        validate_thread_id(thread_id)?;
        self.thread_store_or_err()?;
        let max_events = self.registry().retention().max_events;
        let run = RunHandle::with_id(
            run_id.to_owned(),
            thread_id,
            RunInput::Message(message.clone()),
            max_events,
        );
        if self.registry().add(&run).is_some() {
            self.registry().remove(&run);
            return Err(ThreadError::Busy {
                id: thread_id.to_owned(),
            });
        }
        let started = self.for_queued(&run).turn(thread_id, message).await;
        self.launch(run, started, false)
    }

    /// Recovers the queued run `run_id`, whose worker died during its turn of `thread_id`,
    /// from the turn's journal ([`Runner::recover`]), as a run with that id; `Ok(None)` if the
    /// thread has no unfinished journaled turn (then nothing runs: start the run again with
    /// [`start_queued`](Runner::start_queued)). `message` is the run's input, kept for its
    /// readers.
    pub async fn recover_queued(
        &self,
        run_id: &str,
        thread_id: &str,
        message: Message,
    ) -> Result<Option<RunHandle>, RecoverError> {
        let max_events = self.registry().retention().max_events;
        let run = RunHandle::with_id(
            run_id.to_owned(),
            thread_id,
            RunInput::Message(message),
            max_events,
        );
        if self.registry().add(&run).is_some() {
            self.registry().remove(&run);
            return Err(RecoverError::Leased {
                thread: thread_id.to_owned(),
            });
        }
        match self.for_queued(&run).recover(thread_id).await {
            Ok(Some(turn)) => {
                let task = run.clone();
                let span = tracing::Span::current();
                tokio::spawn(tracing::Instrument::instrument(
                    async move { drive(&task, turn, true).await },
                    span,
                ));
                Ok(Some(run))
            }
            Ok(None) => {
                self.registry().remove(&run);
                Ok(None)
            }
            Err(e) => {
                self.registry().remove(&run);
                Err(e)
            }
        }
    }
}
