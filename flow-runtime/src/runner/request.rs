//! Requests as values: what a caller asks of a [`Runner`], whoever the caller is (a library
//! call, an HTTP route, the run queue, a protocol router).
//!
//! - [`RunRequest`]: a run outside threads, on messages, in a session of its own or one given,
//!   optionally checkpointed ([`Runner::run`](crate::Runner::run));
//! - [`ResumeRequest`]: the resume of a checkpointed run, by id or through a claim a worker
//!   holds ([`Runner::resume`](crate::Runner::resume));
//! - [`TurnRequest`]: a turn of a thread, new (a message) or the continuation of an interrupted
//!   one (answers), streamed ([`Runner::turn`](crate::Runner::turn)) or as a background run ([`Runner::start`](crate::Runner::start)).
//!
//! A request carries who asks ([`TurnRequest::by`]), what (the thread, the input, the answers)
//! and how (options, durability, what to do when the thread is busy). A new way to start or
//! continue a run is a new field or constructor here, never a new copy of the run's setup: every
//! request goes through the one pipeline of its verb.

use std::collections::HashMap;
use std::sync::Arc;

use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::claims::HeldClaim;
use super::durability::Durability;
use super::run_handle::{RunHandle, RunInput, RunOutcome};
use crate::agent::cancel::CancelMode;
use crate::agent::options::RunOptions;
use crate::message::{Message, MessageRef};
use crate::session::Session;
use crate::store::SaveMode;
use crate::store::ThreadError;

/// A run outside threads ([`Runner::run`](crate::Runner::run)): its input messages, and optionally the session it
/// records into and the checkpoint id it saves under if it is interrupted.
///
/// A `&str`, a `String` or a [`Message`] is a request with one message (a user message for
/// text); so is a `Vec` or array of messages.
///
/// ```
/// use agentweave_runtime::{FlowAgent, FnAgent, Message, RunRequest, Runner, Session};
/// use futures::StreamExt;
/// # futures::executor::block_on(async {
/// let bot = FnAgent::new("bot", |cx, input| async move {
///     cx.say(format!("{} messages", input.messages.len()));
///     Ok(())
/// });
/// let runner = Runner::new(FlowAgent::new(bot));
/// // One user message.
/// let events: Vec<_> = runner.run("hello").collect().await;
/// assert_eq!(events[0].message_output().unwrap().content, "1 messages");
/// // Several, in a session kept to read afterwards.
/// let session = Session::new();
/// let request = RunRequest::new([Message::user("a"), Message::user("b")]).session(session.clone());
/// let events: Vec<_> = runner.run(request).collect().await;
/// assert_eq!(events[0].message_output().unwrap().content, "2 messages");
/// assert_eq!(session.len(), 1);
/// # });
/// ```
#[derive(Clone, Default)]
#[must_use = "a request does nothing until a runner runs it"]
pub struct RunRequest {
    pub(crate) messages: Vec<MessageRef>,
    pub(crate) session: Option<Arc<Session>>,
    pub(crate) checkpoint: Option<(String, SaveMode)>,
    pub(crate) options: Option<Arc<RunOptions>>,
}

impl RunRequest {
    /// A run on `messages` (messages or shared messages), in a new session.
    pub fn new(messages: impl IntoIterator<Item = impl Into<MessageRef>>) -> Self {
        RunRequest {
            messages: messages.into_iter().map(Into::into).collect(),
            ..RunRequest::default()
        }
    }

    /// Records the run in `session` (to preset session values, or to read the record
    /// afterwards). Use a new session per run: a session is the record of one run.
    pub fn session(mut self, session: Arc<Session>) -> Self {
        self.session = Some(session);
        self
    }

    /// Saves a checkpoint under `id` if the run is interrupted (the runner needs a
    /// [checkpoint store](super::RunnerBuilder::checkpoint_store)); resume it with
    /// [`ResumeRequest`].
    ///
    /// The checkpoint is saved before the interrupt event reaches the caller; if saving fails,
    /// an error event follows the interrupt and the store keeps what it had. If `id` holds a
    /// run that still waits for its resume, nothing runs: the stream has one error event
    /// ([`StoreError::Pending`](crate::store::StoreError::Pending)); see
    /// [`replacing`](RunRequest::replacing).
    pub fn checkpoint(mut self, id: impl Into<String>) -> Self {
        self.checkpoint = Some((id.into(), SaveMode::Create));
        self
    }

    /// With [`checkpoint`](RunRequest::checkpoint): replaces a run that waits under the id (it
    /// stays in the id's history, as replaced; a worker resuming it right now cannot record its
    /// outcome).
    pub fn replacing(mut self) -> Self {
        if let Some((_, mode)) = &mut self.checkpoint {
            *mode = SaveMode::Replace;
        }
        self
    }

