//! Starting runs ([`Runner::start`]) and what happens when a request arrives while its thread
//! has a run going: the request's [`DoubleText`] strategy (LangGraph's `multitask_strategy`),
//! for a run or a streamed [`Turn`] alike.

use std::sync::Arc;

use futures::StreamExt;

use super::request::{DoubleText, TurnInput, TurnRequest};
use super::run_handle::{
    outward, without_state, RunFailure, RunHandle, RunInfo, RunInput, RunItem, RunOutcome,
    RunRegistry,
};
use super::runs::Runner;
use super::turn::{Turn, TurnOutcome};
use super::turn_stream::{TurnItem, TurnStream};
use crate::agent::cancel::{is_cancel_interrupt, CancelMode};
use crate::event::{AgentError, AgentEvent};
use crate::store::{validate_thread_id, ThreadError};

impl Runner {
    pub(crate) fn registry(&self) -> &RunRegistry {
        &self.threads.runs
    }

    /// Starts a turn of a thread as a run (see [`TurnRequest`]) and returns its handle at once:
    /// the turn runs as a task of this runner, on the current Tokio runtime, whoever reads it
    /// or not. If the thread has a run going in this runner, the request's
    /// [`if_busy`](TurnRequest::if_busy) strategy says what happens (see [`DoubleText`]); with
    /// `Reject`, or when the turn cannot start (invalid id, a thread waiting for an approval,
    /// a turn running elsewhere), it errors and nothing runs. The continuation of an
    /// interrupted turn ([`TurnRequest::resume`]) is refused ([`ThreadError::Busy`]) while the
    /// thread has a run going, whatever the strategy.
    ///
    /// A request with a [`run_id`](TurnRequest::run_id) (a queued run) takes that id; if the
    /// thread has a turn of that run whose worker died (journaled, its lease run out), the run
    /// is that turn recovered from its journal ([`Turn::recovered`]) instead of a new one.
    pub async fn start(&self, request: TurnRequest) -> Result<RunHandle, ThreadError> {
        let thread_id = request.thread.clone();
        validate_thread_id(&thread_id)?;
        self.thread_store_or_err()?;
        let max_events = self.registry().retention().max_events;
        let input = match &request.input {
            TurnInput::Message(m) => RunInput::Message(m.clone()),
            TurnInput::Answers(answers) => RunInput::Resume(answers.clone()),
        };
        let run = match &request.run_id {
            Some(id) => RunHandle::with_id(id.clone(), &thread_id, input, max_events),
            None => RunHandle::new(&thread_id, input, max_events),
        };
        if request.is_resume() {
            // The continuation of an interrupted turn takes the steering messages the turn
            // stopped without taking in, in order, once.
            for ended in self.registry().of_thread(&thread_id) {
                for message in ended.take_undelivered() {
                    let _ = run.state.steer.push(message);
                }
            }
        }
        // Registered and told what it waits for in one step.
        let earlier = self.registry().add(&run);
        if earlier.is_empty() {
            let started = self.begin(request, Some(&run)).await;
            return self.launch(run, started);
        }
        if request.if_busy == DoubleText::Reject || request.is_resume() {
            self.registry().remove(&run);
            return Err(ThreadError::Busy { id: thread_id });
        }
        if let (DoubleText::Steer, TurnInput::Message(message)) = (request.if_busy, &request.input)
        {
            // The last run going takes it (one still waiting takes it once it runs); one that
            // ended meanwhile refuses it, and the message runs after the others.
            if let Some(target) = earlier.last() {
                if target.steer(message.clone()).is_ok() {
                    self.registry().remove(&run);
                    return Ok(target.clone());
                }
            }
        }
        let going = before(earlier, request.if_busy);
        let runner = self.clone();
        let queued = run.clone();
        // The run's task stays in the span of whoever started it (a service's request span).
        let span = tracing::Span::current();
        tokio::spawn(tracing::Instrument::instrument(
            async move {
                {
                    // The handles waited for are let go as soon as the wait ends.
                    let waited = std::pin::pin!(async move {
                        for earlier in &going {
                            earlier.wait().await;
                        }
                    });
                    // A cancel while it waits ends it at once (it never ran).
                    let cancelled = std::pin::pin!(queued.state.kill.notified());
                    let _ = futures::future::select(waited, cancelled).await;
                }
                if let Some(cancelled) = queued.cancelled_before_start() {
                    // Cancelled while it waited: it never runs.
                    queued.push(RunItem::Ended(cancelled));
                    return;
                }
                match runner.begin(request, Some(&queued)).await {
                    Ok(turn) => drive(&queued, turn).await,
                    Err(e) => queued.push_with(
                        RunItem::Ended(RunOutcome::Error {
                            message: e.to_string(),
                        }),
                        Some(e.into()),
                    ),
                }
            },
            span,
        ));
        Ok(run)
    }
}

