//! Crash recovery: [`Runner::recover`] picks up a thread's turn whose worker died, from the
//! turn's journal, in any process on the same stores once the dead worker's lease ran out.
//!
//! A journaled turn (durability [`Async`](super::Durability::Async) or
//! [`Sync`](super::Durability::Sync)) marks its start before it runs anything: a one-step
//! journal `THREAD.turn-N.start` holding the turn's input, the agent it started at, its
//! idempotency scope and the thread's version. A turn that fails or is cancelled closes the
//! mark (a second step); a turn that is recorded leaves the thread one turn further on. So a
//! thread whose next turn has an open mark had a worker die during that turn.
//!
//! Recovery runs the turn again from its start, with the same input, scope and starting
//! agent, and a replay middleware placed before every other middleware:
//! - a model call whose reply is journaled is answered with that reply (the model is not
//!   asked again); replies are matched per run path, in order, each given once the record
//!   holds the steps the journal has before it;
//! - a tool call whose result is journaled is answered with that result (the tool does not
//!   run again); results are matched by run path and call id. A tool whose only effect is on
//!   the session's values ([`Tool::session_only`](crate::Tool::session_only): the kit's plan,
//!   files kept in the thread, `load_skill`) runs again instead, in its place, so the
//!   recovered turn has the values the dead one wrote;
//! - a tool call that the journal shows asked for (its model reply is journaled) but without
//!   a result was in flight: it runs again with the same idempotency key (at-least-once,
//!   closed by the key), unless its tool is not [idempotent](crate::Tool::idempotent), in
//!   which case the model gets an error result saying the call may or may not have happened;
//! - what follows the journal runs as usual, and is journaled in the runner's mode.
//!
//! The events the run regenerates are compared with the journal's steps, not written again
//! (a run that diverges stops with [`JournalError::Corrupt`] and nothing written); they reach
//! the caller of [`Runner::recover`] with their original run paths, so the events it missed
//! are delivered again. The recovered turn is recorded as the uninterrupted turn would have
//! been: same input, same events, same end.
//!
//! A resumed turn (the continuation of an interrupt) marks its start too
//! (`THREAD.turn-N.resume`: checkpoint, answers, version); its recovery claims the checkpoint
//! again and resumes it with the same answers, replaying the journal's steps past the
//! checkpoint. The steps of runs nested in tool calls (an agent tool's) are journaled beside
//! (see `journal_nested`) and replayed the same way, the agent tool running again so that its
//! events are delivered again with their nested run paths. In `Sync`, a nested tool call also
//! waits until the nested reply that asked for it is stored. Recovery marks and nested journals
//! are deleted once their part is recorded, with the thread, and by `purge` for pruned turns
//! (`PurgeReport::marks_removed`).
//!
//! A new turn that stops for an interrupt saves its checkpoint, then records the interrupt in
//! the thread; its start mark names the checkpoint's id before the turn runs anything. If the
//! worker dies between the two writes, recovery withdraws that checkpoint and the recovered
//! turn saves its own, so an approvals screen ([`Checkpoints::pending`](crate::Checkpoints::pending))
//! never lists a second checkpoint whose approval would run the turn's continuation again.
//!
//! A dead turn whose thread moved on (an `update_state` after the dead worker's lease ran out)
//! is [`RecoverError::Superseded`]: not run again (it could diverge and pay twice), not
//! recorded; its `unrecorded` field holds the journaled steps that took effect (a paid tool's
//! result with its idempotency key) for the service to act on. The turn's journal stays
//! readable with `Runner::journal` until the thread's next turn replaces it.
//!
//! # Limits
//!
//! Recovery covers new and resumed turns of threads; a `RunRequest::checkpoint` run restarts
//! from its last checkpoint. A journaled result of a tool that attaches an action is replayed
//! as its text only, without its action, so such a turn diverges from its journal on recovery
//! (an error event, nothing written). Branches that run concurrently (a `Map`'s items, a
//! `Parallel`'s lanes, parallel tool calls) record their replayed answers in the journal's
//! order: each waits until the record holds the steps before it; branches of code agents
//! alone (no model or tool call) must record in the same order by themselves. An agent tool whose nested run journaled nothing (a
//! code agent only) is answered with its journaled result, without its nested events. `Exit`
//! turns write no journal and cannot be recovered (a new turn replaces them).