    /// Options for this run in place of the runner's
    /// [`run_options`](super::RunnerBuilder::run_options).
    pub fn options(mut self, options: RunOptions) -> Self {
        self.options = Some(Arc::new(options));
        self
    }
}

impl From<&str> for RunRequest {
    fn from(text: &str) -> Self {
        RunRequest::new([Message::user(text)])
    }
}

impl From<String> for RunRequest {
    fn from(text: String) -> Self {
        RunRequest::new([Message::user(text)])
    }
}

impl From<Message> for RunRequest {
    fn from(message: Message) -> Self {
        RunRequest::new([message])
    }
}

impl From<Vec<Message>> for RunRequest {
    fn from(messages: Vec<Message>) -> Self {
        RunRequest::new(messages)
    }
}

impl<const N: usize> From<[Message; N]> for RunRequest {
    fn from(messages: [Message; N]) -> Self {
        RunRequest::new(messages)
    }
}

impl std::fmt::Debug for RunRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunRequest")
            .field("messages", &self.messages.len())
            .field("checkpoint", &self.checkpoint)
            .finish_non_exhaustive()
    }
}

/// The resume of a checkpointed run ([`Runner::resume`](crate::Runner::resume)): which checkpoint, the answers to
/// its interrupts, and options.
///
/// `answers` maps interrupt ids ([`InterruptInfo::id`](crate::InterruptInfo::id), e.g.
/// `desk/refund`) to resume data for them; every interrupt of the checkpoint is re-entered,
/// answered or not (one that is not answered may interrupt again).
///
/// ```no_run
/// # use agentweave_runtime::{ResumeRequest, Runner};
/// # async fn approve(runner: &Runner) -> Result<(), agentweave_runtime::CheckpointError> {
/// let request = ResumeRequest::new("refund-42", [("desk/refund".to_owned(), serde_json::json!(true))]);
/// let events = runner.resume(request).await?;
/// # drop(events);
/// # Ok(())
/// # }
/// ```
#[must_use = "a request does nothing until a runner runs it"]
pub struct ResumeRequest {
    pub(crate) target: ResumeTarget,
    pub(crate) answers: HashMap<String, serde_json::Value>,
    pub(crate) options: Option<Arc<RunOptions>>,
}

/// Which checkpoint a [`ResumeRequest`] resumes.
pub(crate) enum ResumeTarget {
    /// The checkpoint with this id (claimed by the resume).
    Id(String),
    /// One whose claim a worker holds already.
    Claimed(HeldClaim),
}

impl ResumeRequest {
    /// Resumes the run saved under `checkpoint_id`, with `answers` (interrupt id -> data).
    pub fn new(
        checkpoint_id: impl Into<String>,
        answers: impl IntoIterator<Item = (String, serde_json::Value)>,
    ) -> Self {
        ResumeRequest {
            target: ResumeTarget::Id(checkpoint_id.into()),
            answers: answers.into_iter().collect(),
            options: None,
        }
    }

    /// Resumes a checkpoint this worker claimed with
    /// [`Checkpoints::claim`](super::Checkpoints::claim), with `answers`.
    pub fn claimed(
        held: HeldClaim,
        answers: impl IntoIterator<Item = (String, serde_json::Value)>,
    ) -> Self {
        ResumeRequest {
            target: ResumeTarget::Claimed(held),
            answers: answers.into_iter().collect(),
            options: None,
        }
    }

    /// Options for the resumed run in place of the runner's
    /// [`run_options`](super::RunnerBuilder::run_options): the way to give a
    /// [history modifier](crate::AgentRunOptions::history_modifier), or any option, to one
    /// resume.
    pub fn options(mut self, options: RunOptions) -> Self {
        self.options = Some(Arc::new(options));
        self
    }

    /// The checkpoint's id.
    pub fn checkpoint_id(&self) -> &str {
        match &self.target {
            ResumeTarget::Id(id) => id,
            ResumeTarget::Claimed(held) => held.id(),
        }
    }
}

