//! Runs as objects: [`RunHandle`], a turn of a thread running as a task the runner owns, not
//! its reader. Its events are kept (bounded, trimmed a while after it ends) as [`RunEvent`]s
//! with ids, so any number of readers can attach from the start or from an event id and see
//! each event once, in order; [`RunHandle::wait`] gives the [`RunOutcome`] without reading
//! anything; [`RunHandle::cancel`] stops it as a [`CancelMode`] says.
//!
//! The registry of a runner's runs ([`RunRegistry`]) lives in this process: a run's events are
//! held in memory while it runs and for the runner's retention after it ends.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use serde::{Deserialize, Serialize};
use tokio::sync::{watch, Notify};

use crate::agent::cancel::{CancelMode, CancelSignal};
use crate::agent::SteerQueue;
use crate::event::json::{ErrorJson, EventJson};
use crate::event::{Action, AgentError, AgentEvent, InterruptInfo};
use crate::message::{Message, ToolCall};
use crate::run_path::RunPath;
use crate::store::ThreadError;

/// A run's status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Waiting for its turn (enqueued behind another run of its thread).
    Pending,
    /// Running.
    Running,
    /// Ended and recorded.
    Success,
    /// Stopped for outside input (an approval): resume its thread.
    Interrupted,
    /// Cancelled (see [`RunOutcome::Cancelled`]).
    Cancelled,
    /// Failed; nothing of it was recorded.
    Error,
}

impl RunStatus {
    /// Whether the run has ended.
    pub fn is_final(self) -> bool {
        !matches!(self, RunStatus::Pending | RunStatus::Running)
    }

    /// The status's name (`pending`, `running`, `success`, `interrupted`, `cancelled`, `error`).
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Pending => "pending",
            RunStatus::Running => "running",
            RunStatus::Success => "success",
            RunStatus::Interrupted => "interrupted",
            RunStatus::Cancelled => "cancelled",
            RunStatus::Error => "error",
        }
    }
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum RunOutcome {
    /// The turn ran to its end and was recorded.
    Success {
        /// The agent that answered last.
        answered_by: Arc<str>,
        /// The turn's answer (see [`Turn::final_output`](crate::Turn::final_output)).
        answer: Option<Message>,
    },
    /// The turn stopped for outside input; it waits in its thread for a resume.
    Interrupted {
        /// The interrupts it waits on (their saved state left out).
        interrupts: Vec<InterruptInfo>,
    },
    /// The run was cancelled. At a safe point (`after_model`, `after_tools`) the turn was
    /// recorded so far and a checkpoint saved (`resumable`): [`TurnRequest::again`](crate::TurnRequest::again) continues
    /// it where it stopped, and a new message may follow it too. Stopped immediately, nothing
    /// of it was recorded; resuming runs its message again from the start. Cancelled before it
    /// started (`before_start`, whatever the mode: it waited behind its thread's earlier runs,
    /// or had not begun), nothing of it ran; resuming runs its message from the start.
    Cancelled {
        /// The mode it was cancelled with (`immediate` added if the timeout escalated).
        mode: CancelMode,
        /// Whether it stopped at a safe point: with a checkpoint, or before it started
        /// (`before_start`); else immediately, where it was.
        at_safe_point: bool,
        /// Whether the cancel reached it before it started: nothing of it ran or was
        /// recorded, and it has no checkpoint.
        #[serde(default)]
        before_start: bool,
    },
    /// The run failed and recorded nothing.
    Error {
        /// What went wrong.
        message: String,
    },
}

