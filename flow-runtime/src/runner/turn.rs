//! Conversations: [`Runner::turn`] runs one user turn of a thread, [`TurnRequest::resume`](crate::TurnRequest::resume)
//! continues an interrupted one, and [`TurnRouting`] says where a turn starts.
//!
//! A thread is a conversation kept in a [`ThreadStore`]. A turn loads the thread's head, picks
//! the agent to start at, runs the flow from there with the earlier turns reaching each agent
//! through its [`ContextPolicy`](crate::ContextPolicy), and when its event stream ends appends
//! one [`ThreadRecord`] holding the turn's recorded events. A turn that fails (an error event)
//! or is cancelled (its stream dropped before the end) appends nothing: the thread stays as it
//! was. An interrupted turn saves a checkpoint, records what it did so far, and is continued by
//! [`TurnRequest::resume`](crate::TurnRequest::resume), whose events are recorded as the turn's continuation.
//!
//! A turn cancelled at a safe point (see [`CancelMode`](crate::CancelMode)) is recorded like an
//! interrupted one; [`TurnRequest::resume`](crate::TurnRequest::resume) continues it, and a new message may follow it too.
//!
//! A turn holds its thread's lease in the store ([`ThreadStore::lease_thread`]) from before it
//! runs anything until it ends: a second turn on the thread, in this process or any other one
//! on the same store, is refused with [`ThreadError::Busy`] before any model or tool call.
//!
//! ```
//! use agentweave_runtime::{set_sub_agents, FlowAgent, FnAgent, InMemoryStore, Message, Runner, TurnRequest};
//! # futures::executor::block_on(async {
//! let triage = FnAgent::new("triage", |cx, _| async move { cx.transfer("refund"); Ok(()) });
//! let refund = FnAgent::new("refund", |cx, input| async move {
//!     cx.say(format!("refund desk, {} messages so far", input.messages.len()));
//!     Ok(())
//! });
//! let desk = set_sub_agents(FlowAgent::new(triage), [FlowAgent::new(refund)]).unwrap();
//! let runner = Runner::builder(desk).thread_store(InMemoryStore::new()).build();
//!
//! let first = runner.turn(TurnRequest::new("ada", Message::user("my kettle broke"))).await.unwrap();
//! assert_eq!(first.started_at().to_string(), "triage");
//! let answer = first.final_output().await.unwrap().unwrap();
//! assert_eq!(answer.content, "refund desk, 3 messages so far");
//!
//! // The next turn goes back to the agent that answered.
//! let second = runner.turn(TurnRequest::new("ada", Message::user("any news?"))).await.unwrap();
//! assert_eq!(second.started_at().to_string(), "refund");
//! let answer = second.final_output().await.unwrap().unwrap();
//! assert_eq!(answer.content, "refund desk, 5 messages so far");
//! # });
//! ```

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context as TaskContext, Poll};
use std::time::{Duration, Instant};

use futures::{Stream, StreamExt};
use serde::{Deserialize, Serialize};

use super::answer::answer_of;
use super::checkpoint::record_events;
use super::claims::ClaimGuard;
use super::fork_point::is_fork_point;
use super::request::{TurnInput, TurnRequest};
use super::runs::{capture_bytes, check_targets, Restored, Runner};
use crate::agent::cancel::is_cancel_interrupt;
use crate::agent::generate;
use crate::agent::options::RunOptions;
use crate::agent::FlowAgent;
use crate::agent::{Agent, AgentInput, EventStream, RunContext};
use crate::event::{AgentError, AgentEvent, InterruptInfo};
use crate::history::ThreadHistory;
use crate::message::{Message, MessageRef};
use crate::resume::ResumeInfo;
use crate::run_path::RunPath;
use crate::session::Session;
use crate::store::{
    turn_checkpoint_id, validate_thread_id, Checkpoint, CheckpointError, Completion, RecordEnd,
    RecordStart, SaveMode, ThreadError, ThreadHead, ThreadPart, ThreadRecord, ThreadStore,
};

/// Where a thread's next turn starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TurnRouting {
    /// Every turn starts at the root of the runner's tree (Eino's behaviour).
    Root,
    /// A turn starts at the agent that answered the previous turn (Google ADK's behaviour),
    /// unless that agent may not be re-entered: if it, or an agent between it and the root, is
    /// barred from transferring to its parent (a workflow's sub-agent, a `no_parent` node), the
    /// turn starts at the parent above the highest such barred link, so that every agent of the
    /// tree stays reachable (a workflow's sub-agent starts its workflow again). The first turn,
    /// and a turn after one answered by an agent the tree no longer has, start at the root.
    #[default]
    LastAgent,
}

/// A runner's thread settings: the store, the routing, the threads with a turn running here.
#[derive(Clone, Default)]
pub(crate) struct ThreadSettings {
    pub(super) store: Option<Arc<dyn ThreadStore>>,
    pub(super) routing: TurnRouting,
    running: Arc<Mutex<HashSet<String>>>,
    /// Leases of this runner's turns that were dropped and are being given back, by thread
    /// id. A new turn here on such a thread gives the lease back itself first.
    dropped: Arc<Mutex<HashMap<String, DroppedLease>>>,
    /// The runs started here ([`Runner::start`]), kept for their readers.
    pub(crate) runs: Arc<super::run_handle::RunRegistry>,
    /// The cancel signal of the run a turn started by this (cloned) runner belongs to.
    pub(crate) cancel: Option<crate::agent::cancel::CancelSignal>,
    /// The steering messages of the run a turn started by this (cloned) runner belongs to.
    pub(crate) steer: Option<crate::SteerQueue>,
    /// The id of the run a new turn started by this (cloned) runner belongs to (its run
    /// handle's); `None`: a new id per turn.
    pub(crate) run_id: Option<String>,
    /// The idempotency scope of a new turn started by this (cloned) runner; `None`: a random
    /// one. A queued run's turns use the run's id, so running it again gives its tool calls
    /// the same keys.
    pub(crate) scope: Option<Arc<str>>,
    /// How long a thread lives after its last record (see `housekeeping`).
    pub(crate) ttl: Option<Duration>,
    /// Who may answer the threads' interrupts (see `authority`); `None`: anyone.
    pub(crate) answer_rule: Option<Arc<super::authority::AnswerRule>>,
}

/// One message of a thread, as [`ThreadHandle::messages`](crate::ThreadHandle::messages) lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThreadMessage {
    /// The turn it belongs to, from 0.
    pub turn: u64,
    /// The agent that recorded it; empty for the user's messages.
    pub agent_name: Arc<str>,
    /// Where it was recorded; empty for the user's messages.
    pub run_path: RunPath,
    /// The message.
    pub message: Message,
}