use std::sync::{Arc, Mutex};

use super::journal::turn_journal_id;
use super::journal_gate::{JournalGate, StoredCalls};
use super::replay::Replay;
use super::runs::Runner;
use super::turn::{DeadTurn, Recording, ThreadLease, Turn};
use super::turn_mark::RESUME_KIND;
use super::turn_mark::{
    nested_journal_id, resume_mark_id, turn_mark_id, ResumeStart, TurnStart, MARK_KIND,
};
use crate::agent::middleware::{Middleware, Middlewares};
use crate::agent::{Agent, AgentInput};
use crate::event::RecordedEvent;
use crate::history::ThreadHistory;
use crate::message::MessageRef;
use crate::store::{
    CheckpointError, JournalError, RecordEnd, RecordStart, ThreadError, ThreadHead, ThreadStore,
};

/// Why a turn could not be recovered ([`Runner::recover`]). Nothing stored is changed when
/// one is returned, and nothing ran.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RecoverError {
    /// The thread is held by a live worker (its lease has not run out), in this process or
    /// another one: its turn is not dead.
    #[error(
        "thread '{thread}' is leased by a live worker (or its dead worker's lease has not run \
         out yet): its turn is not recovered; try again once the lease ran out"
    )]
    Leased {
        /// The thread.
        thread: String,
    },
    /// The runner has no journal store: only a journaled turn can be recovered.
    #[error(
        "thread '{thread}': this runner has no journal store, so it cannot recover a turn; \
         give it the store the turns were journaled in with RunnerBuilder::journal_store"
    )]
    NoJournal {
        /// The thread.
        thread: String,
    },
    /// The turn's journal or its start mark is corrupt (truncated, forged, or written by
    /// another flow), or it changed while being read.
    #[error("thread '{thread}': the journal of its unfinished turn cannot be recovered: {source}")]
    Journal {
        /// The thread.
        thread: String,
        /// What is wrong.
        #[source]
        source: JournalError,
    },
    /// The dead worker's turn was superseded: after its lease ran out, another writer
    /// (a values step of [`ThreadHandle::update_state`](crate::ThreadHandle::update_state)) moved the thread on
    /// from the version the turn started at, so the turn can no longer be recorded where it
    /// started. It is not run again (nothing runs twice) and the thread is left as it is
    /// (nothing the other writer wrote is lost). Its start mark and nested journal are
    /// removed, so this is reported once and the next `recover` returns `Ok(None)`; the
    /// turn's own journal stays readable ([`Runner::journal`] of
    /// [`turn_journal_id`](super::turn_journal_id)) until the thread's next turn replaces
    /// it. The steps in `unrecorded` took effect (a paid tool's result with its idempotency
    /// key) but are in no record of the thread: tell the user, or start a new turn.
    #[error(
        "thread '{thread}': turn {turn}, whose worker died, started at version {started_at}, \
         but the thread moved on to version {version} after the dead worker's lease ran out \
         (update_state or another writer took it): the turn is not run again and not \
         recorded; its {steps} journaled steps took effect but are in no record (see \
         `unrecorded`); its start mark was removed",
        steps = unrecorded.len()
    )]
    Superseded {
        /// The thread.
        thread: String,
        /// The dead turn's number.
        turn: u64,
        /// The thread's version the dead turn started at.
        started_at: u64,
        /// The thread's version now.
        version: u64,
        /// The dead turn's journaled steps, in order: what it did that no record holds.
        unrecorded: Vec<super::journal::Step>,
    },
    /// The thread store failed, or the thread id is invalid.
    #[error(transparent)]
    Thread(#[from] ThreadError),
}