impl RunOutcome {
    /// The outcome a thread's `record` says its run ended with: [`Success`](RunOutcome::Success)
    /// for a completed turn (with its answer, as [`Turn::final_output`](crate::Turn::final_output)
    /// gives it), [`Interrupted`](RunOutcome::Interrupted) for one that waits; `None` for a
    /// record of the thread's values. What a service answers for a run whose process ended,
    /// found in its thread by [`ThreadRecord::run_id`](crate::store::ThreadRecord::run_id).
    pub fn of_record(record: &crate::store::ThreadRecord) -> Option<RunOutcome> {
        if matches!(record.start, crate::store::RecordStart::Values { .. }) {
            return None;
        }
        Some(match &record.end {
            crate::store::RecordEnd::Completed { answered_by } => RunOutcome::Success {
                answered_by: Arc::clone(answered_by),
                answer: super::answer::answer_of(&record.events),
            },
            crate::store::RecordEnd::Interrupted { interrupts, .. } => RunOutcome::Interrupted {
                interrupts: interrupts.clone(),
            },
        })
    }

    /// The status this outcome gives its run.
    pub fn status(&self) -> RunStatus {
        match self {
            RunOutcome::Success { .. } => RunStatus::Success,
            RunOutcome::Interrupted { .. } => RunStatus::Interrupted,
            RunOutcome::Cancelled { .. } => RunStatus::Cancelled,
            RunOutcome::Error { .. } => RunStatus::Error,
        }
    }
}

/// One kept event of a run, with its id (from 1, in order, never reused in the run).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunEvent {
    /// Its id: pass it to [`RunHandle::attach`] to read what comes after it.
    pub id: u64,
    /// What happened.
    pub item: RunItem,
    /// The typed error behind the item's error text (not serialised).
    #[serde(skip)]
    cause: Cause,
}

impl RunEvent {
    /// The typed error behind this event: the [`AgentError`] of an [`RunItem::Event`] whose
    /// `error` is set, or what a [`RunOutcome::Error`] ended on. A transport that shows runs to
    /// people maps it to its own public form instead of sending the error's text (which may
    /// name internal URLs or store keys). `None` for an event read back from JSON.
    pub fn failure(&self) -> Option<&RunFailure> {
        self.cause.0.as_ref()
    }
}

/// The typed error behind a run's event or failed outcome (see [`RunEvent::failure`] and
/// [`RunHandle::failure`]).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum RunFailure {
    /// An agent's error (an event's `error`, or the error a failed turn ended on).
    Agent(AgentError),
    /// The turn could not be run or recorded (the thread's store, its lease, ...).
    Thread(ThreadError),
}

impl fmt::Display for RunFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunFailure::Agent(e) => e.fmt(f),
            RunFailure::Thread(e) => e.fmt(f),
        }
    }
}

impl From<ThreadError> for RunFailure {
    /// A turn that failed on an agent's error is that error.
    fn from(error: ThreadError) -> Self {
        match error {
            ThreadError::TurnFailed { error, .. } => RunFailure::Agent(error),
            other => RunFailure::Thread(other),
        }
    }
}

/// A [`RunFailure`] kept beside an event; equal to any other (events compare by what they say).
#[derive(Debug, Clone, Default)]
struct Cause(Option<RunFailure>);

impl PartialEq for Cause {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

/// What a [`RunEvent`] says. The outward form of a run: no saved state, no store keys.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum RunItem {
    /// First: the turn started (`turn` counts from 0; `started_at` is its first run path).
    Started {
        /// The thread.
        thread_id: String,
        /// The turn's number in the thread.
        turn: u64,
        /// The run path it started at.
        started_at: RunPath,
        /// Whether it continues an interrupted (or cancelled) turn.
        resumed: bool,
    },
    /// A piece of a streamed message, as it came.
    Chunk {
        /// The agent streaming.
        agent_name: Arc<str>,
        /// Its run path.
        run_path: RunPath,
        /// The chunk's text.
        content: String,
        /// Pieces of tool calls in this chunk.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall>,
    },
    /// An event of the run, its streamed message whole (after its chunks).
    Event(EventJson),
    /// Last: how the run ended.
    Ended(RunOutcome),
}