/// How a turn ended, once its event stream has ended ([`Turn::outcome`]).
#[derive(Debug, Clone)]
pub enum TurnOutcome {
    /// The turn ran to its end and was recorded.
    Completed {
        /// The agent that answered last (where the next turn starts with
        /// [`TurnRouting::LastAgent`]).
        answered_by: Arc<str>,
        /// The turn's answer: see [`Turn::final_output`].
        answer: Option<Message>,
        /// The thread's version after the turn was recorded.
        version: u64,
    },
    /// The turn stopped for outside input; it was recorded so far and its checkpoint saved.
    /// Continue it with [`TurnRequest::resume`](crate::TurnRequest::resume).
    Interrupted {
        /// The checkpoint the turn saved.
        checkpoint_id: String,
        /// The interrupts it waits on.
        interrupts: Vec<InterruptInfo>,
    },
    /// The turn failed and recorded nothing: the thread is as it was before it.
    Failed(ThreadError),
}

/// One turn of a thread: a stream of the turn's [`AgentEvent`]s, and how it ended.
///
/// The turn is recorded when the stream ends: read it to its end (or call
/// [`finish`](Turn::finish) or [`final_output`](Turn::final_output)). Dropping it before the
/// end cancels the turn and records nothing (once the last event is out and the store's write
/// has started, the write completes or fails whole: a turn is never recorded in part).
pub struct Turn {
    events: EventStream,
    thread_id: String,
    number: u64,
    started_at: RunPath,
    run_id: String,
    outcome: Arc<Mutex<Option<TurnOutcome>>>,
    session: Arc<Session>,
    /// Whether the turn continues an interrupted one (or a dead worker's, recovered).
    resumed: bool,
    /// Whether the turn is a dead worker's, recovered from its journal.
    recovered: bool,
}

impl Turn {
    /// The id of the run this turn is part of: new for a new turn (its run handle's, for a
    /// turn started by [`Runner::start`]), the interrupted turn's for a resume. The
    /// checkpoints the run saves carry it ([`Checkpoint::run_id`](crate::store::Checkpoint)),
    /// and a service puts it on its spans so logs join to runs.
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// The thread's id.
    pub fn thread_id(&self) -> &str {
        &self.thread_id
    }

    /// The turn's number in its thread, from 0.
    pub fn number(&self) -> u64 {
        self.number
    }

    /// The run path the turn started at, `[agent]`: every event of the turn has a run path
    /// starting with it.
    pub fn started_at(&self) -> &RunPath {
        &self.started_at
    }

    /// The turn's session: the session values every agent of the turn reads and writes (a
    /// resumed turn's are those its checkpoint saved). Values set before the first event is
    /// read are there when the turn's first agent starts (a turn runs only as its events are
    /// read); reading them as events arrive shows what the agents wrote so far.
    pub fn session(&self) -> &Arc<Session> {
        &self.session
    }

    /// Whether this turn is one whose worker died, recovered from its journal (by
    /// [`Runner::recover`], or by a request that met it): its events are the whole turn's,
    /// those the dead worker's caller already saw delivered again.
    pub fn recovered(&self) -> bool {
        self.recovered
    }

    /// Whether the turn continues an interrupted turn, or a dead worker's.
    pub(crate) fn resumed(&self) -> bool {
        self.resumed
    }

    /// How the turn ended; `None` until its event stream has ended.
    pub fn outcome(&self) -> Option<TurnOutcome> {
        self.outcome.lock().expect("turn outcome lock").clone()
    }

    /// Reads the rest of the turn's events (dropping them) and returns how it ended.
    pub async fn finish(mut self) -> TurnOutcome {
        while self.events.next().await.is_some() {}
        self.outcome().unwrap_or_else(|| {
            TurnOutcome::Failed(ThreadError::Store(crate::store::StoreError::Other {
                id: self.thread_id.clone(),
                message: "the turn ended without an outcome".into(),
            }))
        })
    }

    /// Reads the rest of the turn and returns its answer: the message of the turn's last
    /// recorded event if it carries [`Action::Exit`](crate::Action::Exit) and has content, or if it is a tool
    /// result with no action (a [return-directly](crate::ChatModelAgentBuilder::return_directly)
    /// tool's result, which its agent emits last), else the last recorded assistant message
    /// with content and no tool calls (`None` if there is none). An
    /// interrupted turn gives [`ThreadError::AwaitingResume`], a failed one its error.
    pub async fn final_output(self) -> Result<Option<Message>, ThreadError> {
        let id = self.thread_id.clone();
        let number = self.number;
        match self.finish().await {
            TurnOutcome::Completed { answer, .. } => Ok(answer),
            TurnOutcome::Interrupted { interrupts, .. } => Err(ThreadError::AwaitingResume {
                id,
                turn: number,
                interrupts: interrupt_ids(&interrupts),
            }),
            TurnOutcome::Failed(e) => Err(e),
        }
    }
}

impl Stream for Turn {
    type Item = AgentEvent;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Option<AgentEvent>> {
        Pin::new(&mut self.events).poll_next(cx)
    }
}

impl fmt::Debug for Turn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Turn")
            .field("thread_id", &self.thread_id)
            .field("number", &self.number)
            .field("started_at", &self.started_at)
            .finish_non_exhaustive()
    }
}