impl std::fmt::Debug for ResumeRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResumeRequest")
            .field("checkpoint_id", &self.checkpoint_id())
            .field("answers", &self.answers.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

/// A turn of a thread ([`Runner::turn`](crate::Runner::turn), [`Runner::start`](crate::Runner::start)): a new message, or the answers
/// that continue the thread's interrupted turn; who asks; and how it runs.
///
/// ```
/// use agentweave_runtime::{FlowAgent, FnAgent, InMemoryStore, Message, Runner, TurnRequest};
/// # futures::executor::block_on(async {
/// let bot = FnAgent::new("bot", |cx, _| async move { cx.say("hello"); Ok(()) });
/// let runner = Runner::builder(FlowAgent::new(bot)).stores(InMemoryStore::new()).build();
/// let request = TurnRequest::new("ada", Message::user("hi")).by("user-7");
/// let turn = runner.turn(request).await.unwrap();
/// assert_eq!(turn.final_output().await.unwrap().unwrap().content, "hello");
/// let records = runner.thread("ada").records().await.unwrap();
/// assert_eq!(records[0].by.as_deref(), Some("user-7"));
/// # });
/// ```
#[derive(Clone)]
#[must_use = "a request does nothing until a runner runs it"]
pub struct TurnRequest {
    pub(crate) thread: String,
    pub(crate) input: TurnInput,
    pub(crate) by: Option<super::caller::Caller>,
    pub(crate) options: Option<Arc<RunOptions>>,
    pub(crate) durability: Option<Durability>,
    pub(crate) if_busy: DoubleText,
    pub(crate) run_id: Option<String>,
    pub(crate) frontend_tools: Vec<crate::model::ToolDefinition>,
}

/// What a [`TurnRequest`] brings to its thread.
#[derive(Debug, Clone)]
pub(crate) enum TurnInput {
    /// A new message: a new turn.
    Message(Message),
    /// Answers to the interrupts of the thread's waiting turn: its continuation.
    Answers(HashMap<String, serde_json::Value>),
}

impl TurnRequest {
    /// A new turn of thread `thread` (a new thread if it has no records) on `message`.
    pub fn new(thread: impl Into<String>, message: Message) -> Self {
        TurnRequest::with_input(thread.into(), TurnInput::Message(message))
    }

    /// The continuation of thread `thread`'s interrupted (or safe-point cancelled) turn, with
    /// `answers` (interrupt id -> resume data, as for [`ResumeRequest`]). If it is interrupted
    /// again, the thread records that and waits again.
    pub fn resume(
        thread: impl Into<String>,
        answers: impl IntoIterator<Item = (String, serde_json::Value)>,
    ) -> Self {
        TurnRequest::with_input(
            thread.into(),
            TurnInput::Answers(answers.into_iter().collect()),
        )
    }

    /// The request that continues a cancelled run (a run of [`Runner::start`](crate::Runner::start) cancelled with
    /// [`RunHandle::cancel`]): one stopped at a safe point goes on from its checkpoint; one
    /// stopped immediately, or cancelled before it started, runs its message (or its answers)
    /// again from the start, since nothing of it was recorded. [`RunError::NotCancelled`] if
    /// the run was not cancelled.
    pub fn again(run: &RunHandle) -> Result<Self, RunError> {
        let Some(RunOutcome::Cancelled {
            at_safe_point,
            before_start,
            ..
        }) = run.outcome()
        else {
            return Err(RunError::NotCancelled {
                run: run.id().to_owned(),
                status: run.status().as_str(),
            });
        };
        let thread = run.thread_id().to_owned();
        let checkpoint = at_safe_point && !before_start;
        let input = match (&run.state.input, checkpoint) {
            (_, true) => TurnInput::Answers(HashMap::new()),
            (RunInput::Message(m), false) => TurnInput::Message(m.clone()),
            (RunInput::Resume(answers), false) => TurnInput::Answers(answers.clone()),
        };
        Ok(TurnRequest::with_input(thread, input))
    }

    fn with_input(thread: String, input: TurnInput) -> Self {
        TurnRequest {
            thread,
            input,
            by: None,
            options: None,
            durability: None,
            if_busy: DoubleText::Reject,
            run_id: None,
            frontend_tools: Vec::new(),
        }
    }

    /// Who asks: a [`Caller`](super::Caller) (an id, as a service names its caller, with the
    /// grants it gave them), or just an id. The id is recorded in the turn's record
    /// ([`ThreadRecord::by`](crate::store::ThreadRecord::by)), as the requester of a new turn
    /// or the one who answered an interrupt; answers are checked against the runner's
    /// [`AnswerRule`](super::AnswerRule) as this caller's (see `authority`).
    pub fn by(mut self, principal: impl Into<super::caller::Caller>) -> Self {
        self.by = Some(principal.into());
        self
    }

    /// Options for this turn in place of the runner's
    /// [`run_options`](super::RunnerBuilder::run_options) (a
    /// [history modifier](crate::AgentRunOptions::history_modifier), for instance).
    pub fn options(mut self, options: RunOptions) -> Self {
        self.options = Some(Arc::new(options));
        self
    }

    /// How much of this turn is journaled before it ends, in place of the runner's
    /// [`durability`](super::RunnerBuilder::durability) (the modes: [`Durability`]).
    pub fn durability(mut self, mode: Durability) -> Self {
        self.durability = Some(mode);
        self
    }

    /// What happens if the thread has a run going in this runner (see [`DoubleText`];
    /// default [`DoubleText::Reject`]): refuse ([`ThreadError::Busy`](crate::ThreadError::Busy)),
    /// wait for it, or cancel it first. A plain [`Turn`](crate::Turn) streaming elsewhere is
    /// not a run: a turn meeting one is refused whatever the strategy.
    pub fn if_busy(mut self, strategy: DoubleText) -> Self {
        self.if_busy = strategy;
        self
    }

    /// The run's id (a queued run keeps the id it was queued under, so readers attach to it by
    /// that id). It is also the turn's idempotency scope: the turn's tool calls get keys made
    /// from it, so a turn started again under the same id (its worker died) gives its tool
    /// calls the same keys. Default: a new id per run.
    pub fn run_id(mut self, id: impl Into<String>) -> Self {
        self.run_id = Some(id.into());
        self
    }

    /// Adds front-end tools to this turn's options: tools the model may call that the
    /// caller's front end runs (see
    /// [`RunOptions::frontend_tools`](crate::RunOptions::frontend_tools)).
    pub fn frontend_tools(
        mut self,
        tools: impl IntoIterator<Item = crate::model::ToolDefinition>,
    ) -> Self {
        self.frontend_tools.extend(tools);
        self
    }

    /// The thread's id.
    pub fn thread_id(&self) -> &str {
        &self.thread
    }

    /// The answers of a request that continues an interrupted turn (made with
    /// [`resume`](TurnRequest::resume) or [`again`](TurnRequest::again)); `None` for a new
    /// message. A service checks who may give them before it sends the request.
    pub fn answers(&self) -> Option<&HashMap<String, serde_json::Value>> {
        match &self.input {
            TurnInput::Answers(answers) => Some(answers),
            TurnInput::Message(_) => None,
        }
    }

    /// Whether this request continues an interrupted turn (made with
    /// [`resume`](TurnRequest::resume)).
    pub fn is_resume(&self) -> bool {
        matches!(self.input, TurnInput::Answers(_))
    }
}

impl std::fmt::Debug for TurnRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TurnRequest")
            .field("thread", &self.thread)
            .field("resume", &self.is_resume())
            .field("by", &self.by)
            .field("durability", &self.durability)
            .field("if_busy", &self.if_busy)
            .field("run_id", &self.run_id)
            .finish_non_exhaustive()
    }
}