impl RecoverError {
    /// This error as a turn's: what a request that met a dead turn answers.
    fn into_thread_error(self) -> ThreadError {
        match self {
            RecoverError::Thread(e) => e,
            RecoverError::Journal { source, .. } => ThreadError::Journal(source),
            RecoverError::Leased { thread } => ThreadError::Busy { id: thread },
            other => ThreadError::Store(crate::store::StoreError::Other {
                id: String::new(),
                message: other.to_string(),
            }),
        }
    }
}

fn journal_error(thread: &str) -> impl Fn(JournalError) -> RecoverError + '_ {
    move |source| RecoverError::Journal {
        thread: thread.to_owned(),
        source,
    }
}

impl Runner {
    /// Recovers the turn of thread `thread_id` whose worker died (a crash, a SIGKILL, a
    /// redeploy), from its journal: `Ok(None)` if the thread has no such turn, else the
    /// recovered [`Turn`], whose events are the whole turn's (those the dead worker's caller
    /// already saw are delivered again, with their original run paths) and which is recorded
    /// when it ends, exactly as the uninterrupted turn would have been.
    ///
    /// Finished model replies and tool results are taken from the journal, never asked or
    /// run again; a tool call that was in flight runs again with the same
    /// [`idempotency_key`](crate::ToolContext::idempotency_key) (at-least-once: a tool with
    /// side effects deduplicates on the key), unless the tool is not
    /// [idempotent](crate::Tool::idempotent): then the model gets an error result it can act
    /// on. The module docs of `runner::recover` say how.
    ///
    /// Only journaled turns ([`Durability::Async`](super::Durability::Async) or
    /// [`Sync`](super::Durability::Sync), with a [`RunnerBuilder::journal_store`](crate::RunnerBuilder::journal_store))
    /// can be recovered; the recovered turn goes on journaling (in `Sync` if this runner's
    /// mode is `Exit`). Every [`turn`](Runner::turn) and [`start`](Runner::start) request
    /// recovers a dead turn of its thread before it takes anything new (its own turn, sent
    /// again, is given back to it; another's is finished first), so `recover` is what a
    /// service calls on the threads it was serving when it starts again.
    ///
    /// A dead turn whose thread moved on after its lease ran out ([`ThreadHandle::update_state`](crate::ThreadHandle::update_state)
    /// took the thread) is [`RecoverError::Superseded`]: not run, not recorded, its start
    /// mark removed (so reported once), its journaled steps in the error.
    ///
    /// Other errors, with nothing stored changed and nothing run: [`RecoverError::Leased`] while a
    /// worker holds the thread's lease (the dead worker's lease must run out first),
    /// [`RecoverError::Journal`] for a journal written by another flow, truncated or forged,
    /// [`RecoverError::NoJournal`] without a journal store. A run that diverges from its
    /// journal while it replays (a code agent that is not deterministic) stops with an error
    /// event and records nothing.
    pub async fn recover(&self, thread_id: &str) -> Result<Option<Turn>, RecoverError> {
        if self.journal.is_none() {
            return Err(RecoverError::NoJournal {
                thread: thread_id.to_owned(),
            });
        }
        let (store, claim, mut lease) = match self.hold_thread(thread_id).await {
            Ok(held) => held,
            Err(ThreadError::Busy { .. }) => {
                return Err(RecoverError::Leased {
                    thread: thread_id.to_owned(),
                })
            }
            Err(e) => return Err(e.into()),
        };
        let started = self
            .start_recovered(store, thread_id, claim, &mut lease)
            .await;
        ThreadLease::release_unused(lease).await;
        started
    }