fn interrupt_ids(interrupts: &[InterruptInfo]) -> String {
    interrupts
        .iter()
        .map(|i| i.id.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

impl Runner {
    pub(super) fn thread_store_or_err(&self) -> Result<&Arc<dyn ThreadStore>, ThreadError> {
        self.threads.store.as_ref().ok_or(ThreadError::NoStore)
    }

    /// Runs one turn of a thread (see [`TurnRequest`]): a new message, or the answers that
    /// continue the thread's interrupted turn.
    ///
    /// A new turn starts where [`TurnRouting`] says; each agent's input is the thread so far
    /// (earlier turns, then this message, then what this turn recorded), shaped by its
    /// [`ContextPolicy`](crate::ContextPolicy). A continuation resumes the turn's checkpoint
    /// with the answers (as [`Runner::resume`] does) and is recorded as part of the same turn;
    /// if it is interrupted again, the thread records that and waits again. The returned
    /// [`Turn`] streams the events; when it ends, the turn is appended to the thread.
    ///
    /// Before anything runs, the turn takes the thread's lease in the store (for the runner's
    /// [`lease`](crate::RunnerBuilder::lease), renewed as events flow, given back when the turn
    /// ends). If the thread has a run going in this runner (see [`Runner::start`]), the
    /// request's [`if_busy`](TurnRequest::if_busy) strategy says what happens first. It errors,
    /// with no model or tool called, if the id is invalid, a new message meets a thread that
    /// waits for an interrupted turn to be resumed ([`ThreadError::AwaitingResume`]), answers
    /// meet a thread that waits for none ([`ThreadError::NotInterrupted`]), another turn of it
    /// is running in this runner or in another process on the same store
    /// ([`ThreadError::Busy`]), or the store fails. The append is still a compare-and-swap on
    /// the thread's version: a turn whose lease ran out while another turn was recorded is not
    /// recorded (its stream ends with an error event, its outcome is
    /// [`ThreadError::LeaseLost`] or [`ThreadError::Conflict`]).
    pub async fn turn(&self, request: TurnRequest) -> Result<Turn, ThreadError> {
        validate_thread_id(&request.thread)?;
        self.meet_running(&request.thread, request.if_busy).await?;
        self.begin(request, None).await
    }

    /// The one pipeline every turn request goes through, from [`turn`](Runner::turn) and
    /// [`start`](Runner::start) (with the run `run` it belongs to): the request's settings,
    /// then the thread taken (in this runner, then its lease in the store), then the turn
    /// started from a message or from answers.
    pub(super) async fn begin(
        &self,
        request: TurnRequest,
        run: Option<&super::RunHandle>,
    ) -> Result<Turn, ThreadError> {
        let TurnRequest {
            thread,
            input,
            by: caller,
            options,
            durability,
            run_id,
            frontend_tools,
            ..
        } = request;
        // The runner is cloned only when the request changes something of it.
        let mut runner = self.for_request(options.as_ref(), durability);
        if !frontend_tools.is_empty() {
            let options = RunOptions::clone(&runner.options).frontend_tools(frontend_tools);
            runner.to_mut().options = Arc::new(options);
        }
        if let Some(run) = run {
            let threads = &mut runner.to_mut().threads;
            threads.cancel = Some(run.state.cancel.clone());
            threads.steer = Some(run.state.steer.clone());
            threads.run_id = Some(run.id().to_owned());
        }
        if let Some(id) = run_id {
            // A run under a given id keeps its idempotency scope across restarts.
            let threads = &mut runner.to_mut().threads;
            threads.scope = Some(Arc::from(id.as_str()));
            threads.run_id = Some(id);
        }
        if let TurnInput::Message(_) = &input {
            if runner.thread_expired(&thread).await? {
                // An expired thread is gone: the message starts a new one under its id.
                runner.delete_thread(&thread).await?;
            }
        }
        let answering = matches!(input, TurnInput::Answers(_));
        let (store, claim, mut lease) = runner.hold_thread(&thread).await?;
        // A turn of the thread whose worker died is recovered before anything new is taken:
        // the request's own turn (sent again) is given back to it; another's is finished and
        // recorded first, so that nothing it did is lost or done twice.
        let (dead, head) = match runner
            .dead_turn(&store, &thread, runner.threads.scope.as_deref(), answering)
            .await
        {
            Ok(found) => found,
            Err(e) => {
                ThreadLease::release_unused(lease).await;
                return Err(e);
            }
        };
        let (store, claim, mut lease, head) = match dead {
            DeadTurn::None => (store, claim, lease, head),
            dead => {
                let recovered = runner
                    .recover_held(&store, &thread, claim, &mut lease)
                    .await;
                ThreadLease::release_unused(lease).await;
                match recovered? {
                    Some(turn) if dead == DeadTurn::Own => return Ok(turn),
                    Some(turn) => {
                        tracing::info!(thread = %thread, "finishing a dead worker's turn before a new request");
                        turn.finish().await;
                    }
                    None => {}
                }
                let (store, claim, lease) = runner.hold_thread(&thread).await?;
                (store, claim, lease, None)
            }
        };
        // Authority, for every door: whoever gives answers must be allowed to (the rule is the
        // runner's; the caller the request's). Checked with the thread held, before anything runs.
        if let TurnInput::Answers(answers) = &input {
            let allowed = match runner.threads.answer_rule.as_deref() {
                Some(rule) => {
                    rule.authorize(&store, &thread, head.as_ref(), answers, caller.as_ref())
                        .await
                }
                None => Ok(()),
            };
            if let Err(e) = allowed {
                ThreadLease::release_unused(lease).await;
                return Err(e);
            }
        }
        let by = caller.map(|c| Arc::clone(c.id_arc()));
        let started = match input {
            TurnInput::Message(message) => {
                runner
                    .start_turn(store, &thread, message, by, claim, &mut lease, head)
                    .await
            }
            TurnInput::Answers(answers) => {
                runner
                    .start_resumed_turn(store, &thread, answers, by, claim, &mut lease, false, head)
                    .await
            }
        };
        ThreadLease::release_unused(lease).await;
        started
    }

    /// Takes thread `thread_id` for a turn: in this runner, then its lease in the store.
    pub(super) async fn hold_thread(
        &self,
        thread_id: &str,
    ) -> Result<(Arc<dyn ThreadStore>, ThreadClaim, Option<ThreadLease>), ThreadError> {
        validate_thread_id(thread_id)?;
        let store = Arc::clone(self.thread_store_or_err()?);
        let claim = ThreadClaim::take(&self.threads.running, thread_id)?;
        let lease = ThreadLease::take(&store, thread_id, &self.threads, self.lease).await?;
        Ok((store, claim, Some(lease)))
    }

    /// Starts a turn under `lease` (moved into the turn once it is built; left there if the
    /// turn cannot start, for the caller to give back), from the thread's head `known_head`
    /// when the caller read it under the lease already.
    #[allow(clippy::too_many_arguments)]
    async fn start_turn(
        &self,
        store: Arc<dyn ThreadStore>,
        thread_id: &str,
        message: Message,
        by: Option<Arc<str>>,
        claim: ThreadClaim,
        lease: &mut Option<ThreadLease>,
        known_head: Option<Option<ThreadHead>>,
    ) -> Result<Turn, ThreadError> {
        let head = match known_head {
            Some(head) => head,
            None => store.head(thread_id).await?,
        };
        if let Some(head) = &head {
            if let RecordEnd::Interrupted {
                interrupts,
                checkpoint_id,
            } = &head.last.end
            {
                if interrupts.is_empty() || !interrupts.iter().all(is_cancel_interrupt) {
                    return Err(ThreadError::AwaitingResume {
                        id: thread_id.to_owned(),
                        turn: head.last.turn,
                        interrupts: interrupt_ids(interrupts),
                    });
                }
                // A turn cancelled at a safe point: what it finished stays in the thread, and
                // the new message goes on from there; its checkpoint is no longer resumed.
                if let Some(checkpoints) = &self.store {
                    checkpoints.delete(checkpoint_id).await?;
                }
            }
        }
        let start = self.turn_start(head.as_ref());
        let number = head.as_ref().map_or(0, |h| h.turns);
        let version = head.as_ref().map_or(0, |h| h.version);
        let started_at = RunPath::root(start.name());
        let message: MessageRef = Arc::new(message);
        let history = ThreadHistory::new(
            super::earlier::StoreTurns::shared(&store, thread_id),
            number,
        );
        // The turn starts with the thread's values (see `thread_values`).
        let cx = self
            .run_context(
                Runner::session_after(head.as_ref().map(|h| &h.last)),
                vec![Arc::clone(&message)],
                start.name(),
                Some(Arc::new(history)),
            )
            .with_conversation_id(thread_id);
        let cx = match &self.threads.scope {
            Some(scope) => cx.with_idempotency_scope(Arc::clone(scope)),
            None => cx,
        };
        // Sync: a tool call waits until the reply that asked for it is journaled.
        let gate = (self.durability == super::Durability::Sync && self.journal.is_some())
            .then(Arc::<super::journal_gate::StoredCalls>::default);
        // The steps of runs nested in tool calls (an agent tool's) are journaled beside.
        let (nested, _) = self
            .nested_steps(
                thread_id,
                number,
                version,
                cx.session(),
                cx.idempotency_scope(),
                gate.clone(),
                false,
            )
            .await?;
        let mut first = crate::agent::Middlewares::default();
        if let Some(nested) = nested {
            first = first.with(nested);
        }
        if let Some(gate) = &gate {
            first = first.with(Arc::new(super::journal_gate::JournalGate(Arc::clone(gate))));
        }
        let cx = match first.is_empty() {
            true => cx,
            false => {
                cx.with_run_middleware(crate::agent::Middlewares::chain([&first, &self.middleware]))
            }
        };
        // The turn's input shares the context's copy.
        let input = AgentInput {
            messages: cx.root_messages(),
            streaming: self.streaming,
        };
        let events = Arc::new(start).run(cx.clone(), input);
        let plan = Recording {
            runner: self.clone(),
            store,
            thread_id: thread_id.to_owned(),
            turn: number,
            version,
            started_at: started_at.clone(),
            start: RecordStart::Turn {
                input: vec![Message::clone(&message)],
            },
            by,
            restored: 0,
            resumed_checkpoint: None,
            lineage: (
                self.threads
                    .run_id
                    .clone()
                    .unwrap_or_else(|| self.host.new_id()),
                0,
            ),
            resume_claim: Mutex::new(None),
            replayed: None,
            planned_checkpoint: std::sync::OnceLock::new(),
            gate,
            replay: None,
        };
        let lease = lease
            .take()
            .expect("the turn's lease is held until it starts");
        Ok(plan.into_turn(cx, events, claim, lease))
    }

    /// Starts the continuation of an interrupted turn under `lease` (as
    /// [`start_turn`](Runner::start_turn)); `recovering`: the continuation of a resume whose
    /// worker died, replaying what the turn's journal holds past the checkpoint (see
    /// `runner::recover`).
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn start_resumed_turn(
        &self,
        store: Arc<dyn ThreadStore>,
        thread_id: &str,
        targets: HashMap<String, serde_json::Value>,
        by: Option<Arc<str>>,
        claim: ThreadClaim,
        lease: &mut Option<ThreadLease>,
        recovering: bool,
        known_head: Option<Option<ThreadHead>>,
    ) -> Result<Turn, ThreadError> {
        let head = match known_head {
            Some(head) => head,
            None => store.head(thread_id).await?,
        };
        if let Some(head) = head.as_ref() {
            if is_fork_point(&head.last.end) {
                // A fork made in the middle of a turn: the turn goes on from the fork's step.
                return self
                    .continue_fork(store, thread_id, head.clone(), by, claim, lease)
                    .await;
            }
        }
        let Some(ThreadHead {
            version,
            last:
                ThreadRecord {
                    turn,
                    started_at,
                    end: RecordEnd::Interrupted { checkpoint_id, .. },
                    ..
                },
            ..
        }) = head
        else {
            return Err(ThreadError::NotInterrupted {
                id: thread_id.to_owned(),
            });
        };
        // The claim makes this resume the only one, in any process (see the store contract).
        let start_name = started_at.last().unwrap_or(self.agent.name()).to_owned();
        // The targets are checked once the thread is whole (below): a resume whose worker
        // died may have left the thread one record behind the checkpoint it claims.
        let Restored {
            checkpoint,
            guard: resume_claim,
            cx,
            input,
            restored,
            ..
        } = self
            .restore_claimed(
                &checkpoint_id,
                &HashMap::new(),
                &start_name,
                Checkpoint::idempotency_scope,
            )
            .await?;
        let replayed = replay_part(
            &store,
            thread_id,
            &checkpoint_id,
            &checkpoint,
            version,
            turn,
        )
        .await
        .and_then(|version| {
            check_targets(&checkpoint_id, &checkpoint, &targets)?;
            Ok(version)
        });
        let version = match replayed {
            Ok(version) => version,
            Err(e) => {
                resume_claim.release().await;
                return Err(e);
            }
        };
        // A recovered continuation replays the steps its dead worker journaled past the
        // checkpoint (see `runner::recover`).
        let journaled = match recovering {
            true => match self
                .journal(&super::journal::turn_journal_id(thread_id, turn))
                .await
            {
                Ok(steps) => Some(steps.into_iter().map(|s| s.event).collect::<Vec<_>>()),
                Err(e) => {
                    resume_claim.release().await;
                    return Err(e.into());
                }
            },
            false => None,
        };
        let info = ResumeInfo::new(checkpoint.interrupts.iter().cloned(), &targets);
        let history =
            ThreadHistory::new(super::earlier::StoreTurns::shared(&store, thread_id), turn);
        let mut cx = cx
            .with_thread(Arc::new(history))
            .with_conversation_id(thread_id)
            .with_cancel(self.threads.cancel.clone().unwrap_or_default(), false);
        if let Some(steer) = &self.threads.steer {
            cx = cx.with_steering(steer.clone());
        }
        // Sync (and a recovery, unless Async): a tool call waits until the reply that asked
        // for it is journaled; the checkpoint's replies are stored already.
        let gated = match &journaled {
            Some(_) => self.durability != super::Durability::Async,
            None => self.durability == super::Durability::Sync && self.journal.is_some(),
        };
        let gate = gated.then(|| {
            let gate = Arc::new(super::journal_gate::StoredCalls::default());
            gate.add(&checkpoint.events);
            if let Some(steps) = &journaled {
                gate.add(steps);
            }
            gate
        });
        let nested = self
            .nested_steps(
                thread_id,
                turn,
                version,
                cx.session(),
                cx.idempotency_scope(),
                gate.clone(),
                recovering,
            )
            .await;
        let (nested, nested_steps) = match nested {
            Ok(nested) => nested,
            Err(e) => {
                resume_claim.release().await;
                return Err(e.into());
            }
        };
        if let Some(gate) = &gate {
            gate.add(&nested_steps);
        }
        let mut first = crate::agent::Middlewares::default();
        if let Some(steps) = &journaled {
            let from = restored.min(steps.len());
            let replay = Arc::new(
                super::replay::Replay::new(&steps[from..], from).with_nested(&nested_steps),
            );
            // The steers the dead worker took in are taken in again where it took them.
            let steering = cx.steering().cloned().unwrap_or_default();
            cx = cx.with_steering(steering.replaying(Arc::clone(&replay) as _));
            first = first.with(replay);
        }
        if let Some(nested) = nested {
            first = first.with(nested);
        }
        if let Some(gate) = &gate {
            first = first.with(Arc::new(super::journal_gate::JournalGate(Arc::clone(gate))));
        }
        if !first.is_empty() {
            cx = cx
                .with_run_middleware(crate::agent::Middlewares::chain([&first, &self.middleware]));
        }
        let events = Arc::clone(&self.agent).resume(cx.clone(), input, info);
        let plan = Recording {
            runner: self.clone(),
            store,
            thread_id: thread_id.to_owned(),
            turn,
            version,
            started_at,
            start: RecordStart::Resume {
                checkpoint_id: checkpoint_id.clone(),
                targets: targets.into_iter().collect(),
            },
            by,
            restored,
            resumed_checkpoint: Some(checkpoint_id),
            lineage: (checkpoint.run_id.clone(), checkpoint.resumes + 1),
            resume_claim: Mutex::new(Some(resume_claim)),
            replayed: journaled,
            planned_checkpoint: std::sync::OnceLock::new(),
            gate,
            replay: None,
        };
        let lease = lease
            .take()
            .expect("the turn's lease is held until it starts");
        Ok(plan.into_turn(cx, events, claim, lease))
    }

    /// The thread's records, in order (empty for an unknown thread).
    pub(crate) async fn thread_records(
        &self,
        thread_id: &str,
    ) -> Result<Vec<ThreadRecord>, ThreadError> {
        validate_thread_id(thread_id)?;
        if self.thread_expired(thread_id).await? {
            return Ok(Vec::new());
        }
        self.thread_store_or_err()?
            .read(thread_id, 0..u64::MAX)
            .await
    }

    /// The thread's messages, in order: each turn's user input, then the messages its agents
    /// recorded (streams whole). Empty for an unknown thread.
    pub(crate) async fn thread_messages(
        &self,
        thread_id: &str,
    ) -> Result<Vec<ThreadMessage>, ThreadError> {
        let mut out = Vec::new();
        for record in self.thread_records(thread_id).await? {
            if let RecordStart::Turn { input } = record.start {
                out.extend(input.into_iter().map(|message| ThreadMessage {
                    turn: record.turn,
                    agent_name: Arc::from(""),
                    run_path: RunPath::default(),
                    message,
                }));
            }
            out.extend(record.events.into_iter().filter_map(|e| {
                Some(ThreadMessage {
                    turn: record.turn,
                    message: e.message?,
                    agent_name: e.agent_name,
                    run_path: e.run_path,
                })
            }));
        }
        Ok(out)
    }

    /// The ids of the threads in the store, sorted.
    pub(crate) async fn list_threads(&self) -> Result<Vec<String>, ThreadError> {
        self.thread_store_or_err()?.list().await
    }

    /// Deletes a thread, the checkpoint of its turn if one waits to be resumed, and every
    /// turn's journal (in the runner's [`RunnerBuilder::journal_store`](crate::RunnerBuilder::journal_store)); returns
    /// whether the thread existed. Refused ([`ThreadError::Busy`]) while a turn of it runs, in
    /// this runner or another process on the same store.
    pub(crate) async fn delete_thread(&self, thread_id: &str) -> Result<bool, ThreadError> {
        validate_thread_id(thread_id)?;
        let store = self.thread_store_or_err()?;
        // Runs waiting in line hold no claim while the run before them goes: each is named
        // (refused with how many wait or run), before and after the claim is taken (a run
        // registered meanwhile either shows here or finds the thread claimed and never runs).
        self.refuse_runs_going(thread_id)?;
        let _claim = ThreadClaim::take(&self.threads.running, thread_id)?;
        self.refuse_runs_going(thread_id)?;
        let lease = ThreadLease::take(store, thread_id, &self.threads, self.lease).await?;
        let deleted = async {
            if let Some(head) = store.head(thread_id).await? {
                if let (RecordEnd::Interrupted { checkpoint_id, .. }, Some(checkpoints)) =
                    (&head.last.end, &self.store)
                {
                    checkpoints.delete(checkpoint_id).await?;
                }
                // Every turn's journal goes with the thread, with its marks and nested steps
                // (an unrecorded attempt's at the next version too).
                if let Some(journal) = &self.journal {
                    let records = store.read(thread_id, 0..u64::MAX).await?;
                    for turn in 0..=head.turns {
                        let id = super::journal::turn_journal_id(thread_id, turn);
                        journal.delete_journal(&id).await?;
                        self.drop_turn_marks(thread_id, turn, &records, Some(head.version))
                            .await?;
                    }
                }
            }
            let existed = store.delete(thread_id).await?;
            // Its spending goes with it (the tenant's stays: the tenant spent it).
            if let Some(spending) = &self.spending {
                spending
                    .store()
                    .delete_thread(thread_id)
                    .await
                    .map_err(|e| {
                        ThreadError::Store(crate::store::StoreError::Other {
                            id: thread_id.to_owned(),
                            message: format!("could not delete the thread's spending: {e}"),
                        })
                    })?;
            }
            Ok(existed)
        }
        .await;
        lease.release().await;
        if deleted.is_ok() {
            // Its ended runs go with it: their events hold its messages.
            self.registry().forget_ended(thread_id);
        }
        deleted
    }

    /// [`ThreadError::RunsGoing`] if the thread has runs of this runner not ended.
    fn refuse_runs_going(&self, thread_id: &str) -> Result<(), ThreadError> {
        let going = self.registry().active(thread_id);
        match going.first() {
            None => Ok(()),
            Some(oldest) => Err(ThreadError::RunsGoing {
                id: thread_id.to_owned(),
                runs: going.len(),
                run_id: oldest.id().to_owned(),
            }),
        }
    }

    /// The agent the next turn of a thread with this head starts at.
    fn turn_start(&self, head: Option<&ThreadHead>) -> FlowAgent {
        let root = FlowAgent::clone(&self.agent);
        let answered_by = match (self.threads.routing, head.map(|h| &h.last.end)) {
            (TurnRouting::LastAgent, Some(RecordEnd::Completed { answered_by })) => answered_by,
            _ => return root,
        };
        let Some(last) = root.find(answered_by) else {
            return root;
        };
        reentry_point(&root, last)
    }
}

/// The deepest agent at or above `last` from which every link up to `root` is open (no agent
/// on the way is barred from its parent).
fn reentry_point(root: &FlowAgent, last: FlowAgent) -> FlowAgent {
    let mut start = last.clone();
    let mut current = last;
    while current.name() != root.name() {
        let Some(parent) = current.parent() else {
            // `last` is not under the runner's agent: start at the runner's agent.
            return root.clone();
        };
        if current.options().disallow_transfer_to_parent {
            start = parent.clone();
        }
        current = parent;
    }
    start
}

/// A dead turn a request met on its thread (see `Runner::dead_turn`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum DeadTurn {
    /// None: the thread is free.
    None,
    /// The request's own turn (sent again): it is recovered and given to the request.
    Own,
    /// Another request's: it is recovered and finished (recorded) first.
    Other,
}

/// Marks a thread as having a turn running in this runner until dropped.
pub(super) struct ThreadClaim {
    set: Arc<Mutex<HashSet<String>>>,
    id: String,
}

impl ThreadClaim {
    fn take(set: &Arc<Mutex<HashSet<String>>>, id: &str) -> Result<Self, ThreadError> {
        if !set.lock().expect("thread set lock").insert(id.to_owned()) {
            return Err(ThreadError::Busy { id: id.to_owned() });
        }
        Ok(ThreadClaim {
            set: Arc::clone(set),
            id: id.to_owned(),
        })
    }
}

impl Drop for ThreadClaim {
    fn drop(&mut self) {
        if let Ok(mut set) = self.set.lock() {
            set.remove(&self.id);
        }
    }
}

/// A turn's lease on its thread in the store ([`ThreadStore::lease_thread`]): taken before the
/// turn runs anything, renewed while its events flow, given back when the turn ends (or, if
/// the turn is dropped, as soon as a Tokio runtime can; else it runs out).
pub(super) struct ThreadLease {
    store: Arc<dyn ThreadStore>,
    dropped: Arc<Mutex<HashMap<String, DroppedLease>>>,
    id: String,
    /// This turn's owner token; `None` once given back.
    owner: Option<String>,
    lease: Duration,
    renewed: Instant,
    /// The turn's start mark while it is armed: closed before the lease is given back, so
    /// whoever takes the thread next never mistakes a cancelled turn for a dead one.
    mark: Option<super::turn_mark::TurnMark>,
}

/// A lease of this runner whose turn was dropped, being given back: its owner token, and the
/// turn's start mark to close before the thread is taken again.
pub(super) struct DroppedLease {
    owner: String,
    mark: Option<super::turn_mark::TurnMark>,
}

impl ThreadLease {
    async fn take(
        store: &Arc<dyn ThreadStore>,
        id: &str,
        settings: &ThreadSettings,
        lease: Duration,
    ) -> Result<Self, ThreadError> {
        let owner = crate::ids::unique_token();
        match store.lease_thread(id, &owner, lease).await {
            Err(ThreadError::Busy { .. }) => {
                // A turn of this runner on the thread was dropped and its lease may not be
                // given back yet: give it back now (its turn is gone), then try again.
                let stale = settings.dropped.lock().expect("lease lock").remove(id);
                let Some(stale) = stale else {
                    return Err(ThreadError::Busy { id: id.to_owned() });
                };
                if let Some(mark) = stale.mark {
                    mark.close().await;
                }
                store.release_thread_lease(id, &stale.owner).await?;
                store.lease_thread(id, &owner, lease).await?;
            }
            other => other?,
        }
        Ok(ThreadLease {
            store: Arc::clone(store),
            dropped: Arc::clone(&settings.dropped),
            id: id.to_owned(),
            owner: Some(owner),
            lease,
            renewed: Instant::now(),
            mark: None,
        })
    }

    /// Holds the turn's start mark (closed before the lease is given back, unless left).
    fn hold_mark(&mut self, mark: super::turn_mark::TurnMark) {
        self.mark = Some(mark);
    }

    /// Leaves the turn's start mark as it is (the turn was recorded, or another worker owns
    /// it now).
    fn leave_mark(&mut self) {
        super::turn_mark::TurnMark::leave(self.mark.take());
    }

    /// Renews the lease once half of it has passed; an error if it was lost.
    async fn keep(&mut self) -> Result<(), ThreadError> {
        let Some(owner) = &self.owner else {
            return Ok(());
        };
        if self.renewed.elapsed() >= self.lease / 2 {
            self.store
                .renew_thread_lease(&self.id, owner, self.lease)
                .await?;
            self.renewed = Instant::now();
        }
        Ok(())
    }

    /// Gives back a lease a turn that could not start left unused.
    pub(super) async fn release_unused(lease: Option<ThreadLease>) {
        if let Some(lease) = lease {
            lease.release().await;
        }
    }

    /// Gives the lease back (a failure is logged: the lease then runs out), after closing the
    /// start mark of a turn that was not recorded.
    async fn release(mut self) {
        if let Some(mark) = self.mark.take() {
            mark.close().await;
        }
        if let Some(owner) = self.owner.take() {
            if let Err(e) = self.store.release_thread_lease(&self.id, &owner).await {
                tracing::warn!(thread = %self.id, error = %e, "could not give a thread's lease back");
            }
        }
    }
}

impl Drop for ThreadLease {
    fn drop(&mut self) {
        let Some(owner) = self.owner.take() else {
            return;
        };
        let id = std::mem::take(&mut self.id);
        // The mark goes with the entry: whoever gives the lease back closes it first.
        self.dropped.lock().expect("lease lock").insert(
            id.clone(),
            DroppedLease {
                owner: owner.clone(),
                mark: self.mark.take(),
            },
        );
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            let store = Arc::clone(&self.store);
            let dropped = Arc::clone(&self.dropped);
            handle.spawn(async move {
                let mine = {
                    let mut dropped = dropped.lock().expect("lease lock");
                    match dropped.get(&id) {
                        Some(d) if d.owner == owner => dropped.remove(&id),
                        _ => None,
                    }
                };
                // Taken over meanwhile by a new turn of this runner, which gave it back.
                let Some(mine) = mine else { return };
                if let Some(mark) = mine.mark {
                    mark.close().await;
                }
                let _ = store.release_thread_lease(&id, &owner).await;
            });
        }
    }
}

