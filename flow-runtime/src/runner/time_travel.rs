//! Time travel on threads: [`ThreadHandle::history`](crate::ThreadHandle::history) lists a thread's steps,
//! [`ThreadHandle::fork`](crate::ThreadHandle::fork) copies a thread up to a step into a new thread, and [`ThreadHandle::run_from`](crate::ThreadHandle::run_from)
//! re-runs a thread from a step in a new thread ("re-run from here"). The original thread is
//! never changed.
//!
//! **Steps.** A thread's steps are, in order, for each record: the user's input (a record that
//! starts a turn), each recorded event (a model reply, a tool result, a transfer, ...), and the
//! interrupt the record stopped at, if any. Step ids are positions, from 0, and each step's
//! parent is the one before it.
//!
//! **Forks.** `fork(thread, step, new)` writes `new` with the records of `thread` up to `step`:
//! - a step that ends a turn (its last event): the turn is copied whole, and the fork takes a
//!   new message with [`Runner::turn`];
//! - an interrupt: the record is copied with a copy of the interrupt's checkpoint (a new run
//!   of its own: new tool idempotency keys), so [`TurnRequest::resume`](crate::TurnRequest::resume) on the fork answers
//!   the interrupt, with any answer, whether or not the original thread answered it. The
//!   checkpoint carries the interrupted agent's state, so an interrupt inside a nested agent
//!   (an [`AgentTool`](crate::AgentTool)'s run, a workflow's sub-agent) resumes inside it;
//! - any other step: the fork's last record holds the events up to the step and ends at a
//!   **fork point** (an interrupt whose id is [`FORK_POINT`]). [`TurnRequest::resume`](crate::TurnRequest::resume) goes on
//!   from it: the turn runs again from its start with every model reply and tool result up to
//!   the step **replayed** from the record (the model is not asked, the tool does not run;
//!   per run path, so parallel branches replay whatever their interleaving), then runs live
//!   from the step on. The replayed steps are not streamed or recorded again: the
//!   continuation's record holds only what follows the step.
//!
//! What replays and what runs again: model replies and tool results (an agent tool's result
//! included: its nested run is not run again) are replayed; code agents (`FnAgent`) and the
//! built-in transfer and exit tools run again (they are code, and give the same events). An
//! agent tool's inner steps are not steps of the thread (its run is recorded in its own
//! scope, see [`AgentTool`](crate::AgentTool)): its result is.
//!
//! Bad input (an unknown thread, a step the thread does not have, a target thread that already
//! has records) is a typed [`TimeTravelError`], and nothing is written.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use futures::StreamExt;
use serde::{Deserialize, Serialize};

use super::fork_point::is_fork_point;
pub use super::fork_point::{fork_point_step, FORK_POINT};
use super::journal::{turn_journal_id, StepKind};
use super::runs::Runner;
use super::turn::{Recording, ThreadClaim, ThreadLease, Turn};
use crate::agent::{Agent, AgentInput, EventStream, HookContext, Middleware};
use crate::event::{AgentEvent, InterruptInfo};
use crate::history::ThreadHistory;
use crate::message::{Message, MessageRef, Role, ToolCall};
use crate::model::ChatRequest;
use crate::run_path::RunPath;
use crate::store::{
    turn_checkpoint_id, validate_thread_id, CheckpointError, CheckpointStatus, RecordEnd,
    RecordStart, RecordedEvent, SaveMode, ThreadError, ThreadHead, ThreadRecord, ThreadStore,
};
use crate::HookError;

/// What a thread's step is (see [`ThreadStep`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ThreadStepKind {
    /// The user's input that started a turn.
    Input,
    /// A recorded event of the turn (a model reply, a tool result, a transfer, ...).
    Run(StepKind),
    /// The interrupt a part of a turn stopped at (a fork point included).
    Interrupt,
    /// A change of the thread's values ([`ThreadHandle::update_state`](crate::ThreadHandle::update_state)).
    Values,
}

