//! [`ThreadWorkflow`]: a thread as a workflow (one workflow id per thread), each turn a step
//! of it, the orchestration running inside it and every effect a Temporal command.
//!
//! - **Double texting.** A turn asked while another runs or waits follows its
//!   [`TurnRequest::if_busy`]: `reject` is refused by the update's validator (it never enters
//!   history), `enqueue` (and `steer`, as a streamed turn of the in-process runner) runs after
//!   the turns before it, `interrupt` stops the running turn at its next safe point (after its
//!   model call or its tool calls, recursively) and keeps what it finished, `rollback` stops it
//!   where it is and keeps nothing of it.
//! - **Cancellation.** A workflow cancel stops the running turn as [`ThreadStart::cancel_mode`]
//!   says (at the engine's safe points by default; activities under way finish, as the turn's
//!   own cancellation token is not the workflow's), then the workflow ends as cancelled.
//! - **Stopping one turn.** The signal [`ThreadWorkflow::cancel_turn`] stops one turn (by its
//!   key or number) as its [`CancelTurn::mode`] says, and the thread goes on: a server cancels
//!   the turn of a client that went away this way. A turn not yet running never runs.
//! - **Resuming a stopped turn.** A turn a cancel stopped at a safe point (`interrupt` double
//!   texting, [`ThreadWorkflow::cancel_turn`] in a safe-point mode) keeps what it finished and
//!   its place: a turn asked with [`TurnRequest::resume`] goes on from there, its paid calls not
//!   run again, its events added to that turn; a new message instead leaves it as it stopped.
//! - **Continue-as-new.** Between turns, once the history holds
//!   [`ThreadStart::continue_as_new_after`] events (or the server suggests it), the workflow
//!   continues as new with the thread's conversation ([`CarriedTurn`]s) in its input, so a long
//!   thread's history stays bounded.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use agentweave_core::event::InterruptInfo;
use agentweave_core::{CancelMode, CancelSignal, EventStream, Message};
use agentweave_runtime::{AnswerRule, Caller, DoubleText};
use futures::StreamExt;
use serde::{Deserialize, Serialize};
use temporalio_client::RetryPolicy;
use temporalio_common::protos::temporal::api::failure::v1::failure::FailureInfo;
use temporalio_macros::{workflow, workflow_methods};
use temporalio_sdk::{
    ActivityExecutionError, ActivityOptions, ApplicationFailure, ContinueAsNewOptions,
    LocalActivityOptions, SyncWorkflowContext, WorkflowContext, WorkflowContextView,
    WorkflowResult, WorkflowTermination,
};
use temporalio_workflow::{WaitConditionOptions, WorkflowCancellationToken};

use super::activities::AgentflowActivities;
use super::held::Held;
use super::worker::worker_flows;
use crate::effects::{Effect, Effects, ModelCall, Outcome};
use crate::live::{LiveSink, LiveTurn, ModelMark, Progress, LAST_TURN};
use crate::parts::{LoadPart, StorePart};
use crate::policy::{self, Retry};
use crate::turn::{drive, resume_turn, start_turn, CarriedTurn, Started, StoppedTurn, ThreadLog};

fn lock(live: &Mutex<LiveTurn>) -> std::sync::MutexGuard<'_, LiveTurn> {
    live.lock().unwrap_or_else(|e| e.into_inner())
}

/// How the turn update's validator begins its refusal of a resume with nothing to resume (the
/// client tells it from a busy thread's by it).
pub(crate) const NOTHING_TO_RESUME: &str = "no turn of the thread is stopped at a safe point";

/// The grant answering a question (an approval) needs.
pub const APPROVE_GRANT: &str = "approve";

/// How long storing one part of a long conversation may take, per attempt.
const STORE_TIMEOUT: Duration = Duration::from_secs(30);

/// How long one model call may take, per attempt.
const MODEL_TIMEOUT: Duration = Duration::from_secs(120);
/// How long one tool call may take, per attempt, unless the thread says otherwise
/// ([`ThreadStart::tool_timeout_ms`]).
const TOOL_TIMEOUT: Duration = Duration::from_secs(10);

/// What a thread workflow is started with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThreadStart {
    /// The flow, by its name in the workers' [`worker_flows`](super::worker_flows).
    pub flow: String,
    /// The thread's id (the workflow id is the caller's choice; one per thread).
    pub thread: String,
    /// How long one attempt of a tool call may take, in milliseconds (default 10 s): a worker
    /// that dies during a call is noticed after it, and an idempotent tool's call is retried.
    #[serde(default)]
    pub tool_timeout_ms: Option<u64>,
    /// How long one attempt of a model call may take, in milliseconds (default 120 s): a
    /// worker that dies during a call is noticed after it, and the call runs again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_timeout_ms: Option<u64>,
    /// How a workflow cancel stops the running turn (default: at its next safe point, after its
    /// model call or its tool calls, recursively; `immediate` drops it where it is).
    #[serde(default)]
    pub cancel_mode: Option<CancelMode>,
    /// Continue as new between turns once the history holds this many events (default: when
    /// the server suggests it, from about 4,000 events or 4 MB of history).
    #[serde(default)]
    pub continue_as_new_after: Option<u32>,
    /// Which calls run as local activities (in the worker that runs the workflow task, with no
    /// round trip through the task queue); default [`LocalSteps::None`].
    #[serde(default)]
    pub local_activities: LocalSteps,
    /// End the workflow after its first turn (a one-shot thread:
    /// [`Thread::run_once`](super::Thread::run_once) starts it and runs the turn in one request).
    #[serde(default)]
    pub single_turn: bool,
    /// What an earlier run of the thread's workflow carried into this one (continue-as-new).
    #[serde(default)]
    pub carried: Option<Carried>,
}