/// Keeps, of a fork point's continuation's recorded events, those after the fork's step.
pub(super) type KeepNew =
    Arc<dyn Fn(Vec<crate::store::RecordedEvent>) -> Vec<crate::store::RecordedEvent> + Send + Sync>;

/// What a running turn appends when it ends.
pub(super) struct Recording {
    pub(super) runner: Runner,
    pub(super) store: Arc<dyn ThreadStore>,
    pub(super) thread_id: String,
    pub(super) turn: u64,
    /// The thread's version the turn loaded.
    pub(super) version: u64,
    pub(super) started_at: RunPath,
    pub(super) start: RecordStart,
    /// Who started this part (see [`ThreadRecord::by`]).
    pub(super) by: Option<Arc<str>>,
    /// How many session events a resumed turn restored (recorded by earlier records).
    pub(super) restored: usize,
    /// The checkpoint a resumed turn continues.
    pub(super) resumed_checkpoint: Option<String>,
    /// The lineage of the checkpoint this turn saves if interrupted: run id, resumes before it.
    pub(super) lineage: (String, u32),
    /// A resumed turn's claim on its checkpoint (given back if the turn ends unrecorded).
    pub(super) resume_claim: Mutex<Option<ClaimGuard>>,
    /// A recovered turn's journaled steps, which it regenerates (see `runner::recover`).
    pub(super) replayed: Option<Vec<crate::event::RecordedEvent>>,
    /// The id a new journaled turn saves its checkpoint under if interrupted, drawn when its
    /// start mark is written (the mark names it: see `TurnStart::checkpoint_id`).
    pub(super) planned_checkpoint: std::sync::OnceLock<String>,
    /// A `Sync` turn's journal gate, told of each stored model reply.
    pub(super) gate: Option<Arc<super::journal_gate::StoredCalls>>,
    /// For the continuation of a fork point: leaves the steps replayed from the fork's record
    /// out of this record (see `time_travel`).
    pub(super) replay: Option<KeepNew>,
}