impl ThreadStepKind {
    /// Its label: `input`, `interrupt`, `values`, or the run step's (`model_reply`, `tool_result`, ...).
    pub fn label(self) -> &'static str {
        match self {
            ThreadStepKind::Input => "input",
            ThreadStepKind::Run(kind) => kind.label(),
            ThreadStepKind::Interrupt => "interrupt",
            ThreadStepKind::Values => "values",
        }
    }
}

/// One step of a thread, as [`ThreadHandle::history`](crate::ThreadHandle::history) lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThreadStep {
    /// Its id: its position in the thread's steps, from 0 (what [`ThreadHandle::fork`](crate::ThreadHandle::fork) takes).
    pub id: u64,
    /// The step before it (`None` for the first).
    pub parent: Option<u64>,
    /// The turn it belongs to, from 0.
    pub turn: u64,
    /// The thread record holding it (its position).
    pub record: u64,
    /// The agent that recorded it (for an input: the agent the turn started at; for an
    /// interrupt: the interrupting agent; for a values step: empty, as is its run path).
    pub agent: Arc<str>,
    /// Where it was recorded.
    pub run_path: RunPath,
    /// What it is.
    pub kind: ThreadStepKind,
    /// When its record was written, in milliseconds since the Unix epoch.
    pub at_ms: u64,
}

/// How a fork ended (see [`ThreadHandle::fork`](crate::ThreadHandle::fork)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ForkEnd {
    /// The step ends its turn: the fork takes a new message ([`Runner::turn`]).
    TurnEnd,
    /// The step is an interrupt: the fork waits for its answer ([`TurnRequest::resume`](crate::TurnRequest::resume)).
    Interrupt,
    /// The step is inside a turn: [`TurnRequest::resume`](crate::TurnRequest::resume) goes on from it.
    ForkPoint,
}

/// A fork made by [`ThreadHandle::fork`](crate::ThreadHandle::fork).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fork {
    /// The new thread.
    pub thread: String,
    /// The thread it was forked from.
    pub from: String,
    /// The step it was forked at.
    pub at_step: u64,
    /// The new thread's number of records.
    pub version: u64,
    /// How it ends.
    pub end: ForkEnd,
    /// For a fork at an interrupt: the interrupts it waits on (answer them by these ids).
    pub interrupts: Vec<InterruptInfo>,
}

/// Why a time-travel call failed. Nothing stored is changed when one is returned.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum TimeTravelError {
    /// The thread has no records.
    #[error(
        "thread '{thread}' does not exist (it has no records); list threads with Runner::threads"
    )]
    UnknownThread {
        /// The thread.
        thread: String,
    },
    /// The thread has no such step.
    #[error(
        "thread '{thread}' has no step {step} (it has {steps} steps, 0 to {last}); list them \
         with ThreadHandle::history",
        last = steps.saturating_sub(1)
    )]
    UnknownStep {
        /// The thread.
        thread: String,
        /// The step asked for.
        step: u64,
        /// How many steps it has.
        steps: u64,
    },
    /// The target thread already has records (a fork never writes over a thread).
    #[error("thread '{thread}' already exists; fork into a new thread id (or delete it first)")]
    ThreadExists {
        /// The target thread.
        thread: String,
    },
    /// `run_from` at a step that ends its turn: there is nothing of the turn left to run.
    #[error(
        "step {step} of thread '{thread}' ends its turn, so there is nothing to re-run from it; \
         fork there (ThreadHandle::fork) and send the fork a new message (Runner::turn)"
    )]
    NothingToRerun {
        /// The thread.
        thread: String,
        /// The step.
        step: u64,
    },
    /// `update_state` on a thread that waits for an interrupt's answer (or at a fork point):
    /// the paused turn's values are its checkpoint's.
    #[error(
        "thread '{thread}' waits for the answer to an interrupt of turn {turn}, so its values \
         cannot change now (the paused turn goes on with the values it stopped with); answer \
         it first (TurnRequest::resume), or fork at the step before the interrupt and update \
         the fork"
    )]
    AwaitingResume {
        /// The thread.
        thread: String,
        /// The waiting turn.
        turn: u64,
    },
    /// `update_state` with a key of the framework's own (it starts with
    /// [`FRAMEWORK_KEY_PREFIX`](super::FRAMEWORK_KEY_PREFIX)).
    #[error(
        "thread '{thread}': value key '{key}' is reserved (keys starting with 'agentflow.' \
         belong to one run, not to the thread); nothing was written: use another key"
    )]
    ReservedKey {
        /// The thread.
        thread: String,
        /// The key.
        key: String,
    },
    /// The checkpoint of the interrupt to fork at is no longer stored (the thread went on with
    /// a new message after a cancel, or it was purged).
    #[error(
        "the checkpoint '{checkpoint}' of the interrupt at step {step} of thread '{thread}' is \
         no longer stored, so the interrupt cannot be answered again; fork at the step before it"
    )]
    CheckpointGone {
        /// The thread.
        thread: String,
        /// The step.
        step: u64,
        /// The checkpoint.
        checkpoint: String,
    },
    /// The thread store failed or refused (an invalid id, a busy thread, ...).
    #[error(transparent)]
    Thread(#[from] ThreadError),
    /// The interrupt's checkpoint could not be read or copied.
    #[error(transparent)]
    Checkpoint(#[from] CheckpointError),
}

impl From<crate::store::StoreError> for TimeTravelError {
    fn from(e: crate::store::StoreError) -> Self {
        TimeTravelError::Thread(ThreadError::Store(e))
    }
}

impl From<crate::store::JournalError> for TimeTravelError {
    fn from(e: crate::store::JournalError) -> Self {
        TimeTravelError::Thread(ThreadError::Journal(e))
    }
}

/// Where a step is: its record, and within it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    Input,
    Values,
    Event(usize),
    End,
}