    /// The one step of start mark `id` of `thread_id`, decoded as a `kind` mark (`what`, in
    /// errors) written by this flow; `None` if the mark is not there (never written, or
    /// closed). A mark of another kind or flow, or one that does not decode, is corrupt.
    async fn read_mark<T: serde::de::DeserializeOwned>(
        &self,
        journal: &dyn crate::store::JournalStore,
        thread_id: &str,
        id: &str,
        kind: &str,
        what: &str,
        flow_of: fn(&T) -> &str,
    ) -> Result<Option<T>, RecoverError> {
        let steps = journal
            .read_steps(id, 0)
            .await
            .map_err(journal_error(thread_id))?;
        let [mark] = steps.as_slice() else {
            return Ok(None);
        };
        let corrupt = |reason: String| corrupt_mark(thread_id, id, reason);
        if mark.kind != kind {
            return Err(corrupt(format!("its kind is '{}', not {what}", mark.kind)));
        }
        let start: T = serde_json::from_slice(&mark.bytes)
            .map_err(|e| corrupt(format!("it does not decode (truncated or forged?): {e}")))?;
        let flow = self.flow_fingerprint();
        if flow_of(&start) != flow {
            return Err(corrupt(format!(
                "it was written by another flow (fingerprint {}, this flow's is {flow}); \
                 recover it with the runner of that flow",
                flow_of(&start)
            )));
        }
        Ok(Some(start))
    }

    /// The open start mark of the next turn of `thread_id`, with the thread's version and
    /// the turn's number, if it has one.
    async fn open_mark(
        &self,
        store: &Arc<dyn ThreadStore>,
        thread_id: &str,
        known_head: Option<&Option<ThreadHead>>,
    ) -> Result<Option<(TurnStart, u64, u64)>, RecoverError> {
        let journal = self
            .journal_store_or_err(thread_id)
            .map_err(journal_error(thread_id))?;
        let read;
        let head = match known_head {
            Some(head) => head,
            None => {
                read = store.head(thread_id).await?;
                &read
            }
        };
        if let Some(head) = head {
            // A turn waiting for its resume is continued by `TurnRequest::resume`, whose claim makes
            // a dead worker's resume run again.
            if matches!(head.last.end, RecordEnd::Interrupted { .. }) {
                return Ok(None);
            }
        }
        let (version, turn) = head.as_ref().map_or((0, 0), |h| (h.version, h.turns));
        let id = turn_mark_id(thread_id, turn);
        // No mark: the turn was never journaled, or its mark was closed.
        let Some(start) = self
            .read_mark::<TurnStart>(&**journal, thread_id, &id, MARK_KIND, "a turn start", |s| {
                &s.flow
            })
            .await?
        else {
            return Ok(None);
        };
        let corrupt = |reason: String| corrupt_mark(thread_id, &id, reason);
        if start.thread == thread_id && start.turn == turn && start.version < version {
            // Another writer took the thread after the dead worker's lease ran out.
            return Err(self.supersede(&**journal, thread_id, &start, version).await);
        }
        if start.thread != thread_id || start.turn != turn || start.version != version {
            return Err(corrupt(format!(
                "it says it starts turn {} of thread '{}' at version {}, which does not fit \
                 this thread (turn {turn}, version {version})",
                start.turn, start.thread, start.version
            )));
        }
        if start.input.is_empty() || start.started_at.last().is_none() {
            return Err(corrupt("it has no input or no starting agent".into()));
        }
        Ok(Some((start, version, turn)))
    }

    /// Reports the dead turn `start` of `thread_id`, whose thread moved on to `version`, as
    /// [`RecoverError::Superseded`], after removing its start mark and nested journal (the
    /// mark last: a failure before leaves it, and the next `recover` reports again).
    async fn supersede(
        &self,
        journal: &dyn crate::store::JournalStore,
        thread_id: &str,
        start: &TurnStart,
        version: u64,
    ) -> RecoverError {
        let journal_id = turn_journal_id(thread_id, start.turn);
        let unrecorded = match self.journal(&journal_id).await {
            Ok(steps) => steps,
            Err(source) => return journal_error(thread_id)(source),
        };
        if let Err(e) = self.withdraw_unrecorded_checkpoint(start).await {
            return e;
        }
        let nested = nested_journal_id(&journal_id, start.version);
        for id in [nested, turn_mark_id(thread_id, start.turn)] {
            if let Err(source) = journal.delete_journal(&id).await {
                return journal_error(thread_id)(source);
            }
        }
        tracing::warn!(
            thread = thread_id,
            turn = start.turn,
            started_at = start.version,
            version,
            steps = unrecorded.len(),
            "a dead worker's turn was superseded: the thread moved on after its lease ran out"
        );
        RecoverError::Superseded {
            thread: thread_id.to_owned(),
            turn: start.turn,
            started_at: start.version,
            version,
            unrecorded,
        }
    }