impl Recording {
    pub(super) fn into_turn(
        self,
        cx: RunContext,
        events: EventStream,
        claim: ThreadClaim,
        mut lease: ThreadLease,
    ) -> Turn {
        let outcome: Arc<Mutex<Option<TurnOutcome>>> = Arc::default();
        let slot = Arc::clone(&outcome);
        let thread_id = self.thread_id.clone();
        let number = self.turn;
        let started_at = self.started_at.clone();
        let session = Arc::clone(cx.session());
        let run_id = self.lineage.0.clone();
        let recovered = self.replayed.is_some();
        let resumed = recovered || matches!(self.start, RecordStart::Resume { .. });
        let events = generate(cx.clone(), move |out| async move {
            let _claim = claim;
            let ended = self.forward(&out, &cx, events, &mut lease).await;
            // Given back before the outcome is known, so whoever sees the turn end finds the
            // thread free.
            lease.release().await;
            *slot.lock().expect("turn outcome lock") = Some(ended);
            Ok(())
        });
        Turn {
            events,
            thread_id,
            number,
            started_at,
            run_id,
            outcome,
            session,
            resumed,
            recovered,
        }
    }

    /// Forwards the turn's events, holding back its interrupts until the turn is recorded,
    /// then records it.
    async fn forward(
        self,
        out: &crate::agent::Context,
        cx: &RunContext,
        mut events: EventStream,
        lease: &mut ThreadLease,
    ) -> TurnOutcome {
        let mut held: Vec<AgentEvent> = Vec::new();
        let mut failure: Option<AgentError> = None;
        let journal_id = super::journal::turn_journal_id(&self.thread_id, self.turn);
        let scope = cx.idempotency_scope().to_owned();
        let opened = match &self.replayed {
            Some(steps) => self
                .runner
                .open_replaying_journal(journal_id, scope.clone(), steps.clone())
                .await
                .map(Some),
            None => {
                self.runner
                    .open_journal(journal_id, scope.clone(), cx.session())
                    .await
            }
        };
        let mut journal = match opened {
            Ok(journal) => journal,
            Err(e) => return self.not_recorded(out, cx, e.into()).await,
        };
        if let Some(journal) = &mut journal {
            journal.open_gate(self.gate.clone());
        }
        // A journaled turn (new or resumed) marks its start, so that another worker can
        // recover it.
        if journal.is_some() && self.replayed.is_none() && self.replay.is_none() {
            let marked = match self.runner.journal_store_or_err(&self.thread_id) {
                Ok(store) => match (&self.resumed_checkpoint, &self.start) {
                    (Some(checkpoint_id), RecordStart::Resume { targets, .. }) => {
                        let start = super::turn_mark::ResumeStart {
                            flow: self.runner.flow_fingerprint(),
                            thread: self.thread_id.clone(),
                            turn: self.turn,
                            version: self.version,
                            checkpoint_id: checkpoint_id.clone(),
                            targets: targets.clone(),
                            by: self.by.clone(),
                            run_id: self.runner.threads.run_id.clone(),
                        };
                        super::turn_mark::TurnMark::write_resume(Arc::clone(store), &start).await
                    }
                    _ => {
                        let planned = turn_checkpoint_id(&self.thread_id, self.turn);
                        let _ = self.planned_checkpoint.set(planned.clone());
                        let start = super::turn_mark::TurnStart {
                            flow: self.runner.flow_fingerprint(),
                            thread: self.thread_id.clone(),
                            turn: self.turn,
                            version: self.version,
                            input: match &self.start {
                                RecordStart::Turn { input } => input.clone(),
                                _ => Vec::new(),
                            },
                            started_at: self.started_at.clone(),
                            scope: scope.clone(),
                            by: self.by.clone(),
                            run_id: self.runner.threads.run_id.clone(),
                            checkpoint_id: Some(planned),
                        };
                        super::turn_mark::TurnMark::write(Arc::clone(store), &start).await
                    }
                },
                Err(e) => Err(e),
            };
            match marked {
                Ok(written) => lease.hold_mark(written),
                Err(e) => return self.not_recorded(out, cx, e.into()).await,
            }
        }
        let gate = journal.as_ref().and_then(|j| j.gate());
        loop {
            let next = match &gate {
                // Sync: a tool call waiting for its reply to be stored is served at once.
                // The event first (`select` polls its first future first).
                Some(gate) => {
                    let wanted = std::pin::pin!(gate.wanted());
                    match futures::future::select(events.next(), wanted).await {
                        futures::future::Either::Left((event, _)) => Some(event),
                        futures::future::Either::Right(((), _)) => None,
                    }
                }
                None => Some(events.next().await),
            };
            let event = match next {
                Some(Some(event)) => event,
                Some(None) => break,
                None => {
                    if let Some(journal) = &mut journal {
                        if let Err(e) = journal.step(cx.session()).await {
                            drop(events);
                            return self.not_recorded(out, cx, e.into()).await;
                        }
                    }
                    continue;
                }
            };
            if let Err(e) = lease.keep().await {
                // Another turn may own the thread now: this one stops and records nothing.
                drop(events);
                lease.leave_mark();
                return self.not_recorded(out, cx, e).await;
            }
            if let Some(journal) = &mut journal {
                // Sync: the event's step is stored before the event is passed on.
                if !journal.step_in_line(cx.session()) {
                    if let Err(e) = journal.step(cx.session()).await {
                        drop(events);
                        return self.not_recorded(out, cx, e.into()).await;
                    }
                }
            }
            if event.is_interrupt() {
                held.push(event);
                continue;
            }
            if let Some(error) = &event.error {
                failure.get_or_insert_with(|| error.clone());
            }
            out.yield_event(event).await;
        }
        drop(events);
        if let Some(journal) = journal {
            if let Err(e) = journal.finish(cx.session()).await {
                return self.not_recorded(out, cx, e.into()).await;
            }
        }
        if let Some(error) = failure {
            return TurnOutcome::Failed(ThreadError::TurnFailed {
                id: self.thread_id.clone(),
                turn: self.turn,
                error,
            });
        }
        let recorded = self.record(cx, &held).await;
        if !matches!(
            recorded,
            Err(ThreadError::Store(_) | ThreadError::Checkpoint(_))
        ) {
            // Recorded, or another worker owns the thread now: not this turn's to close.
            lease.leave_mark();
        }
        if recorded.is_ok() {
            // The part is recorded: what only its recovery needed goes.
            self.runner
                .drop_part_marks(
                    &self.thread_id,
                    self.turn,
                    self.version,
                    self.resumed_checkpoint.is_some(),
                )
                .await;
        }
        match recorded {
            Ok(outcome) => {
                for event in held {
                    out.yield_event(event).await;
                }
                outcome
            }
            Err(e) => self.not_recorded(out, cx, e).await,
        }
    }