impl ThreadStart {
    /// Thread `thread` of flow `flow`, with the defaults.
    pub fn new(flow: impl Into<String>, thread: impl Into<String>) -> Self {
        ThreadStart {
            flow: flow.into(),
            thread: thread.into(),
            tool_timeout_ms: None,
            model_timeout_ms: None,
            cancel_mode: None,
            continue_as_new_after: None,
            local_activities: LocalSteps::None,
            single_turn: false,
            carried: None,
        }
    }

    /// The mode a workflow cancel stops the running turn with.
    pub fn cancel_mode(&self) -> CancelMode {
        self.cancel_mode.unwrap_or_else(interrupt_mode)
    }
}

/// Which of a thread's calls may run as local activities: in the worker that runs the
/// workflow task, recorded as a marker in history, with no round trip through the task queue
/// (under a millisecond a call on the dev server, where a remote activity takes tens).
///
/// A local activity whose worker dies runs again from the start on the next worker (it has no
/// server-side timeout or heartbeat), and its retries hold the workflow task: so only calls that
/// may run twice and end in seconds belong there. Model calls may (a reply asked twice costs
/// tokens, not correctness); idempotent tools may (they deduplicate on their key, or have no
/// effects); a non-idempotent tool never does, whatever this says: it stays a remote activity,
/// at most once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LocalSteps {
    /// Every call is a remote activity.
    #[default]
    None,
    /// Model calls are local activities.
    Models,
    /// Model calls and idempotent tool calls are local activities.
    ModelsAndIdempotentTools,
}

impl LocalSteps {
    fn model(self) -> bool {
        self != LocalSteps::None
    }

    fn tool(self, idempotent: bool) -> bool {
        idempotent && self == LocalSteps::ModelsAndIdempotentTools
    }
}

/// The thread as one run of its workflow hands it to the next (continue-as-new).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Carried {
    /// The keys of the thread's first turns, stored by parts in the workers' blob store when
    /// its conversation was too long to carry whole (see [`crate::parts`]); read back, in
    /// order, before [`turns`](Self::turns).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub earlier_turns: Vec<String>,
    /// The thread's turns so far (its conversation), after the stored ones.
    pub turns: Vec<CarriedTurn>,
    /// The number the next turn gets.
    pub next_turn: u64,
    /// The last turn, when a cancel stopped it at a safe point (a resume goes on from there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<StoppedTurn>,
}

/// The stop of `interrupt` double texting and of a workflow cancel by default: the next safe
/// point, recursively.
fn interrupt_mode() -> CancelMode {
    (CancelMode::AFTER_MODEL | CancelMode::AFTER_TOOLS).recursive()
}

/// A wait that a workflow cancel does not end.
fn detached() -> WaitConditionOptions {
    WaitConditionOptions::builder()
        .cancellation_token(WorkflowCancellationToken::new())
        .build()
}

fn enqueue() -> DoubleText {
    DoubleText::Enqueue
}

/// A turn asked of a thread: who asks and what they say.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TurnRequest {
    /// The requester (recorded: they may not approve their own turn's questions).
    pub by: String,
    /// The user's message.
    pub text: String,
    /// The sink the turn's model calls stream their replies to (an HTTP URL; see
    /// [`crate::live`]); `None`: nothing is streamed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub live: Option<String>,
    /// The reader's name for the turn, for [`ThreadWorkflow::progress_of`]: a reader can read
    /// the turn's events by it before it knows the turn's number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// What to do when another turn of the thread runs or waits (default `enqueue`; see
    /// [`ThreadWorkflow`]).
    #[serde(default = "enqueue")]
    pub if_busy: DoubleText,
    /// Continue the thread's last turn, stopped at a safe point by a cancel, from where it
    /// stopped, instead of saying `text` (see [`TurnRequest::resume`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub resume: bool,
}

impl TurnRequest {
    /// `text` said by `by`, run after the turns before it.
    pub fn new(by: impl Into<String>, text: impl Into<String>) -> Self {
        TurnRequest {
            by: by.into(),
            text: text.into(),
            if_busy: DoubleText::Enqueue,
            live: None,
            key: None,
            resume: false,
        }
    }

    /// `by` continues the thread's last turn, which a cancel stopped at a safe point
    /// (`after_model`, `after_tools`: [`TurnEnd::Cancelled`] with a `{"cancelled": MODE}`
    /// interrupt), from where it stopped, as the in-process runner's resume of such a turn: the
    /// calls it finished are not made again, and the continuation's events join that turn in
    /// the thread. Refused by the update's validator when the thread is idle with no such turn
    /// ([`TemporalError::NothingToResume`](super::TemporalError::NothingToResume)); behind a
    /// running turn, its result is an error event when that turn did not stop so.
    ///
    /// ```
    /// use agentweave_temporal::TurnRequest;
    ///
    /// let again = TurnRequest::resume("ana");
    /// assert!(again.resume && again.text.is_empty());
    /// ```
    pub fn resume(by: impl Into<String>) -> Self {
        TurnRequest {
            resume: true,
            ..TurnRequest::new(by, "")
        }
    }

    /// The same request with the double-texting strategy `strategy`.
    pub fn if_busy(mut self, strategy: DoubleText) -> Self {
        self.if_busy = strategy;
        self
    }
}

/// How a turn ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TurnEnd {
    /// It ran to its end (an error event included).
    #[default]
    Done,
    /// A cancel stopped it (an `interrupt` double text, a workflow cancel): what it finished is
    /// kept in the thread.
    Cancelled,
    /// A `rollback` double text dropped it: nothing of it is kept in the thread.
    RolledBack,
}