/// The steps of `records`, with where each is.
fn steps_of(records: &[ThreadRecord]) -> Vec<(ThreadStep, usize, Place)> {
    let mut out: Vec<(ThreadStep, usize, Place)> = Vec::new();
    for (r, record) in records.iter().enumerate() {
        let mut push = |agent: Arc<str>, run_path: RunPath, kind, place| {
            let id = out.len() as u64;
            out.push((
                ThreadStep {
                    id,
                    parent: id.checked_sub(1),
                    turn: record.turn,
                    record: record.seq,
                    agent,
                    run_path,
                    kind,
                    at_ms: record.at_ms,
                },
                r,
                place,
            ));
        };
        if matches!(record.start, RecordStart::Values { .. }) {
            push(
                Arc::from(""),
                RunPath::default(),
                ThreadStepKind::Values,
                Place::Values,
            );
        }
        if record.starts_turn() {
            let agent: Arc<str> = Arc::from(record.started_at.last().unwrap_or_default());
            push(
                agent,
                record.started_at.clone(),
                ThreadStepKind::Input,
                Place::Input,
            );
        }
        for (k, event) in record.events.iter().enumerate() {
            push(
                Arc::clone(&event.agent_name),
                event.run_path.clone(),
                ThreadStepKind::Run(StepKind::of(event)),
                Place::Event(k),
            );
        }
        if let RecordEnd::Interrupted { interrupts, .. } = &record.end {
            let frame = interrupts.first().and_then(|i| i.address.last());
            let (agent, path) = match frame {
                Some(f) => (Arc::clone(&f.agent), f.run_path.clone()),
                None => (
                    Arc::from(record.started_at.last().unwrap_or_default()),
                    record.started_at.clone(),
                ),
            };
            push(agent, path, ThreadStepKind::Interrupt, Place::End);
        }
    }
    out
}

impl Runner {
    /// The steps of thread `thread`, in order (see the guide's "Durable execution" chapter): each turn's input,
    /// each recorded event, each interrupt, with its id, parent, agent, run path, kind and
    /// time. [`TimeTravelError::UnknownThread`] for a thread with no records.
    pub(crate) async fn thread_history(
        &self,
        thread: &str,
    ) -> Result<Vec<ThreadStep>, TimeTravelError> {
        let records = self.records_of(thread).await?;
        Ok(steps_of(&records).into_iter().map(|(s, ..)| s).collect())
    }