    /// Withdraws the checkpoint the dead turn `start` may have saved before it died (its start
    /// mark names the id it saves under): the turn is not recorded, so no record points to
    /// it, and left pending it is an approval that would run the turn's continuation again.
    /// The recovered run saves its own if it is interrupted again.
    async fn withdraw_unrecorded_checkpoint(&self, start: &TurnStart) -> Result<(), RecoverError> {
        let (Some(id), Some(checkpoints)) = (&start.checkpoint_id, &self.store) else {
            return Ok(());
        };
        checkpoints
            .delete(id)
            .await
            .map_err(|e| RecoverError::Thread(ThreadError::Store(e)))
    }

    /// The open start mark of the resume of `head`'s interrupted turn (a resume whose worker
    /// died before it ended), if it has one.
    async fn open_resume_mark(
        &self,
        thread_id: &str,
        head: &ThreadHead,
        checkpoint_id: &str,
    ) -> Result<Option<ResumeStart>, RecoverError> {
        let journal = self
            .journal_store_or_err(thread_id)
            .map_err(journal_error(thread_id))?;
        let id = resume_mark_id(thread_id, head.last.turn);
        // No mark: never resumed in a journaled mode, or the resume failed or was cancelled.
        let Some(start) = self
            .read_mark::<ResumeStart>(
                &**journal,
                thread_id,
                &id,
                RESUME_KIND,
                "a resume start",
                |s| &s.flow,
            )
            .await?
        else {
            return Ok(None);
        };
        let corrupt = |reason: String| corrupt_mark(thread_id, &id, reason);
        if start.thread != thread_id || start.turn != head.last.turn {
            return Err(corrupt(format!(
                "it says it resumes turn {} of thread '{}', which does not fit this thread \
                 (turn {})",
                start.turn, start.thread, head.last.turn
            )));
        }
        if start.version != head.version || start.checkpoint_id != checkpoint_id {
            // An earlier resume, which was recorded: the thread went on since.
            return Ok(None);
        }
        Ok(Some(start))
    }

    /// Starts the recovery of a resume of `thread_id`'s interrupted turn whose worker died:
    /// the same answers, the journal's steps past the checkpoint replayed.
    async fn start_recovered_resume(
        &self,
        store: Arc<dyn ThreadStore>,
        thread_id: &str,
        start: ResumeStart,
        claim: super::turn::ThreadClaim,
        lease: &mut Option<ThreadLease>,
    ) -> Result<Option<Turn>, RecoverError> {
        tracing::info!(
            thread = thread_id,
            turn = start.turn,
            checkpoint = %start.checkpoint_id,
            "recovering a resumed turn whose worker died"
        );
        let targets = start.targets.into_iter().collect();
        // The recovered part is recorded under the run id its request gave, as the dead
        // worker's would have been.
        let mut runner = std::borrow::Cow::Borrowed(self);
        if start.run_id.is_some() {
            runner.to_mut().threads.run_id = start.run_id;
        }
        match runner
            .start_resumed_turn(
                store, thread_id, targets, start.by, claim, lease, true, None,
            )
            .await
        {
            Ok(turn) => Ok(Some(turn)),
            // The dead worker's claim on the checkpoint has not run out yet.
            Err(ThreadError::Checkpoint(CheckpointError::Claimed { .. })) => {
                Err(RecoverError::Leased {
                    thread: thread_id.to_owned(),
                })
            }
            Err(ThreadError::Journal(source)) => Err(RecoverError::Journal {
                thread: thread_id.to_owned(),
                source,
            }),
            Err(e) => Err(e.into()),
        }
    }