/// A finished turn: its number and its events in their documented JSON form.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TurnResult {
    /// The turn's number in the thread, from 0.
    pub turn: u64,
    /// The turn's events (`AgentEvent::to_json`).
    pub events: Vec<serde_json::Value>,
    /// How it ended.
    #[serde(default)]
    pub ended: TurnEnd,
}

/// A request to stop one turn of a thread ([`ThreadWorkflow::cancel_turn`]): the turn is
/// named by the key it was asked with ([`TurnRequest::key`]) or by its number in the
/// workflow's run ([`Progress::turn`]).
///
/// ```
/// use agentweave_core::CancelMode;
/// use agentweave_temporal::CancelTurn;
///
/// let stop = CancelTurn::by_key("turn:run-7", CancelMode::IMMEDIATE);
/// assert_eq!(stop.key.as_deref(), Some("turn:run-7"));
/// assert_eq!(stop.turn, None);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CancelTurn {
    /// The turn's key, as it was asked with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// The turn's number in this run of the workflow (what [`Progress::turn`] reports).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<u64>,
    /// How the turn stops: `immediate` where it is, keeping nothing of it; else at the engine's
    /// safe points, keeping what it finished (a question the turn waits on, having no safe
    /// point after it, stops it there).
    pub mode: CancelMode,
}

impl CancelTurn {
    /// Stops the turn asked with key `key` as `mode` says.
    pub fn by_key(key: impl Into<String>, mode: CancelMode) -> Self {
        CancelTurn {
            key: Some(key.into()),
            turn: None,
            mode,
        }
    }

    /// Stops turn `turn` (its number in the workflow's run) as `mode` says.
    pub fn by_number(turn: u64, mode: CancelMode) -> Self {
        CancelTurn {
            key: None,
            turn: Some(turn),
            mode,
        }
    }
}

/// An answer to the question a turn waits on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AnswerRequest {
    /// Who answers.
    pub by: String,
    /// The grants the service gave them (answering needs [`APPROVE_GRANT`]).
    pub grants: Vec<String>,
    /// The question's interrupt id ([`ThreadWorkflow::question`] gives it).
    pub interrupt_id: String,
    /// The answer (an approval's: `true`, `false` or `{"approve": BOOL, "reason"?}`).
    pub answer: serde_json::Value,
    /// The sink the rest of the turn's model calls stream to from now on (the reader of the
    /// turn after the answer; see [`crate::live`]); `None`: the turn's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub live: Option<String>,
}

/// A thread as a workflow: turns arrive as updates ([`turn`](Self::turn)) and run one after
/// the other, or stop the running one (double texting: a turn's [`TurnRequest::if_busy`] says
/// `reject`, refused by the update's validator, `enqueue` or `steer`, run after it, `interrupt`,
/// stopping it at its next safe point, or `rollback`, dropping it); a question waits for the
/// update [`answer`](Self::answer), refused by its validator (before it enters history) when
/// the answerer lacks [`APPROVE_GRANT`] or asked the turn themselves; the signal
/// [`close`](Self::close) ends the thread once its turns are done. A workflow cancel stops the
/// running turn as [`ThreadStart::cancel_mode`] says; between turns, a long history continues as
/// new ([`ThreadStart::continue_as_new_after`]).
#[workflow]
#[derive(Default)]
pub struct ThreadWorkflow {
    queued: VecDeque<(u64, TurnRequest)>,
    next_turn: u64,
    /// The turn running and its cancel signal.
    running: Option<(u64, CancelSignal)>,
    /// A turn to drop where it is (rollback).
    roll_back: Option<u64>,
    results: HashMap<u64, TurnResult>,
    requester: Option<String>,
    question: Option<InterruptInfo>,
    answers: HashMap<String, serde_json::Value>,
    closing: bool,
    /// The running (or last) turn's events as they are made, for the query
    /// [`progress`](Self::progress) (see [`crate::live`]).
    live: Arc<Mutex<LiveTurn>>,
    /// Where the running turn's model calls stream their replies (its request's sink, or the
    /// one its last answer gave).
    sink: Option<String>,
    /// The turns asked with a key ([`TurnRequest::key`]), by key.
    keys: HashMap<String, u64>,
    /// The running turn a [`cancel_turn`](Self::cancel_turn) stops, and how (all requests
    /// combined).
    stopping: Option<(u64, CancelMode)>,
    /// Turns cancelled before they ran (they never do).
    cancelled: std::collections::HashSet<u64>,
    /// Keys cancelled before their turn was asked (the turn, when it comes, never runs).
    cancelled_keys: std::collections::HashSet<String>,
    /// The last turn, when a cancel stopped it at a safe point: what a resume goes on from.
    stopped: Option<StoppedTurn>,
    /// What the workflow was started with (its input, kept by [`new`](Self::new)).
    start: Option<ThreadStart>,
    /// The keys of the conversation parts this run has stored (see [`crate::parts`]).
    stored_parts: std::collections::HashSet<String>,
}

#[workflow_methods]
impl ThreadWorkflow {
    /// The workflow's state from its input: a turn stopped at a safe point, carried from the
    /// thread's previous run, is there before any handler runs (a resume sent as this run
    /// begins is validated against it).
    #[init]
    pub fn new(_ctx: &WorkflowContextView, start: ThreadStart) -> Self {
        ThreadWorkflow {
            stopped: start.carried.as_ref().and_then(|c| c.stopped.clone()),
            start: Some(start),
            ..ThreadWorkflow::default()
        }
    }