/// Why a reader could not attach to a run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AttachError {
    /// The event id was never given by this run.
    #[error("run '{run}' has no event {id} (its last event so far is {last}); attach from an id it gave")]
    UnknownEvent {
        /// The run.
        run: String,
        /// The id asked for.
        id: u64,
        /// Its last event's id (0: none yet).
        last: u64,
    },
    /// The events after that id were trimmed (too many kept, or the run ended long ago).
    #[error(
        "the events of run '{run}' after event {id} are no longer kept (kept: from {first}); \
         read the thread's record instead"
    )]
    Expired {
        /// The run.
        run: String,
        /// The id asked for.
        id: u64,
        /// The first id still kept (0: none).
        first: u64,
    },
}

/// Why a steering message could not be sent to a run ([`RunHandle::steer`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SteerError {
    /// The run has ended: the message was not queued.
    #[error(
        "run '{run}' has already ended ({status}); it takes no steering message: start a new \
         turn of its thread with the message instead"
    )]
    Ended {
        /// The run.
        run: String,
        /// Its status.
        status: &'static str,
    },
}

/// Why a run could not be cancelled.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CancelError {
    /// It has ended already: nothing was changed.
    #[error("run '{run}' has already ended ({status}); there is nothing to cancel")]
    Ended {
        /// The run.
        run: String,
        /// Its status.
        status: &'static str,
    },
    /// The mode names no stop point.
    #[error("cancel mode '{mode}' names no stop point: use immediate, after_model or after_tools")]
    EmptyMode {
        /// The mode given.
        mode: String,
    },
}

/// A summary of a run (what listing a thread's runs gives).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunInfo {
    /// The run's id.
    pub run_id: String,
    /// Its thread.
    pub thread_id: String,
    /// Its status now.
    pub status: RunStatus,
    /// When it was created (milliseconds since the Unix epoch).
    pub created_at_ms: u64,
    /// When it ended, if it has.
    pub ended_at_ms: Option<u64>,
    /// How it ended, if it has.
    pub outcome: Option<RunOutcome>,
}

/// What started a run: its message, or the resume of its thread.
#[derive(Debug, Clone)]
pub(crate) enum RunInput {
    /// A new turn with this message.
    Message(Message),
    /// The continuation of the thread's interrupted (or cancelled) turn.
    Resume(HashMap<String, serde_json::Value>),
}

struct Log {
    events: VecDeque<RunEvent>,
    next_id: u64,
    status: RunStatus,
    outcome: Option<RunOutcome>,
    failure: Option<RunFailure>,
    ended_at: Option<Instant>,
    ended_at_ms: Option<u64>,
    /// A cancel reached the run while it was pending: it never starts.
    cancelled_before_start: bool,
    /// The steering messages the run ended without taking in.
    undelivered: Vec<Message>,
}

pub(crate) struct RunState {
    id: String,
    pub(crate) thread_id: String,
    pub(crate) input: RunInput,
    created_at_ms: u64,
    max_events: usize,
    log: Mutex<Log>,
    /// The id of the last event pushed; attached readers wait on it.
    last: watch::Sender<u64>,
    pub(crate) cancel: CancelSignal,
    /// The messages sent to the run while it runs ([`RunHandle::steer`]).
    pub(crate) steer: SteerQueue,
    /// Stops the run's task where it is (immediate cancel, or an escalated timeout).
    pub(crate) kill: Notify,
    /// Whether its turn is a dead worker's, recovered from its journal.
    pub(crate) recovered: std::sync::atomic::AtomicBool,
}

/// A run: a turn of a thread that runs as a task of its runner. Cheap to clone; dropping every
/// handle does not stop the run.
#[derive(Clone)]
pub struct RunHandle {
    pub(crate) state: Arc<RunState>,
}

impl fmt::Debug for RunHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RunHandle")
            .field("id", &self.state.id)
            .field("thread_id", &self.state.thread_id)
            .field("status", &self.status())
            .finish()
    }
}

impl RunHandle {
    pub(crate) fn new(thread_id: &str, input: RunInput, max_events: usize) -> Self {
        Self::with_id(crate::ids::unique_token(), thread_id, input, max_events)
    }