    async fn records_of(&self, thread: &str) -> Result<Vec<ThreadRecord>, TimeTravelError> {
        validate_thread_id(thread)?;
        if self.thread_expired(thread).await? {
            return Err(TimeTravelError::UnknownThread {
                thread: thread.to_owned(),
            });
        }
        let records = self
            .thread_store_or_err()?
            .read(thread, 0..u64::MAX)
            .await?;
        if records.is_empty() {
            return Err(TimeTravelError::UnknownThread {
                thread: thread.to_owned(),
            });
        }
        Ok(records)
    }

    /// Copies thread `thread` up to and including step `at_step` into the new thread
    /// `new_thread` (see the guide's "Durable execution" chapter for what the fork can do next, by the kind of
    /// step). The original thread is only read. Errors, with nothing written: an invalid or
    /// unknown thread, a step it does not have, a `new_thread` that already has records (or
    /// has a turn running).
    pub(crate) async fn fork(
        &self,
        thread: &str,
        at_step: u64,
        new_thread: &str,
    ) -> Result<Fork, TimeTravelError> {
        validate_thread_id(new_thread)?;
        let records = self.records_of(thread).await?;
        let steps = steps_of(&records);
        let Some((step, r, place)) = steps.get(at_step as usize).cloned() else {
            return Err(TimeTravelError::UnknownStep {
                thread: thread.to_owned(),
                step: at_step,
                steps: steps.len() as u64,
            });
        };
        let store = Arc::clone(self.thread_store_or_err()?);
        if new_thread == thread || store.head(new_thread).await?.is_some() {
            return Err(TimeTravelError::ThreadExists {
                thread: new_thread.to_owned(),
            });
        }
        // The new thread's lease keeps turns off it while it is written.
        let owner = crate::ids::unique_token();
        store
            .lease_thread(new_thread, &owner, self.lease)
            .await
            .map_err(|e| match e {
                ThreadError::Busy { .. } => TimeTravelError::ThreadExists {
                    thread: new_thread.to_owned(),
                },
                e => e.into(),
            })?;
        let written = self
            .write_fork(&store, thread, &records, (&step, r, place), new_thread)
            .await;
        if written.is_err() {
            // Nothing of a failed fork stays (the target had no records before it).
            let _ = store.delete(new_thread).await;
        }
        let _ = store.release_thread_lease(new_thread, &owner).await;
        written
    }

    async fn write_fork(
        &self,
        store: &Arc<dyn ThreadStore>,
        thread: &str,
        records: &[ThreadRecord],
        (step, r, place): (&ThreadStep, usize, Place),
        new_thread: &str,
    ) -> Result<Fork, TimeTravelError> {
        let mut copied: Vec<ThreadRecord> = records[..r].to_vec();
        let mut last = records[r].clone();
        // A fork inside a turn starts it again from the values before the turn.
        let values_before = records[..r]
            .iter()
            .rev()
            .find(|x| x.turn < last.turn)
            .and_then(|x| x.values.clone());
        let (end, interrupts) = match place {
            Place::Values => (ForkEnd::TurnEnd, Vec::new()),
            Place::End if is_fork_point(&last.end) => (ForkEnd::ForkPoint, Vec::new()),
            Place::End => {
                let RecordEnd::Interrupted {
                    checkpoint_id,
                    interrupts,
                } = last.end.clone()
                else {
                    unreachable!("an end step is an interrupt");
                };
                let turn_events: Vec<RecordedEvent> = records[..=r]
                    .iter()
                    .filter(|x| x.turn == last.turn)
                    .flat_map(|x| x.events.iter().cloned())
                    .collect();
                let copy = self
                    .copy_checkpoint(thread, step.id, &checkpoint_id, &interrupts, turn_events)
                    .await?;
                let new_id = turn_checkpoint_id(new_thread, last.turn);
                let checkpoints = self.store.as_ref().ok_or(CheckpointError::NoStore)?;
                checkpoints
                    .save(&new_id, copy, SaveMode::Create)
                    .await
                    .map_err(CheckpointError::from)?;
                last.end = RecordEnd::Interrupted {
                    checkpoint_id: new_id,
                    interrupts: interrupts.clone(),
                };
                (ForkEnd::Interrupt, interrupts.clone())
            }
            Place::Event(k)
                if k + 1 == last.events.len()
                    && matches!(last.end, RecordEnd::Completed { .. }) =>
            {
                (ForkEnd::TurnEnd, Vec::new())
            }
            Place::Event(k) => {
                last.events.truncate(k + 1);
                last.end = fork_point_end(new_thread, last.turn, step.id);
                last.values = values_before;
                (ForkEnd::ForkPoint, Vec::new())
            }
            Place::Input => {
                last.events.clear();
                last.end = fork_point_end(new_thread, last.turn, step.id);
                last.values = values_before;
                (ForkEnd::ForkPoint, Vec::new())
            }
        };
        copied.push(last);
        let mut version = 0;
        for record in copied {
            version = store.append(new_thread, version, record).await?;
        }
        self.copy_journals(thread, records, r, new_thread).await?;
        Ok(Fork {
            thread: new_thread.to_owned(),
            from: thread.to_owned(),
            at_step: step.id,
            version,
            end,
            interrupts,
        })
    }