/// What to do with a new message while its thread has a run that has not ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DoubleText {
    /// Refuse the new message ([`ThreadError::Busy`]); nothing runs.
    #[default]
    Reject,
    /// Run it after the current run (and any already waiting), in order.
    Enqueue,
    /// Cancel the current run at its next safe point (after its model call or its tool calls,
    /// recursively), keep what it finished, then run the new message with that in its history.
    Interrupt,
    /// Cancel the current run immediately, record nothing of it, then run the new message.
    Rollback,
    /// Give the new message to the run going (the last one, if several wait): it takes it in
    /// at its next safe point ([`RunHandle::steer`](crate::RunHandle::steer)), and
    /// [`Runner::start`](crate::Runner::start) answers that run's handle; if it ended
    /// meanwhile, the message runs as a new run. A streamed turn
    /// ([`Runner::turn`](crate::Runner::turn)) cannot join another turn's stream: it waits, as
    /// with `Enqueue`.
    Steer,
}

/// A strategy name that does not exist.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "'{given}' is not a double-texting strategy: use reject, enqueue, interrupt, rollback or \
     steer"
)]
pub struct UnknownStrategy {
    /// What was given.
    pub given: String,
}

impl FromStr for DoubleText {
    type Err = UnknownStrategy;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "reject" => Ok(DoubleText::Reject),
            "enqueue" => Ok(DoubleText::Enqueue),
            "interrupt" => Ok(DoubleText::Interrupt),
            "rollback" => Ok(DoubleText::Rollback),
            "steer" => Ok(DoubleText::Steer),
            other => Err(UnknownStrategy {
                given: other.chars().take(40).collect(),
            }),
        }
    }
}

impl DoubleText {
    /// The cancel this strategy applies to the runs already going (none for reject, enqueue).
    pub(super) fn cancel_mode(self) -> Option<CancelMode> {
        match self {
            DoubleText::Interrupt => {
                Some((CancelMode::AFTER_MODEL | CancelMode::AFTER_TOOLS).recursive())
            }
            DoubleText::Rollback => Some(CancelMode::IMMEDIATE),
            DoubleText::Reject | DoubleText::Enqueue | DoubleText::Steer => None,
        }
    }
}

/// Why a run could not be resumed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    /// The run was not cancelled (it runs, or ended otherwise): nothing to resume.
    #[error(
        "run '{run}' is {status}, not cancelled; only a cancelled run is resumed this way (an \
         interrupted one is resumed with its interrupts' data)"
    )]
    NotCancelled {
        /// The run.
        run: String,
        /// Its status.
        status: &'static str,
    },
    /// Its thread refused the new run.
    #[error(transparent)]
    Thread(#[from] ThreadError),
}