    /// Runs the thread's turns as they arrive, until it is closed; gives the number of turns.
    #[run]
    pub async fn run(ctx: &mut WorkflowContext<Self>) -> WorkflowResult<u64> {
        let start = ctx
            .state(|s| s.start.clone())
            .unwrap_or_else(|| ThreadStart::new("", ""));
        let flow = worker_flows().get(&start.flow).map_err(|e| {
            ApplicationFailure::builder(e)
                .type_name("AgentflowLookup".to_owned())
                .non_retryable(true)
                .build()
        })?;
        let (log, first) = match &start.carried {
            Some(carried) => {
                let mut turns = load_turns(ctx, &start.flow, &carried.earlier_turns).await?;
                turns.extend(carried.turns.iter().cloned());
                (
                    ThreadLog::with_turns(start.thread.as_str(), turns),
                    carried.next_turn,
                )
            }
            None => (ThreadLog::new(start.thread.as_str()), 0),
        };
        let seed: u64 = ctx.random();
        let tool_timeout = start
            .tool_timeout_ms
            .map_or(TOOL_TIMEOUT, Duration::from_millis);
        let cancel_mode = start.cancel_mode();
        let mut ran_any = false;
        let model_timeout = start
            .model_timeout_ms
            .map_or(MODEL_TIMEOUT, Duration::from_millis);
        loop {
            if ran_any && over_history(ctx, &start) {
                // Between turns: once no handler runs and no turn waits, hand the thread to a
                // new run of the workflow.
                let c = ctx.clone();
                ctx.wait_condition(move |s| {
                    !s.queued.is_empty() || s.closing || c.all_handlers_finished()
                })
                .await?;
                let idle = ctx.state(|s| s.queued.is_empty() && !s.closing);
                if idle {
                    let next_turn = first + ctx.state(|s| s.next_turn);
                    let (earlier_turns, turns) = store_turns(ctx, &start.flow, log.carried())
                        .await
                        .map_err(|e| {
                            ApplicationFailure::builder(e)
                                .type_name("AgentflowBlob".to_owned())
                                .build()
                        })?;
                    let next = ThreadStart {
                        carried: Some(Carried {
                            earlier_turns,
                            turns,
                            next_turn,
                            stopped: ctx.state(|s| s.stopped.clone()),
                        }),
                        ..start.clone()
                    };
                    ctx.continue_as_new(next, ContinueAsNewOptions::default())?;
                }
            }
            ctx.wait_condition(|s| !s.queued.is_empty() || s.closing)
                .await?;
            let signal = CancelSignal::new();
            let Some((turn, request, live)) = ctx.state_mut(|s| {
                let next = s.queued.pop_front();
                s.requester = next.as_ref().map(|(_, r)| r.by.clone());
                s.running = next.as_ref().map(|(turn, _)| (*turn, signal.clone()));
                s.sink = next.as_ref().and_then(|(_, r)| r.live.clone());
                next.map(|(turn, request)| (turn, request, Arc::clone(&s.live)))
            }) else {
                // Closing: the turns' callers get their results before the workflow ends.
                let c = ctx.clone();
                let _ = ctx
                    .wait_condition_with_options(move |_| c.all_handlers_finished(), detached())
                    .await;
                return Ok(log.len());
            };
            let number = first + turn;
            if ctx.state_mut(|s| s.cancelled.remove(&turn)) {
                // Cancelled before it ran (`cancel_turn`): it never does.
                ctx.state_mut(|s| {
                    s.requester = None;
                    s.running = None;
                    s.results.insert(
                        turn,
                        TurnResult {
                            turn: number,
                            events: Vec::new(),
                            ended: TurnEnd::Cancelled,
                        },
                    );
                });
                continue;
            }
            ran_any = true;
            // A resume goes on from the turn a cancel stopped at a safe point; a new message
            // leaves that turn as it stopped (what it finished stays in the thread).
            let resumed = match (request.resume, ctx.state_mut(|s| s.stopped.take())) {
                (true, Some(stopped)) => Some(stopped),
                (true, None) => {
                    let json = nothing_to_resume(flow.name(), number);
                    *lock(&live) = LiveTurn {
                        turn: Some(turn),
                        events: vec![json.clone()],
                        ended: true,
                        ..LiveTurn::default()
                    };
                    ctx.state_mut(|s| {
                        s.requester = None;
                        s.running = None;
                        s.results.insert(
                            turn,
                            TurnResult {
                                turn: number,
                                events: vec![json],
                                ended: TurnEnd::Done,
                            },
                        );
                    });
                    continue;
                }
                (false, _) => None,
            };
            let effects = Effects::new(
                ctx.workflow_time().unwrap_or(SystemTime::UNIX_EPOCH),
                seed ^ number,
            );
            let input = match &resumed {
                Some(stopped) => stopped.input.clone(),
                None => Message::user(request.text.as_str()),
            };
            *lock(&live) = LiveTurn {
                turn: Some(turn),
                ..LiveTurn::default()
            };
            let shown = Arc::clone(&live);
            let (run, run_cx) = match &resumed {
                Some(stopped) => resume_turn(
                    (&flow, &start.flow),
                    &effects,
                    &log,
                    stopped,
                    signal.clone(),
                ),
                None => start_turn(
                    &flow,
                    &start.flow,
                    &effects,
                    &log,
                    input.clone(),
                    signal.clone(),
                ),
            };
            let events = EventStream::new(run.inspect(move |e| {
                if let Some(json) = e.to_json().ok().and_then(|j| serde_json::to_value(j).ok()) {
                    lock(&shown).events.push(json);
                }
            }));
            // The turn's activities are cancelled with this token, not the workflow's: a
            // workflow cancel lets the call under way finish and stops at a safe point.
            let token = WorkflowCancellationToken::new();
            let c: WorkflowContext<Self> = ctx.clone();
            let stop = {
                let c = ctx.clone();
                let signal = signal.clone();
                Box::pin(async move {
                    let stopping = move |s: &Self| s.stopping.is_some_and(|(t, _)| t == turn);
                    let workflow_cancelled = c
                        .wait_condition(move |s| s.roll_back == Some(turn) || stopping(s))
                        .await
                        .is_err();
                    let mode = if workflow_cancelled {
                        signal.request(cancel_mode);
                        Some(cancel_mode)
                    } else {
                        // A `cancel_turn` (its handler asked the signal already), or a rollback.
                        c.state(|s| s.stopping.filter(|(t, _)| *t == turn).map(|(_, m)| m))
                    };
                    if mode.is_some_and(|m| !m.is_immediate()) {
                        // A question waiting (or asked later) has no safe point after it:
                        // the turn stops there (or where it is, once rolled back).
                        let _ = c
                            .wait_condition_with_options(
                                move |s| s.roll_back == Some(turn) || s.question.is_some(),
                                detached(),
                            )
                            .await;
                    }
                })
            };
            let (events, stopped) = drive(
                events,
                &effects,
                |id, effect| {
                    start_effect(
                        &c,
                        (number, turn),
                        id,
                        effect,
                        (model_timeout, tool_timeout),
                        start.local_activities,
                        &token,
                    )
                },
                || {
                    if let Some(now) = c.workflow_time() {
                        effects.set_now(now);
                    }
                },
                stop,
            )
            .await;
            if stopped {
                token.cancel();
            }
            lock(&live).ended = true;
            let rolled_back = ctx.state(|s| s.roll_back == Some(turn));
            let ended = if rolled_back {
                TurnEnd::RolledBack
            } else if signal.requested().is_some() {
                TurnEnd::Cancelled
            } else {
                TurnEnd::Done
            };
            let stopped_turn = match (&resumed, rolled_back) {
                // Dropped where it was: nothing of it is kept, and a resumed turn stays
                // stopped where it was before.
                (_, true) => resumed,
                (Some(before), false) => {
                    log.extend(before.turn, &events);
                    StoppedTurn::of(before.turn, &input, &run_cx, &events).await
                }
                (None, false) => {
                    let at = log.record(input.clone(), &events);
                    StoppedTurn::of(at, &input, &run_cx, &events).await
                }
            };
            ctx.state_mut(|s| s.stopped = stopped_turn);
            // The turn's events in their JSON form, as the live readers were shown them (each
            // event serialised once, as it was made).
            let json = lock(&live).events.clone();
            ctx.state_mut(|s| {
                s.closing |= start.single_turn;
                s.requester = None;
                s.running = None;
                s.stopping = None;
                s.question = None;
                s.results.insert(
                    turn,
                    TurnResult {
                        turn: number,
                        events: json,
                        ended,
                    },
                );
            });
            if ctx.cancellation_token().is_cancelled() {
                // The turn's caller gets its result before the workflow ends as cancelled.
                let c = ctx.clone();
                let _ = ctx
                    .wait_condition_with_options(move |_| c.all_handlers_finished(), detached())
                    .await;
                return Err(WorkflowTermination::cancelled());
            }
        }
    }