    /// The bytes of a copy of the checkpoint an interrupted record stopped at, as it was at
    /// the interrupt, as a new run (new idempotency keys).
    async fn copy_checkpoint(
        &self,
        thread: &str,
        step: u64,
        checkpoint_id: &str,
        interrupts: &[InterruptInfo],
        turn_events: Vec<RecordedEvent>,
    ) -> Result<Vec<u8>, TimeTravelError> {
        let checkpoints = self.store.as_ref().ok_or(CheckpointError::NoStore)?;
        let gone = || TimeTravelError::CheckpointGone {
            thread: thread.to_owned(),
            step,
            checkpoint: checkpoint_id.to_owned(),
        };
        let bytes = checkpoints
            .get(checkpoint_id)
            .await
            .map_err(CheckpointError::from)?
            .ok_or_else(gone)?;
        let mut checkpoint = self.codec.decode(checkpoint_id, &bytes)?;
        // Resumed since: the stored head went on; the interrupt's state is the record's.
        checkpoint.status = CheckpointStatus::Interrupted;
        checkpoint.events = turn_events;
        checkpoint.interrupts = interrupts.to_vec();
        checkpoint.thread_part = None;
        checkpoint.run_id = self.host.new_id();
        checkpoint.resumes = 0;
        Ok(self.codec.encode(&checkpoint))
    }

    /// Copies the journals of the turns the fork holds (in the runner's journal store): whole
    /// for the turns before record `r`'s, up to the fork's events for its turn.
    async fn copy_journals(
        &self,
        thread: &str,
        records: &[ThreadRecord],
        r: usize,
        new_thread: &str,
    ) -> Result<(), TimeTravelError> {
        let Some(journal) = &self.journal else {
            return Ok(());
        };
        let turn = records[r].turn;
        for t in 0..=turn {
            let steps = journal.read_steps(&turn_journal_id(thread, t), 0).await?;
            if steps.is_empty() {
                continue;
            }
            let keep = if t < turn {
                steps.len()
            } else {
                // The fork's record of this turn ends at its step.
                records[..r]
                    .iter()
                    .filter(|x| x.turn == turn)
                    .map(|x| x.events.len())
                    .sum::<usize>()
            };
            let steps: Vec<_> = steps.into_iter().take(keep).collect();
            if !steps.is_empty() {
                journal
                    .append_steps(&turn_journal_id(new_thread, t), 0, steps)
                    .await?;
            }
        }
        Ok(())
    }

    /// Re-runs thread `thread` from step `at_step` in the new thread `new_thread` ("re-run
    /// from here"): [`ThreadHandle::fork`](crate::ThreadHandle::fork) there, then [`TurnRequest::resume`](crate::TurnRequest::resume)
    /// the fork with `answers` (for a step inside a turn, no answers: the turn goes on from
    /// the step; for an interrupt, the answers to it, which may differ from the original's).
    /// A step that ends its turn has nothing to re-run ([`TimeTravelError::NothingToRerun`],
    /// checked before anything is written).
    pub(crate) async fn run_from(
        &self,
        thread: &str,
        at_step: u64,
        new_thread: &str,
        answers: HashMap<String, serde_json::Value>,
    ) -> Result<Turn, TimeTravelError> {
        let records = self.records_of(thread).await?;
        let steps = steps_of(&records);
        if let Some((_, _, Place::Values)) = steps.get(at_step as usize) {
            return Err(TimeTravelError::NothingToRerun {
                thread: thread.to_owned(),
                step: at_step,
            });
        }
        if let Some((_, r, Place::Event(k))) = steps.get(at_step as usize) {
            let record = &records[*r];
            if k + 1 == record.events.len() && matches!(record.end, RecordEnd::Completed { .. }) {
                return Err(TimeTravelError::NothingToRerun {
                    thread: thread.to_owned(),
                    step: at_step,
                });
            }
        }
        self.fork(thread, at_step, new_thread).await?;
        Ok(self
            .turn(super::TurnRequest::resume(new_thread, answers))
            .await?)
    }