    /// A run with the id `id` (a queued run keeps the id it was queued under).
    pub(crate) fn with_id(id: String, thread_id: &str, input: RunInput, max_events: usize) -> Self {
        let (last, _) = watch::channel(0);
        RunHandle {
            state: Arc::new(RunState {
                id,
                thread_id: thread_id.to_owned(),
                input,
                created_at_ms: crate::store::now_ms(),
                max_events: max_events.max(1),
                log: Mutex::new(Log {
                    events: VecDeque::new(),
                    next_id: 1,
                    status: RunStatus::Pending,
                    outcome: None,
                    failure: None,
                    ended_at: None,
                    ended_at_ms: None,
                    cancelled_before_start: false,
                    undelivered: Vec::new(),
                }),
                last,
                cancel: CancelSignal::new(),
                steer: SteerQueue::new(),
                kill: Notify::new(),
                recovered: std::sync::atomic::AtomicBool::new(false),
            }),
        }
    }

    /// The run's id (unique, unguessable).
    pub fn id(&self) -> &str {
        &self.state.id
    }

    /// The thread it is a turn of.
    pub fn thread_id(&self) -> &str {
        &self.state.thread_id
    }

    /// Its status now.
    pub fn status(&self) -> RunStatus {
        self.lock().status
    }

    /// Whether its turn is one whose worker died, recovered from its journal (see
    /// [`Turn::recovered`](crate::Turn::recovered)); known once the run has started.
    pub fn recovered(&self) -> bool {
        self.state
            .recovered
            .load(std::sync::atomic::Ordering::Acquire)
    }

    /// How it ended; `None` while it runs.
    pub fn outcome(&self) -> Option<RunOutcome> {
        self.lock().outcome.clone()
    }

    /// The typed error a failed run ([`RunOutcome::Error`]) ended on, when there is one (see
    /// [`RunEvent::failure`]).
    pub fn failure(&self) -> Option<RunFailure> {
        self.lock().failure.clone()
    }