/// The thread's runs registered before this one and still going, after applying
/// `strategy`'s cancel.
fn before(going: Vec<RunHandle>, strategy: DoubleText) -> Vec<RunHandle> {
    if let Some(mode) = strategy.cancel_mode() {
        for earlier in &going {
            // One that ended meanwhile has nothing to cancel.
            let _ = earlier.cancel(mode, None);
        }
    }
    going
}

impl Runner {
    /// Runs `started` as `run`'s task, or forgets `run` if the turn could not start.
    fn launch(
        &self,
        run: RunHandle,
        started: Result<Turn, ThreadError>,
    ) -> Result<RunHandle, ThreadError> {
        match started {
            Ok(turn) => {
                run.state
                    .recovered
                    .store(turn.recovered(), std::sync::atomic::Ordering::Release);
                let task = run.clone();
                // The run's task stays in the span of whoever started it.
                let span = tracing::Span::current();
                tokio::spawn(tracing::Instrument::instrument(
                    async move { drive(&task, turn).await },
                    span,
                ));
                Ok(run)
            }
            Err(e) => {
                self.registry().remove(&run);
                Err(e)
            }
        }
    }

    /// What a streamed turn does when its thread has runs going in this runner (see
    /// [`TurnRequest::if_busy`]): refuses, or waits for them (cancelling them first as
    /// `strategy` says).
    pub(super) async fn meet_running(
        &self,
        thread_id: &str,
        strategy: DoubleText,
    ) -> Result<(), ThreadError> {
        let going = self.registry().active(thread_id);
        if going.is_empty() {
            return Ok(());
        }
        if strategy == DoubleText::Reject {
            return Err(ThreadError::Busy {
                id: thread_id.to_owned(),
            });
        }
        if let Some(mode) = strategy.cancel_mode() {
            for run in &going {
                let _ = run.cancel(mode, None);
            }
        }
        for run in &going {
            run.wait().await;
        }
        Ok(())
    }

    /// The run `run_id` of this runner, while it is remembered (see [`RunRetention`](super::RunRetention)).
    pub fn run_handle(&self, run_id: &str) -> Option<RunHandle> {
        self.registry().get(run_id)
    }

    /// Forgets the ended run `run_id` (LangGraph's `rollback` deletes the run it rolls back):
    /// its handle, events and status are gone from this runner. `false` if the runner does not
    /// remember it, or it has not ended (cancel it first, then wait for it).
    pub fn forget_run(&self, run_id: &str) -> bool {
        match self.registry().get(run_id) {
            Some(run) if run.status().is_final() => {
                self.registry().remove(&run);
                true
            }
            _ => false,
        }
    }

    /// The runs of thread `thread_id` this runner remembers, oldest first, with their status.
    pub(crate) fn thread_runs(&self, thread_id: &str) -> Vec<RunInfo> {
        self.registry()
            .of_thread(thread_id)
            .iter()
            .map(RunHandle::info)
            .collect()
    }
}