    /// Refuses, before it enters history, a turn asked with `reject` while another turn runs
    /// or waits, and a resume ([`TurnRequest::resume`]) while the thread is idle with no turn
    /// stopped at a safe point.
    #[update_validator(turn)]
    fn validate_turn(
        &self,
        _ctx: &WorkflowContextView,
        request: &TurnRequest,
    ) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        if request.resume
            && self.stopped.is_none()
            && self.running.is_none()
            && self.queued.is_empty()
        {
            return Err(format!(
                "{NOTHING_TO_RESUME}: '{}' asked to resume the thread's last turn, but it \
                 ended, failed or was rolled back, or a new message followed it; ask a new turn \
                 instead",
                request.by
            )
            .into());
        }
        if request.if_busy == DoubleText::Reject
            && (self.running.is_some() || !self.queued.is_empty())
        {
            return Err(format!(
                "the thread is busy (a turn runs or waits) and the turn asked by '{}' said \
                 if_busy=reject: send it again when the thread is idle, or ask with enqueue, \
                 interrupt or rollback",
                request.by
            )
            .into());
        }
        Ok(())
    }

    /// Runs a turn (after the ones before it, or stopping the running one: see its
    /// [`if_busy`](TurnRequest::if_busy)) and gives its events.
    #[update]
    pub async fn turn(ctx: &mut WorkflowContext<Self>, request: TurnRequest) -> TurnResult {
        let turn = ctx.state_mut(|s| {
            if let Some((running, signal)) = &s.running {
                match request.if_busy {
                    DoubleText::Interrupt => signal.request(interrupt_mode()),
                    DoubleText::Rollback => {
                        signal.request(CancelMode::IMMEDIATE);
                        s.roll_back = Some(*running);
                    }
                    DoubleText::Reject | DoubleText::Enqueue | DoubleText::Steer => {}
                }
            }
            let turn = s.next_turn;
            s.next_turn += 1;
            if let Some(key) = &request.key {
                s.keys.insert(key.clone(), turn);
                if s.cancelled_keys.remove(key) {
                    s.cancelled.insert(turn);
                }
            }
            s.queued.push_back((turn, request));
            turn
        });
        // Not cancelled with the workflow: the turn's caller gets what it did.
        let _ = ctx
            .wait_condition_with_options(|s| s.results.contains_key(&turn), detached())
            .await;
        ctx.state_mut(|s| s.results.remove(&turn))
            .unwrap_or(TurnResult {
                turn,
                events: Vec::new(),
                ended: TurnEnd::Done,
            })
    }

    /// Refuses an answer, before it enters history, when no question waits under its id, or
    /// when the engine's answer rule refuses its author (no [`APPROVE_GRANT`], or the turn's
    /// own requester).
    #[update_validator(answer)]
    fn validate_answer(
        &self,
        _ctx: &WorkflowContextView,
        request: &AnswerRequest,
    ) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        let Some(question) = &self.question else {
            return Err(format!(
                "no question waits for an answer on this thread (answer to '{}')",
                request.interrupt_id
            )
            .into());
        };
        if question.id != request.interrupt_id {
            return Err(format!(
                "the question waiting is '{}', not '{}'",
                question.id, request.interrupt_id
            )
            .into());
        }
        let caller =
            Caller::new(request.by.as_str()).grants(request.grants.iter().map(String::as_str));
        let answers = HashMap::from([(request.interrupt_id.clone(), request.answer.clone())]);
        AnswerRule::new(APPROVE_GRANT)
            .approver_not_requester(true)
            .check(
                Some(&caller),
                std::slice::from_ref(question),
                &answers,
                self.requester.as_deref(),
            )
            .map_err(|refusal| refusal.to_string().into())
    }

    /// Answers the question waiting (checked by its validator first).
    #[update]
    pub fn answer(
        &mut self,
        _ctx: &mut SyncWorkflowContext<Self>,
        request: AnswerRequest,
    ) -> String {
        if let Some(sink) = request.live {
            self.sink = Some(sink);
        }
        self.answers
            .insert(request.interrupt_id.clone(), request.answer);
        format!("answered '{}'", request.interrupt_id)
    }

    /// The question the running turn waits on, if any.
    #[query]
    pub fn question(&self, _ctx: &WorkflowContextView) -> Option<InterruptInfo> {
        self.question.clone()
    }

    /// Turn `turn`'s events (of the last turn asked, for [`LAST_TURN`]) from number `since` on, whether it has ended, and the question it
    /// waits on (see [`crate::live`]): a reader polls it to stream a turn's events as they are
    /// made; answered from the workflow's state, it enters no history.
    #[query]
    pub fn progress(&self, _ctx: &WorkflowContextView, at: (u64, u64)) -> Progress {
        let (turn, since) = at;
        let turn = match turn {
            LAST_TURN => self.next_turn.saturating_sub(1),
            turn => turn,
        };
        lock(&self.live).progress(turn, since, self.question.clone())
    }

    /// As [`progress`](Self::progress), for the turn asked with key `key`
    /// ([`TurnRequest::key`]); before that turn is asked, an empty progress (no turn, not
    /// ended).
    #[query]
    pub fn progress_of(&self, _ctx: &WorkflowContextView, at: (String, u64)) -> Progress {
        let (key, since) = at;
        match self.keys.get(&key) {
            Some(&turn) => lock(&self.live).progress(turn, since, self.question.clone()),
            None => Progress {
                since,
                ..Progress::default()
            },
        }
    }

    /// Stops one turn as `request` says and lets the thread go on (a workflow cancel ends the
    /// thread): the running turn stops at the engine's safe points and ends
    /// [`TurnEnd::Cancelled`], keeping what it finished; with `immediate` it stops where it is
    /// and keeps nothing (as a `rollback`: [`TurnEnd::RolledBack`]), as a server records
    /// nothing of a turn whose client went away. A turn not yet running (or, by key, not yet
    /// asked) never runs. A turn that has ended is left alone.
    #[signal]
    pub fn cancel_turn(&mut self, _ctx: &mut SyncWorkflowContext<Self>, request: CancelTurn) {
        let known = request
            .turn
            .or_else(|| request.key.as_ref().and_then(|k| self.keys.get(k).copied()));
        let Some(turn) = known else {
            if let Some(key) = request.key {
                self.cancelled_keys.insert(key);
            }
            return;
        };
        match &self.running {
            Some((running, signal)) if *running == turn => {
                signal.request(request.mode);
                if request.mode.is_immediate() {
                    // Where it is, keeping nothing of it: as a rollback.
                    self.roll_back = Some(turn);
                } else {
                    self.stopping = Some((turn, request.mode));
                }
            }
            _ if self.queued.iter().any(|(t, _)| *t == turn) => {
                self.cancelled.insert(turn);
            }
            _ => {}
        }
    }

    /// Ends the thread once the turns asked before are done.
    #[signal]
    pub fn close(&mut self, _ctx: &mut SyncWorkflowContext<Self>) {
        self.closing = true;
    }
}