    /// Ends a turn that cannot be recorded: one error event saying why.
    async fn not_recorded(
        &self,
        out: &crate::agent::Context,
        cx: &RunContext,
        e: ThreadError,
    ) -> TurnOutcome {
        let event = AgentEvent::error(AgentError::Thread {
            message: format!(
                "turn {} of thread '{}' was not recorded: {e}",
                self.turn, self.thread_id
            )
            .into(),
        })
        .stamped(&Arc::from(cx.agent_name()), cx.run_path());
        out.yield_event(event).await;
        TurnOutcome::Failed(e)
    }

    /// Saves the checkpoint of an interrupted turn, then appends the turn's record.
    async fn record(
        &self,
        cx: &RunContext,
        held: &[AgentEvent],
    ) -> Result<TurnOutcome, ThreadError> {
        let interrupts: Vec<InterruptInfo> =
            held.iter().filter_map(|e| e.interrupt().cloned()).collect();
        let all = cx.session().events();
        let events = record_events(&self.thread_id, &all[self.restored.min(all.len())..]).await?;
        let events = match &self.replay {
            Some(keep_new) => keep_new(events),
            None => events,
        };
        let answered_by: Arc<str> = all
            .last()
            .map(|e| Arc::from(e.agent_name()))
            .unwrap_or_else(|| Arc::from(self.started_at.last().unwrap_or_default()));
        let mut answer = answer_of(&events);
        if answer.is_none() && self.restored > 0 {
            // A resumed part that added no answer of its own (the part before it stopped at a
            // safe point right after the final answer): the turn's answer is that part's.
            let restored = &all[..self.restored.min(all.len())];
            answer = answer_of(&record_events(&self.thread_id, restored).await?);
        }
        // A new interrupted part gets a checkpoint of its own (see `turn_checkpoint_id`); a
        // resumed part interrupted again writes the child of the checkpoint it claimed, under
        // that checkpoint's id (the store keeps the lineage).
        let resuming = self.resume_claim.lock().expect("claim lock").is_some();
        let checkpoint_id = match (&self.resumed_checkpoint, resuming) {
            (Some(resumed), true) => resumed.clone(),
            _ => self
                .planned_checkpoint
                .get()
                .cloned()
                .unwrap_or_else(|| turn_checkpoint_id(&self.thread_id, self.turn)),
        };
        let at_ms = crate::store::now_ms();
        let end = if interrupts.is_empty() {
            RecordEnd::Completed {
                answered_by: Arc::clone(&answered_by),
            }
        } else {
            // A resumed part's checkpoint carries its thread record: if this worker dies
            // between completing the claim and appending the record, the next resume appends
            // it (see `ThreadPart`).
            let part = resuming.then(|| ThreadPart {
                thread: self.thread_id.clone(),
                seq: self.version,
                turn: self.turn,
                at_ms,
                start: self.start.clone(),
                started_at: self.started_at.clone(),
                events_from: self.restored.min(all.len()),
                by: self.by.clone(),
            });
            let bytes = capture_bytes(
                cx,
                &self.runner.codec,
                &checkpoint_id,
                &self.runner.agent.shape(),
                self.lineage.clone(),
                interrupts.clone(),
                part,
            )
            .await?;
            let claim = self.resume_claim.lock().expect("claim lock").take();
            match claim {
                // Interrupted again: the new checkpoint is the child of the resumed one.
                Some(mut claim) => {
                    claim
                        .complete(Completion::Interrupted(bytes))
                        .await
                        .map_err(CheckpointError::from)?;
                }
                None => {
                    let store = self.runner.store.as_ref().ok_or(CheckpointError::NoStore)?;
                    // A turn's checkpoint id is the thread's and the turn's: a retried turn
                    // whose record was not appended replaces its own earlier checkpoint.
                    store
                        .save(&checkpoint_id, bytes, SaveMode::Replace)
                        .await
                        .map_err(CheckpointError::from)?;
                }
            }
            RecordEnd::Interrupted {
                checkpoint_id: checkpoint_id.clone(),
                interrupts: interrupts.clone(),
            }
        };
        let record = ThreadRecord {
            seq: self.version,
            turn: self.turn,
            at_ms,
            start: self.start.clone(),
            started_at: self.started_at.clone(),
            events,
            end,
            by: self.by.clone(),
            values: Runner::thread_values_of(cx.session()),
            run_id: self.runner.threads.run_id.clone(),
            sealed: None,
        };
        let version = self
            .store
            .append(&self.thread_id, self.version, record)
            .await?;
        if !interrupts.is_empty() {
            return Ok(TurnOutcome::Interrupted {
                checkpoint_id,
                interrupts,
            });
        }
        let claim = self.resume_claim.lock().expect("claim lock").take();
        if let (Some(resumed), Some(mut claim)) = (&self.resumed_checkpoint, claim) {
            // The thread now says the turn is done; the checkpoint is kept as a record.
            // Failing to mark it is harmless: the thread no longer points at it.
            let done = capture_bytes(
                cx,
                &self.runner.codec,
                resumed,
                &self.runner.agent.shape(),
                self.lineage.clone(),
                Vec::new(),
                None,
            )
            .await;
            if let Ok(bytes) = done {
                if let Err(e) = claim.complete(Completion::Finished(bytes)).await {
                    tracing::warn!(checkpoint = %resumed, error = %e, "could not mark a resumed turn's checkpoint finished");
                }
            }
        }
        Ok(TurnOutcome::Completed {
            answered_by,
            answer,
            version,
        })
    }
}