    /// Goes on from a fork point (the head of `thread_id`): runs its turn again from the
    /// start, replaying what the fork's records of the turn hold, and records what follows.
    pub(super) async fn continue_fork(
        &self,
        store: Arc<dyn ThreadStore>,
        thread_id: &str,
        head: ThreadHead,
        by: Option<Arc<str>>,
        claim: ThreadClaim,
        lease: &mut Option<ThreadLease>,
    ) -> Result<Turn, ThreadError> {
        let turn = head.last.turn;
        let records = store.read(thread_id, turn..turn + 1).await?;
        let corrupt = |reason: &str| ThreadError::Corrupt {
            id: thread_id.to_owned(),
            seq: head.version.saturating_sub(1),
            reason: reason.to_owned(),
        };
        let first = records
            .first()
            .ok_or_else(|| corrupt("the fork point's turn has no records"))?;
        let RecordStart::Turn { input } = &first.start else {
            return Err(corrupt(
                "the fork point's turn does not start with a user's input",
            ));
        };
        let started_at = first.started_at.clone();
        let start = started_at
            .last()
            .and_then(|name| self.agent.find(name))
            .ok_or_else(|| {
                corrupt("the fork point's turn started at an agent this flow does not have")
            })?;
        let plan = Arc::new(ReplayPlan::new(
            records.iter().flat_map(|r| r.events.iter()),
        ));
        let middleware: crate::agent::Middlewares =
            std::iter::once(Arc::new(Replay::new(&plan)) as Arc<dyn Middleware>)
                .chain(self.middleware.iter().cloned())
                .collect();
        let messages: Vec<MessageRef> = input.iter().cloned().map(Arc::new).collect();
        let history =
            ThreadHistory::new(super::earlier::StoreTurns::shared(&store, thread_id), turn);
        // The turn starts again with the thread's values before it.
        let before = match turn.checked_sub(1) {
            Some(t) => store.read(thread_id, t..turn).await?.pop(),
            None => None,
        };
        let cx = self
            .run_context(
                Runner::session_after(before.as_ref()),
                messages,
                start.name(),
                Some(Arc::new(history)),
            )
            .with_conversation_id(thread_id)
            .with_run_middleware(middleware);
        let agent_input = AgentInput {
            messages: cx.root_messages(),
            streaming: self.streaming,
        };
        let events = Arc::new(start).run(cx.clone(), agent_input);
        let events = plan.hide_replayed(events);
        let checkpoint_id = match &head.last.end {
            RecordEnd::Interrupted { checkpoint_id, .. } => checkpoint_id.clone(),
            RecordEnd::Completed { .. } => unreachable!("a fork point is an interrupt"),
        };
        let recording = Recording {
            runner: self.clone(),
            store,
            thread_id: thread_id.to_owned(),
            turn,
            version: head.version,
            started_at,
            start: RecordStart::Resume {
                checkpoint_id,
                targets: serde_json::Map::new(),
            },
            by,
            restored: 0,
            resumed_checkpoint: None,
            lineage: (crate::ids::unique_token(), 0),
            resume_claim: Mutex::new(None),
            replay: Some(Arc::new(move |events| plan.keep_new(events))),
            replayed: None,
            planned_checkpoint: std::sync::OnceLock::new(),
            gate: None,
        };
        let lease = lease
            .take()
            .expect("the turn's lease is held until it starts");
        Ok(recording.into_turn(cx, events, claim, lease))
    }
}