/// The event a resume gets when the thread has no turn stopped at a safe point: an error of the
/// flow's root `agent`, in its JSON form.
fn nothing_to_resume(agent: &str, turn: u64) -> serde_json::Value {
    let event = agentweave_core::AgentEvent::error(agentweave_core::AgentError::Failed {
        agent: Arc::from(agent),
        message: Arc::from(format!(
            "turn {turn} asked to resume the thread's last turn, but no turn of the thread is \
             stopped at a safe point (the last one ended, failed, was rolled back, or a new \
             message followed it): ask a new turn instead"
        )),
    })
    .stamped(&Arc::from(agent), &agentweave_core::RunPath::root(agent));
    event
        .to_json()
        .ok()
        .and_then(|j| serde_json::to_value(j).ok())
        .unwrap_or_default()
}

fn retry_policy(retry: Retry) -> RetryPolicy {
    RetryPolicy::builder()
        .initial_interval(retry.initial)
        .backoff_coefficient(retry.backoff)
        .maximum_interval(retry.max_interval)
        .maximum_attempts(retry.max_attempts)
        .build()
}

/// Whether the history is long enough to continue as new (see [`ThreadStart`]).
fn over_history(ctx: &WorkflowContext<ThreadWorkflow>, start: &ThreadStart) -> bool {
    match start.continue_as_new_after {
        Some(events) => ctx.history_length() >= events,
        None => ctx.continue_as_new_suggested(),
    }
}