/// Appends the thread record a resumed part left unwritten, if the claimed `checkpoint` says
/// one goes with it and the thread (at `version`, waiting in turn `turn`) does not have it yet;
/// returns the thread's version afterwards. A part that does not match the thread is refused
/// ([`ThreadError::Corrupt`]) and nothing is written.
async fn replay_part(
    store: &Arc<dyn ThreadStore>,
    thread_id: &str,
    checkpoint_id: &str,
    checkpoint: &Checkpoint,
    version: u64,
    turn: u64,
) -> Result<u64, ThreadError> {
    let Some(part) = checkpoint.thread_part.as_ref().filter(|p| p.seq >= version) else {
        return Ok(version);
    };
    let fits = part.seq == version
        && part.thread == thread_id
        && part.turn == turn
        && part.events_from <= checkpoint.events.len();
    if !fits {
        return Err(ThreadError::Corrupt {
            id: thread_id.to_owned(),
            seq: version,
            reason: format!(
                "checkpoint '{checkpoint_id}' says it goes with record {} of thread '{}' in \
                 turn {}, which does not fit this thread (version {version}, turn {turn}); \
                 nothing was written",
                part.seq, part.thread, part.turn
            ),
        });
    }
    let record = ThreadRecord {
        seq: part.seq,
        turn: part.turn,
        at_ms: part.at_ms,
        start: part.start.clone(),
        started_at: part.started_at.clone(),
        events: checkpoint.events[part.events_from..].to_vec(),
        by: part.by.clone(),
        end: RecordEnd::Interrupted {
            checkpoint_id: checkpoint_id.to_owned(),
            interrupts: checkpoint.interrupts.clone(),
        },
        values: Runner::thread_values_in(&checkpoint.values),
        run_id: None,
        sealed: None,
    };
    tracing::info!(
        thread = thread_id,
        seq = part.seq,
        checkpoint = checkpoint_id,
        "appending the record a resumed turn's worker left unwritten"
    );
    store.append(thread_id, version, record).await
}