/// The end of a fork's record at a fork point.
fn fork_point_end(new_thread: &str, turn: u64, step: u64) -> RecordEnd {
    // The info names no thread: a service may show it (a store key is not for callers).
    let mut info = InterruptInfo::new(serde_json::json!({ "fork_point": { "step": step } }));
    info.id = FORK_POINT.to_owned();
    RecordEnd::Interrupted {
        checkpoint_id: format!("{new_thread}.fork-{turn}"),
        interrupts: vec![info],
    }
}

/// What a fork point's continuation replays: per run path, the model replies and tool results
/// the fork's records hold, and how many recorded events each path replays.
struct ReplayPlan {
    /// Run path -> how many of its recorded events are replayed.
    counts: HashMap<String, usize>,
    /// Run path -> the model replies to give, in order.
    replies: Mutex<HashMap<String, VecDeque<Message>>>,
    /// (run path, call id) -> the tool result to give.
    results: Mutex<HashMap<(String, String), String>>,
}

impl ReplayPlan {
    fn new<'a>(events: impl Iterator<Item = &'a RecordedEvent>) -> ReplayPlan {
        let mut counts: HashMap<String, usize> = HashMap::new();
        let mut replies: HashMap<String, VecDeque<Message>> = HashMap::new();
        let mut results = HashMap::new();
        for event in events {
            let path = event.run_path.to_string();
            *counts.entry(path.clone()).or_default() += 1;
            let Some(message) = &event.message else {
                continue;
            };
            match message.role {
                Role::Assistant if event.action.is_none() || !message.tool_calls.is_empty() => {
                    replies.entry(path).or_default().push_back(message.clone());
                }
                // A built-in tool (transfer, exit) carries its action: it runs again.
                Role::Tool if event.action.is_none() => {
                    if let Some(call) = &message.tool_call_id {
                        results.insert((path, call.clone()), message.content.clone());
                    }
                }
                _ => {}
            }
        }
        ReplayPlan {
            counts,
            replies: Mutex::new(replies),
            results: Mutex::new(results),
        }
    }

    /// `events` without the replayed ones (per run path, its first `counts` events).
    fn keep_new(&self, events: Vec<RecordedEvent>) -> Vec<RecordedEvent> {
        let mut seen: HashMap<String, usize> = HashMap::new();
        events
            .into_iter()
            .filter(|e| {
                let path = e.run_path.to_string();
                let n = seen.entry(path.clone()).or_default();
                *n += 1;
                *n > self.counts.get(&path).copied().unwrap_or(0)
            })
            .collect()
    }

    /// The run's events without the replayed ones (the caller saw them in the original).
    fn hide_replayed(&self, events: EventStream) -> EventStream {
        let mut left = self.counts.clone();
        EventStream::new(events.filter(move |event: &AgentEvent| {
            let hide = event.recorded
                && !event.is_interrupt()
                && event.error.is_none()
                && match left.get_mut(&event.run_path().to_string()) {
                    Some(n) if *n > 0 => {
                        *n -= 1;
                        true
                    }
                    _ => false,
                };
            futures::future::ready(!hide)
        }))
    }
}

/// The middleware that answers a replayed turn's model calls and tool calls from its plan.
struct Replay {
    plan: Arc<ReplayPlan>,
}

impl Replay {
    fn new(plan: &Arc<ReplayPlan>) -> Self {
        Replay {
            plan: Arc::clone(plan),
        }
    }
}

#[async_trait]
impl Middleware for Replay {
    async fn before_model(
        &self,
        cx: &HookContext,
        _request: &mut ChatRequest,
    ) -> Result<Option<Message>, HookError> {
        let path = cx.run_path().to_string();
        let mut replies = self.plan.replies.lock().expect("replay lock");
        Ok(replies.get_mut(&path).and_then(VecDeque::pop_front))
    }

    async fn before_tool(
        &self,
        cx: &HookContext,
        call: &mut ToolCall,
    ) -> Result<Option<String>, HookError> {
        let key = (cx.run_path().to_string(), call.id.clone());
        Ok(self.plan.results.lock().expect("replay lock").remove(&key))
    }
}