/// Drives `turn` to its end, keeping its events; stops it where it is if the run is
/// killed (immediate cancel).
pub(crate) async fn drive(run: &RunHandle, turn: Turn) {
    let resumed = turn.resumed();
    run.state
        .recovered
        .store(turn.recovered(), std::sync::atomic::Ordering::Release);
    if !run.start_running() {
        // A cancel reached it before it started: its turn, not polled yet, is dropped with
        // nothing run (its claim and lease given back).
        drop(turn);
        if let Some(cancelled) = run.cancelled_before_start() {
            run.push(RunItem::Ended(cancelled));
        }
        return;
    }
    run.push(RunItem::Started {
        thread_id: run.state.thread_id.clone(),
        turn: turn.number(),
        started_at: turn.started_at().clone(),
        resumed,
    });
    let killed = {
        let kill = std::pin::pin!(run.state.kill.notified());
        let forward = std::pin::pin!(forward(run, turn));
        match futures::future::select(kill, forward).await {
            futures::future::Either::Left(_) => true,
            futures::future::Either::Right(((outcome, failure), _)) => {
                run.push_with(RunItem::Ended(outcome), failure);
                false
            }
        }
    };
    if killed {
        // The turn was dropped where it was: nothing of it is recorded.
        let mode = run.state.cancel.requested().unwrap_or_default() | CancelMode::IMMEDIATE;
        run.push(RunItem::Ended(RunOutcome::Cancelled {
            mode,
            at_safe_point: false,
            before_start: false,
        }));
    }
}

/// Forwards `turn`'s items into `run` (its outward form); its outcome, with the typed error of
/// a failure.
async fn forward(run: &RunHandle, turn: Turn) -> (RunOutcome, Option<RunFailure>) {
    let mut items = TurnStream::new(turn);
    let mut ended = None;
    while let Some(item) = items.next().await {
        match item {
            TurnItem::Chunk {
                agent_name,
                run_path,
                chunk,
            } => run.push(RunItem::Chunk {
                agent_name,
                run_path,
                content: chunk.content.clone(),
                tool_calls: chunk.tool_calls.clone(),
            }),
            TurnItem::StreamFailed {
                agent_name,
                run_path,
                error,
            } => {
                // The broken stream is an error event of its agent (its public form is the
                // reader's to make from the typed error kept beside it).
                let error = AgentError::Stream(error);
                let event = AgentEvent::error(error.clone()).stamped(&agent_name, &run_path);
                run.push_with(
                    RunItem::Event(outward(&event, None, None, true)),
                    Some(RunFailure::Agent(error)),
                );
            }
            TurnItem::Event(e) => run.push_with(
                RunItem::Event(outward(
                    &e.event,
                    e.message.map(Arc::unwrap_or_clone),
                    e.custom.map(Arc::unwrap_or_clone),
                    e.streamed,
                )),
                e.event.error.clone().map(RunFailure::Agent),
            ),
            TurnItem::End(outcome) => ended = Some(outcome),
        }
    }
    let outcome = match ended {
        Some(TurnOutcome::Completed {
            answered_by,
            answer,
            ..
        }) => RunOutcome::Success {
            answered_by,
            answer,
        },
        Some(TurnOutcome::Interrupted { interrupts, .. })
            if !interrupts.is_empty() && interrupts.iter().all(is_cancel_interrupt) =>
        {
            RunOutcome::Cancelled {
                mode: run.state.cancel.requested().unwrap_or_default(),
                at_safe_point: true,
                before_start: false,
            }
        }
        Some(TurnOutcome::Interrupted { interrupts, .. }) => RunOutcome::Interrupted {
            interrupts: interrupts.into_iter().map(without_state).collect(),
        },
        Some(TurnOutcome::Failed(e)) => {
            return (
                RunOutcome::Error {
                    message: e.to_string(),
                },
                Some(e.into()),
            )
        }
        None => RunOutcome::Error {
            message: "the turn ended without an outcome".into(),
        },
    };
    (outcome, None)
}