/// Starts `effect` (number `id` of the thread's turn `turn`, the workflow run's turn
/// `live_turn` for the live readers) as a Temporal command; its activity is cancelled with
/// `token`.
fn start_effect<'a>(
    c: &WorkflowContext<ThreadWorkflow>,
    (turn, live_turn): (u64, u64),
    id: u64,
    effect: Effect,
    (model_timeout, tool_timeout): (Duration, Duration),
    local: LocalSteps,
    token: &WorkflowCancellationToken,
) -> Started<'a> {
    let c = c.clone();
    // A model call streams its reply to the turn's sink, if it has one, and its place among
    // the turn's events is marked for the live readers (see `crate::live`).
    let effect = match effect {
        Effect::Model(mut call) => {
            let (live, sink) = c.state(|s| (Arc::clone(&s.live), s.sink.clone()));
            let mut shown = lock(&live);
            let at = shown.events.len() as u64;
            call.live = sink.map(|url| LiveSink {
                url,
                turn: live_turn,
                effect: id,
                at: Some(at),
            });
            shown.models.push(ModelMark {
                effect: id,
                at,
                agent: call.agent.clone(),
                run_path: call.run_path.clone().unwrap_or_default(),
                done: false,
            });
            drop(shown);
            Effect::Model(call)
        }
        other => other,
    };
    match effect {
        Effect::Model(call) if local.model() => {
            let activity = policy::activity_id(turn, id, &call.agent, "model");
            let options = local_options(
                activity.clone(),
                policy::model_summary(&call.agent, &call.model),
                model_timeout,
                policy::model_retry(),
                token,
            );
            let live = c.state(|s| Arc::clone(&s.live));
            let token = token.clone();
            Box::pin(async move {
                let call = match by_parts(&c, (turn, id), call, &token).await {
                    Ok(call) => call,
                    Err(why) => return Outcome::Model(Err(why)),
                };
                // The call stays in this worker's memory, its activity gets a stub naming it
                // (see `held`); held until the activity's outcome is in.
                let (held, stub) = Held::put(c.run_id(), &activity, call);
                let result = c
                    .execute_local_activity(AgentflowActivities::model, stub, options)
                    .await;
                drop(held);
                if let Some(mark) = lock(&live).models.iter_mut().find(|m| m.effect == id) {
                    mark.done = true;
                }
                model_outcome(result)
            })
        }
        Effect::Tool(call) if local.tool(call.idempotent) => {
            let options = local_options(
                policy::activity_id(turn, id, &call.agent, &call.call.name),
                policy::tool_summary(&call.agent, &call.call.name),
                tool_timeout,
                policy::tool_retry(call.idempotent),
                token,
            );
            Box::pin(async move {
                let result = c
                    .execute_local_activity(AgentflowActivities::tool, call, options)
                    .await;
                Outcome::Tool(result.map_err(|e| failure_text(&e)))
            })
        }
        Effect::Model(call) => {
            let live = c.state(|s| Arc::clone(&s.live));
            let options = ActivityOptions::with_start_to_close_timeout(model_timeout)
                .retry_policy(retry_policy(policy::model_retry()))
                .summary(policy::model_summary(&call.agent, &call.model))
                .activity_id(policy::activity_id(turn, id, &call.agent, "model"))
                .cancellation_token(token.clone())
                .build();
            let token = token.clone();
            Box::pin(async move {
                let call = match by_parts(&c, (turn, id), call, &token).await {
                    Ok(call) => call,
                    Err(why) => return Outcome::Model(Err(why)),
                };
                let result = c
                    .execute_activity(AgentflowActivities::model, call, options)
                    .await;
                if let Some(mark) = lock(&live).models.iter_mut().find(|m| m.effect == id) {
                    mark.done = true;
                }
                model_outcome(result)
            })
        }
        Effect::Tool(call) => {
            let options = ActivityOptions::with_start_to_close_timeout(tool_timeout)
                .retry_policy(retry_policy(policy::tool_retry(call.idempotent)))
                .summary(policy::tool_summary(&call.agent, &call.call.name))
                .activity_id(policy::activity_id(turn, id, &call.agent, &call.call.name))
                .cancellation_token(token.clone())
                .build();
            Box::pin(async move {
                let result = c
                    .execute_activity(AgentflowActivities::tool, call, options)
                    .await;
                Outcome::Tool(result.map_err(|e| {
                    format!(
                        "{e}; the call may or may not have happened: check before calling it again"
                    )
                }))
            })
        }
        Effect::Sleep(wait) => Box::pin(async move {
            c.timer(wait).await;
            Outcome::Slept
        }),
        Effect::Answer(question) => {
            let key = question.id.clone();
            c.state_mut(|s| s.question = Some(question));
            Box::pin(async move {
                // Not ended by a workflow cancel (that stops the turn instead).
                let _ = c
                    .wait_condition_with_options(|s| s.answers.contains_key(&key), detached())
                    .await;
                let answer = c.state_mut(|s| {
                    s.question = None;
                    s.answers.remove(&key)
                });
                Outcome::Answered(answer.unwrap_or(serde_json::Value::Null))
            })
        }
    }
}