    /// In the turn pipeline: whether thread `thread_id` has a turn whose worker died (a
    /// journaled turn's open start mark, or a resume's), and whose it is: the request's own
    /// (the same idempotency `scope`, or, for `answering` requests, a dead resume: the answer
    /// was given and took effect) or another's. A mark that cannot be read (corrupt, or
    /// written by another flow) is left where it is and counts as none, with a warning: the
    /// new request goes on as before recovery existed (its turn replaces the dead one).
    pub(super) async fn dead_turn(
        &self,
        store: &Arc<dyn ThreadStore>,
        thread_id: &str,
        scope: Option<&str>,
        answering: bool,
    ) -> Result<(DeadTurn, Option<Option<ThreadHead>>), ThreadError> {
        if self.journal.is_none() {
            return Ok((DeadTurn::None, None));
        }
        let head = store.head(thread_id).await?;
        let found = match &head {
            Some(last) => match &last.last.end {
                RecordEnd::Interrupted { checkpoint_id, .. } => self
                    .open_resume_mark(thread_id, last, checkpoint_id)
                    .await
                    .map(|mark| match (mark, answering) {
                        (None, _) => DeadTurn::None,
                        (Some(_), true) => DeadTurn::Own,
                        (Some(_), false) => DeadTurn::Other,
                    }),
                RecordEnd::Completed { .. } => {
                    self.open_turn_mark(store, thread_id, scope, &head).await
                }
            },
            None => self.open_turn_mark(store, thread_id, scope, &head).await,
        };
        // The head read here is the one the turn starts from when nothing is recovered (the
        // thread is held: nobody else writes it meanwhile).
        match found {
            Ok(DeadTurn::None) => Ok((DeadTurn::None, Some(head))),
            Ok(dead) => Ok((dead, None)),
            Err(RecoverError::Thread(e)) => Err(e),
            Err(e) => {
                tracing::warn!(thread = thread_id, error = %e, "a dead turn's mark cannot be recovered; the new request replaces the turn");
                Ok((DeadTurn::None, Some(head)))
            }
        }
    }

    async fn open_turn_mark(
        &self,
        store: &Arc<dyn ThreadStore>,
        thread_id: &str,
        scope: Option<&str>,
        head: &Option<ThreadHead>,
    ) -> Result<DeadTurn, RecoverError> {
        match self.open_mark(store, thread_id, Some(head)).await {
            Ok(Some((start, ..))) if scope == Some(start.scope.as_str()) => Ok(DeadTurn::Own),
            Ok(Some(_)) => Ok(DeadTurn::Other),
            Ok(None) | Err(RecoverError::Superseded { .. }) => Ok(DeadTurn::None),
            Err(e) => Err(e),
        }
    }

    /// Recovers the dead turn [`dead_turn`](Self::dead_turn) found, under the thread the
    /// request holds (`claim`, `lease`).
    pub(super) async fn recover_held(
        &self,
        store: &Arc<dyn ThreadStore>,
        thread_id: &str,
        claim: super::turn::ThreadClaim,
        lease: &mut Option<ThreadLease>,
    ) -> Result<Option<Turn>, ThreadError> {
        self.start_recovered(Arc::clone(store), thread_id, claim, lease)
            .await
            .map_err(RecoverError::into_thread_error)
    }