    /// Its summary.
    pub fn info(&self) -> RunInfo {
        let log = self.lock();
        RunInfo {
            run_id: self.state.id.clone(),
            thread_id: self.state.thread_id.clone(),
            status: log.status,
            created_at_ms: self.state.created_at_ms,
            ended_at_ms: log.ended_at_ms,
            outcome: log.outcome.clone(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Log> {
        self.state.log.lock().expect("run log lock")
    }

    /// Waits for the run to end and gives its outcome (reads no event).
    pub async fn wait(&self) -> RunOutcome {
        let mut last = self.state.last.subscribe();
        loop {
            if let Some(outcome) = self.outcome() {
                return outcome;
            }
            if last.changed().await.is_err() {
                // The sender lives in the state this handle holds: unreachable.
                return self.outcome().unwrap_or(RunOutcome::Error {
                    message: "the run's task went away".into(),
                });
            }
        }
    }

    /// The run's events from after event `after` (`None`: from the start), as they come: the
    /// ones kept first, then the new ones, to the run's end. An error if `after` was never
    /// given by this run or the events after it are no longer kept.
    pub fn attach(
        &self,
        after: Option<u64>,
    ) -> Result<futures::stream::BoxStream<'static, RunEvent>, AttachError> {
        let after = after.unwrap_or(0);
        {
            let log = self.lock();
            let last = log.next_id - 1;
            if after > last {
                return Err(AttachError::UnknownEvent {
                    run: self.state.id.clone(),
                    id: after,
                    last,
                });
            }
            let first = log.events.front().map_or(log.next_id, |e| e.id);
            if after + 1 < first {
                return Err(AttachError::Expired {
                    run: self.state.id.clone(),
                    id: after,
                    first: log.events.front().map_or(0, |e| e.id),
                });
            }
        }
        let handle = self.clone();
        let watch = self.state.last.subscribe();
        Ok(futures::stream::unfold(
            (handle, watch, after, false),
            |(handle, mut watch, mut at, done)| async move {
                if done {
                    return None;
                }
                loop {
                    let next = {
                        let log = handle.lock();
                        let first = log.events.front().map_or(log.next_id, |e| e.id);
                        if at + 1 < first {
                            // Fell behind what is kept: stop (a reader reattaches or reads the
                            // thread's record).
                            return None;
                        }
                        let next = log.events.get((at + 1 - first) as usize).cloned();
                        if next.is_none() && log.outcome.is_some() {
                            // Attached after the last event of an ended run: nothing more.
                            return None;
                        }
                        next
                    };
                    if let Some(event) = next {
                        at = event.id;
                        let ended = matches!(event.item, RunItem::Ended(_));
                        return Some((event, (handle, watch, at, ended)));
                    }
                    if watch.changed().await.is_err() {
                        return None;
                    }
                }
            },
        )
        .boxed())
    }

    /// Sends `message` to the running turn, which takes it in at its next safe point instead
    /// of waiting for the turn to end or cancelling it: the LLM agent running takes it as a
    /// user message after the current model call's tool calls have run, before it asks the
    /// model again (after a final answer, it asks the model once more). The message is
    /// recorded in the thread at that place. Messages are taken in the order they were sent,
    /// each once; a run still waiting to start takes them once it runs.
    ///
    /// An error if the run has ended ([`SteerError::Ended`]). A run that ends before any LLM
    /// agent reaches a safe point does not take them: when it stopped for an interrupt (its
    /// checkpoint), the run that continues its turn in this runner
    /// ([`TurnRequest::resume`](crate::TurnRequest::resume)) takes them in; otherwise (a code
    /// agent's turn) [`undelivered_steers`](RunHandle::undelivered_steers) gives them back.
    pub fn steer(&self, message: Message) -> Result<(), SteerError> {
        let log = self.lock();
        let ended = || SteerError::Ended {
            run: self.state.id.clone(),
            status: log.status.as_str(),
        };
        if log.status.is_final() {
            return Err(ended());
        }
        self.state.steer.push(message).map_err(|_| ended())
    }

    /// Takes the steering messages the run ended without taking in (the continuation of its
    /// turn takes them in: each is delivered once).
    pub(crate) fn take_undelivered(&self) -> Vec<Message> {
        std::mem::take(&mut self.lock().undelivered)
    }

    /// The steering messages the run ended without taking in (see [`steer`](RunHandle::steer)),
    /// in the order they were sent; empty while it runs, and once the continuation of its
    /// turn took them.
    pub fn undelivered_steers(&self) -> Vec<Message> {
        self.lock().undelivered.clone()
    }

    /// Asks the run to stop as `mode` says; with `timeout`, a run that has not stopped by then
    /// is stopped immediately. An error if it has ended already (nothing changes) or the mode
    /// names no stop point.
    pub fn cancel(&self, mode: CancelMode, timeout: Option<Duration>) -> Result<(), CancelError> {
        if mode.is_empty() {
            return Err(CancelError::EmptyMode {
                mode: mode.to_string(),
            });
        }
        let status = {
            // Under the log's lock, as the run's start is (`start_running`): a cancel reaches
            // a run either before it starts (then it never does) or while it runs.
            let mut log = self.lock();
            if log.status.is_final() {
                return Err(CancelError::Ended {
                    run: self.state.id.clone(),
                    status: log.status.as_str(),
                });
            }
            self.state.cancel.request(mode);
            if log.status == RunStatus::Pending {
                log.cancelled_before_start = true;
            }
            log.status
        };
        // A run that has not started has nothing to stop: any mode ends it now, before it
        // starts (a run waiting for its thread's earlier runs is woken for it).
        if mode.is_immediate() || status == RunStatus::Pending {
            self.state.kill.notify_one();
        } else if let Some(timeout) = timeout {
            let state = Arc::clone(&self.state);
            if let Ok(rt) = tokio::runtime::Handle::try_current() {
                rt.spawn(async move {
                    tokio::time::sleep(timeout).await;
                    state.kill.notify_one();
                });
            }
        }
        Ok(())
    }

    /// Keeps `item` as the run's next event (nothing once the run has ended).
    pub(crate) fn push(&self, item: RunItem) {
        self.push_with(item, None)
    }

    /// Keeps `item` with the typed error behind it (see [`RunEvent::failure`]).
    pub(crate) fn push_with(&self, item: RunItem, cause: Option<RunFailure>) {
        let id = {
            let mut log = self.lock();
            if log.outcome.is_some() {
                return;
            }
            let id = log.next_id;
            log.next_id += 1;
            if let RunItem::Ended(outcome) = &item {
                log.status = outcome.status();
                log.outcome = Some(outcome.clone());
                log.ended_at = Some(Instant::now());
                log.ended_at_ms = Some(crate::store::now_ms());
                log.failure = cause.clone();
                // Under the log's lock, as a steer's check is: a steer is either queued
                // before this (and taken in, or kept here as undelivered) or refused.
                log.undelivered = self.state.steer.close();
            }
            log.events.push_back(RunEvent {
                id,
                item,
                cause: Cause(cause),
            });
            while log.events.len() > self.state.max_events {
                log.events.pop_front();
            }
            id
        };
        self.state.last.send_replace(id);
    }

    /// Marks the run running, unless a cancel reached it while it was pending: then `false`,
    /// and it must not start (see [`cancelled_before_start`](Self::cancelled_before_start)).
    pub(crate) fn start_running(&self) -> bool {
        let mut log = self.lock();
        if log.cancelled_before_start {
            return false;
        }
        if log.status == RunStatus::Pending {
            log.status = RunStatus::Running;
        }
        true
    }

    /// The outcome of a run a cancel reached before it started, if one did: cancelled with the
    /// mode asked, nothing of it run.
    pub(crate) fn cancelled_before_start(&self) -> Option<RunOutcome> {
        let before = self.lock().cancelled_before_start;
        before.then(|| RunOutcome::Cancelled {
            mode: self.state.cancel.requested().unwrap_or_default(),
            at_safe_point: true,
            before_start: true,
        })
    }

    /// Drops the kept events of a run that ended more than `retention` ago; whether it did.
    pub(crate) fn trim(&self, retention: Duration) -> bool {
        let mut log = self.lock();
        match log.ended_at {
            Some(at) if at.elapsed() >= retention && !log.events.is_empty() => {
                log.events.clear();
                true
            }
            _ => false,
        }
    }

    /// When the run ended, if it has.
    pub(crate) fn ended_at(&self) -> Option<Instant> {
        self.lock().ended_at
    }
}

/// The interrupt without the saved state of its agent or of any frame of its address.
pub(crate) fn without_state(mut info: InterruptInfo) -> InterruptInfo {
    info.state = None;
    for frame in &mut info.address {
        frame.state = None;
    }
    info
}

/// The outward JSON of an event: its message whole, an interrupt's saved state left out.
pub(crate) fn outward(
    event: &AgentEvent,
    message: Option<Message>,
    custom: Option<serde_json::Value>,
    streamed: bool,
) -> EventJson {
    let action = event.action.clone().map(|a| match a {
        Action::Interrupted(info) => Action::Interrupted(Box::new(without_state(*info))),
        other => other,
    });
    EventJson {
        agent_name: event.agent_name().into(),
        run_path: event.run_path().clone(),
        message,
        streamed,
        custom,
        action,
        error: event.error.as_ref().map(ErrorJson::from),
    }
}

/// How long a runner keeps an ended run's events, and how many it keeps per run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunRetention {
    /// How long after a run ends its events are kept (default 10 minutes).
    pub keep_events_for: Duration,
    /// The most events kept per run; older ones are dropped first (default 10,000).
    pub max_events: usize,
    /// The most ended runs remembered; the oldest are forgotten first (default 1,000).
    pub max_ended_runs: usize,
}

impl Default for RunRetention {
    fn default() -> Self {
        RunRetention {
            keep_events_for: Duration::from_secs(600),
            max_events: 10_000,
            max_ended_runs: 1_000,
        }
    }
}

/// The runs of a runner (shared by its clones): by id, and by thread in the order they were
/// started.
#[derive(Default)]
pub(crate) struct RunRegistry {
    inner: Mutex<Registry>,
}

#[derive(Default)]
struct Registry {
    retention: RunRetention,
    by_id: HashMap<String, RunHandle>,
    by_thread: HashMap<String, Vec<RunHandle>>,
}

impl RunRegistry {
    pub(crate) fn with_retention(retention: RunRetention) -> Self {
        RunRegistry {
            inner: Mutex::new(Registry {
                retention,
                ..Registry::default()
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Registry> {
        self.inner.lock().expect("run registry lock")
    }

    pub(crate) fn retention(&self) -> RunRetention {
        self.lock().retention
    }

    /// Adds a run; gives, in the same step, the runs of its thread that had not ended yet
    /// when it was added, oldest first: the ones it must wait for. (Read apart from the
    /// registration, the list could hold a run registered later, which waits for this one:
    /// two runs each waiting for the other, forever.)
    pub(crate) fn add(&self, run: &RunHandle) -> Vec<RunHandle> {
        let mut reg = self.lock();
        reg.sweep();
        let active = reg
            .by_thread
            .get(run.thread_id())
            .map(|runs| {
                runs.iter()
                    .filter(|r| !r.status().is_final())
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        reg.by_id.insert(run.id().to_owned(), run.clone());
        reg.by_thread
            .entry(run.thread_id().to_owned())
            .or_default()
            .push(run.clone());
        active
    }

    /// The runs of `thread_id` that have not ended, oldest first.
    pub(crate) fn active(&self, thread_id: &str) -> Vec<RunHandle> {
        self.lock()
            .by_thread
            .get(thread_id)
            .map(|runs| {
                runs.iter()
                    .filter(|r| !r.status().is_final())
                    .cloned()
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Forgets a run (one that could not start).
    pub(crate) fn remove(&self, run: &RunHandle) {
        let mut reg = self.lock();
        reg.by_id.remove(run.id());
        if let Some(runs) = reg.by_thread.get_mut(run.thread_id()) {
            runs.retain(|r| r.id() != run.id());
        }
    }

    /// Forgets the ended runs of `thread_id` (its thread was deleted: their events, its
    /// messages among them, go with it); a run not ended stays.
    pub(crate) fn forget_ended(&self, thread_id: &str) {
        let mut reg = self.lock();
        let Some(runs) = reg.by_thread.remove(thread_id) else {
            return;
        };
        let (ended, going): (Vec<_>, Vec<_>) =
            runs.into_iter().partition(|r| r.status().is_final());
        for run in &ended {
            reg.by_id.remove(run.id());
        }
        if !going.is_empty() {
            reg.by_thread.insert(thread_id.to_owned(), going);
        }
    }

    pub(crate) fn get(&self, run_id: &str) -> Option<RunHandle> {
        let mut reg = self.lock();
        reg.sweep();
        reg.by_id.get(run_id).cloned()
    }

    pub(crate) fn of_thread(&self, thread_id: &str) -> Vec<RunHandle> {
        let mut reg = self.lock();
        reg.sweep();
        reg.by_thread.get(thread_id).cloned().unwrap_or_default()
    }
}

impl Registry {
    /// Trims the events of runs past their retention and forgets the oldest ended runs over
    /// the bound.
    fn sweep(&mut self) {
        let keep = self.retention.keep_events_for;
        let mut ended: Vec<(Instant, String)> = Vec::new();
        for run in self.by_id.values() {
            run.trim(keep);
            if let Some(at) = run.ended_at() {
                ended.push((at, run.id().to_owned()));
            }
        }
        if ended.len() <= self.retention.max_ended_runs {
            return;
        }
        ended.sort();
        let excess = ended.len() - self.retention.max_ended_runs;
        for (_, id) in ended.into_iter().take(excess) {
            if let Some(run) = self.by_id.remove(&id) {
                if let Some(runs) = self.by_thread.get_mut(run.thread_id()) {
                    runs.retain(|r| r.id() != id);
                    if runs.is_empty() {
                        self.by_thread.remove(run.thread_id());
                    }
                }
            }
        }
    }
}