/// `call` with its conversation sent by parts when it is too long to send whole and the
/// workers have a blob store (see [`crate::parts`]): each part this run has not stored yet is
/// stored by a local activity first (its text never enters the history).
async fn by_parts(
    c: &WorkflowContext<ThreadWorkflow>,
    (turn, id): (u64, u64),
    mut call: ModelCall,
    token: &WorkflowCancellationToken,
) -> Result<ModelCall, String> {
    if worker_flows().large_payloads().is_none() {
        return Ok(call);
    }
    let Some((parts, rest)) = crate::parts::split(&call.messages, crate::parts::PART_BYTES) else {
        return Ok(call);
    };
    let mut keys = Vec::with_capacity(parts.len());
    for (n, json) in parts.into_iter().enumerate() {
        let part = StorePart {
            flow: call.flow.clone(),
            json,
        };
        let key = part.key();
        if !c.state(|s| s.stored_parts.contains(&key)) {
            let options = local_options(
                format!(
                    "{}.part{n}",
                    policy::activity_id(turn, id, &call.agent, "model")
                ),
                format!("{} → conversation part {n}", call.agent),
                STORE_TIMEOUT,
                policy::tool_retry(true),
                token,
            );
            let stored = c
                .execute_local_activity(AgentflowActivities::store_part, part, options)
                .await
                .map_err(|e| failure_text(&e))?;
            c.state_mut(|s| s.stored_parts.insert(stored));
        }
        keys.push(key);
    }
    call.earlier = keys;
    call.messages = rest;
    Ok(call)
}

/// A thread's `turns` as continue-as-new carries them: the first ones stored by parts (their
/// keys) when the conversation is too long to carry whole and the workers have a blob store,
/// the rest as they are (see [`crate::parts`]).
async fn store_turns(
    c: &WorkflowContext<ThreadWorkflow>,
    flow: &str,
    turns: Vec<CarriedTurn>,
) -> Result<(Vec<String>, Vec<CarriedTurn>), String> {
    if worker_flows().large_payloads().is_none() {
        return Ok((Vec::new(), turns));
    }
    let Some((parts, rest)) = crate::parts::split(&turns, crate::parts::PART_BYTES) else {
        return Ok((Vec::new(), turns));
    };
    let mut keys = Vec::with_capacity(parts.len());
    for (n, json) in parts.into_iter().enumerate() {
        let part = StorePart {
            flow: flow.to_owned(),
            json,
        };
        keys.push(part.key());
        let options = local_options(
            format!("carry.part{n}"),
            format!("thread → conversation part {n}"),
            STORE_TIMEOUT,
            policy::tool_retry(true),
            &WorkflowCancellationToken::new(),
        );
        c.execute_local_activity(AgentflowActivities::store_part, part, options)
            .await
            .map_err(|e| failure_text(&e))?;
    }
    Ok((keys, rest))
}

/// The turns stored under `keys` by the thread's previous run ([`store_turns`]), read back
/// in order (each part by a local activity).
async fn load_turns(
    c: &WorkflowContext<ThreadWorkflow>,
    flow: &str,
    keys: &[String],
) -> WorkflowResult<Vec<CarriedTurn>> {
    let mut turns = Vec::new();
    for (n, key) in keys.iter().enumerate() {
        let part = LoadPart {
            flow: flow.to_owned(),
            key: key.clone(),
        };
        let options = local_options(
            format!("carried.part{n}"),
            format!("thread ← conversation part {n}"),
            STORE_TIMEOUT,
            policy::tool_retry(true),
            &WorkflowCancellationToken::new(),
        );
        let json = c
            .execute_local_activity(AgentflowActivities::load_part, part, options)
            .await
            .map_err(|e| blob_failure(failure_text(&e)))?;
        let part: Vec<CarriedTurn> = serde_json::from_str(&json).map_err(|e| {
            blob_failure(format!(
                "the thread's carried turns under '{key}' do not decode: {e}"
            ))
        })?;
        turns.extend(part);
    }
    Ok(turns)
}

fn blob_failure(message: String) -> ApplicationFailure {
    ApplicationFailure::builder(Text(message))
        .type_name("AgentflowBlob".to_owned())
        .non_retryable(true)
        .build()
}

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct Text(String);

fn local_options(
    activity_id: String,
    summary: String,
    timeout: Duration,
    retry: Retry,
    token: &WorkflowCancellationToken,
) -> LocalActivityOptions {
    LocalActivityOptions::builder()
        .activity_id(activity_id)
        .summary(summary)
        .start_to_close_timeout(timeout)
        .retry_policy(retry_policy(retry))
        .cancellation_token(token.clone())
        .build()
}

/// A model activity's outcome: its reply, the budget check's error it failed with (see
/// [`crate::spending`]), or its failure in words.
fn model_outcome(result: Result<Message, ActivityExecutionError>) -> Outcome {
    let error = match result {
        Ok(reply) => return Outcome::Model(Ok(reply)),
        Err(error) => error,
    };
    let mut cause = error.failure();
    while let Some(failure) = cause {
        if let Some(FailureInfo::ApplicationFailureInfo(info)) = &failure.failure_info {
            if let Some(error) = crate::spending::budget_error_of(&info.r#type, &failure.message) {
                return Outcome::Budget(error);
            }
        }
        cause = failure.cause.as_deref();
    }
    Outcome::Model(Err(failure_text(&error)))
}

/// An activity's failure in words: its message, then each cause's (the activity's own error,
/// a timeout), so the error the agent's run ends with says what failed.
fn failure_text(error: &ActivityExecutionError) -> String {
    let mut text = error.to_string();
    let mut cause = error.failure().and_then(|f| f.cause.as_deref());
    while let Some(failure) = cause {
        text.push_str(": ");
        text.push_str(&failure.message);
        cause = failure.cause.as_deref();
    }
    text
}