    /// Starts the recovery of `thread_id`'s unfinished turn under `lease` (moved into the
    /// turn once it is built).
    async fn start_recovered(
        &self,
        store: Arc<dyn ThreadStore>,
        thread_id: &str,
        claim: super::turn::ThreadClaim,
        lease: &mut Option<ThreadLease>,
    ) -> Result<Option<Turn>, RecoverError> {
        if let Some(head) = store.head(thread_id).await? {
            if let RecordEnd::Interrupted { checkpoint_id, .. } = &head.last.end {
                let Some(start) = self
                    .open_resume_mark(thread_id, &head, checkpoint_id)
                    .await?
                else {
                    return Ok(None);
                };
                return self
                    .start_recovered_resume(store, thread_id, start, claim, lease)
                    .await;
            }
        }
        let Some((start, version, number)) = self.open_mark(&store, thread_id, None).await? else {
            return Ok(None);
        };
        self.withdraw_unrecorded_checkpoint(&start).await?;
        let journal_id = turn_journal_id(thread_id, number);
        let steps = self
            .journal(&journal_id)
            .await
            .map_err(journal_error(thread_id))?;
        let replayed: Vec<RecordedEvent> = steps.into_iter().map(|s| s.event).collect();
        let name = start.started_at.last().expect("checked by open_mark");
        let agent = if name == self.agent.name() {
            crate::agent::FlowAgent::clone(&self.agent)
        } else {
            self.agent.find(name).ok_or_else(|| RecoverError::Journal {
                thread: thread_id.to_owned(),
                source: JournalError::Corrupt {
                    run: turn_mark_id(thread_id, number),
                    seq: 0,
                    reason: format!("its turn starts at agent '{name}', which this flow has not"),
                },
            })?
        };
        // The recovered run journals in Sync unless the runner says Async: its tool calls
        // then wait for their replies' steps (those of the journal are stored already).
        let gate = (self.durability != super::Durability::Async).then(|| {
            let gate = Arc::new(StoredCalls::default());
            gate.add(&replayed);
            gate
        });
        let input: Vec<MessageRef> = start.input.iter().cloned().map(Arc::new).collect();
        let history = ThreadHistory::new(
            super::earlier::StoreTurns::shared(&store, thread_id),
            number,
        );
        // The turn starts with the thread's values, as the dead worker's did.
        let head = store.head(thread_id).await?;
        let cx = self
            .run_context(
                Runner::session_after(head.as_ref().map(|h| &h.last)),
                input,
                agent.name(),
                Some(Arc::new(history)),
            )
            .with_conversation_id(thread_id)
            .with_idempotency_scope(start.scope.as_str());
        let (nested, nested_steps) = self
            .nested_steps(
                thread_id,
                number,
                version,
                cx.session(),
                start.scope.as_str(),
                gate.clone(),
                true,
            )
            .await
            .map_err(journal_error(thread_id))?;
        if let Some(gate) = &gate {
            gate.add(&nested_steps);
        }
        let replay = Arc::new(Replay::new(&replayed, 0).with_nested(&nested_steps));
        // The steers the dead worker took in are taken in again where it took them.
        let steering = cx.steering().cloned().unwrap_or_default();
        let cx = cx.with_steering(steering.replaying(Arc::clone(&replay) as _));
        let mut first = Middlewares::default().with(replay as Arc<dyn Middleware>);
        if let Some(nested) = nested {
            first = first.with(nested);
        }
        if let Some(gate) = &gate {
            first = first.with(Arc::new(JournalGate(Arc::clone(gate))));
        }
        let cx = cx.with_run_middleware(Middlewares::chain([&first, &self.middleware]));
        let agent_input = AgentInput {
            messages: cx.root_messages(),
            streaming: self.streaming,
        };
        tracing::info!(
            thread = thread_id,
            turn = number,
            steps = replayed.len(),
            "recovering a turn whose worker died"
        );
        let events = Arc::new(agent).run(cx.clone(), agent_input);
        // The recovered turn is recorded under the run id its request gave, as the dead
        // worker's would have been.
        let mut runner = self.clone();
        runner.threads.run_id = start.run_id.clone();
        let plan = Recording {
            runner,
            store,
            thread_id: thread_id.to_owned(),
            turn: number,
            version,
            started_at: start.started_at,
            start: RecordStart::Turn { input: start.input },
            by: start.by,
            restored: 0,
            resumed_checkpoint: None,
            lineage: (start.run_id.unwrap_or_else(crate::ids::unique_token), 0),
            resume_claim: Mutex::new(None),
            replayed: Some(replayed),
            planned_checkpoint: std::sync::OnceLock::new(),
            gate,
            replay: None,
        };
        let lease = lease
            .take()
            .expect("the turn's lease is held until it starts");
        Ok(Some(plan.into_turn(cx, events, claim, lease)))
    }
}

/// The error of a start mark `id` of `thread_id` that cannot be what it says.
fn corrupt_mark(thread_id: &str, id: &str, reason: String) -> RecoverError {
    RecoverError::Journal {
        thread: thread_id.to_owned(),
        source: JournalError::Corrupt {
            run: id.to_owned(),
            seq: 0,
            reason,
        },
    }
}
