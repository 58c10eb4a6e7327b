//! [`Runner`]: the top-level entry point of a run, and of its resume.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;

use super::claims::ClaimGuard;
use super::request::{ResumeRequest, ResumeTarget, RunRequest};
use crate::agent::generate;
use crate::agent::middleware::Middlewares;
use crate::agent::options::RunOptions;
use crate::agent::FlowAgent;
use crate::agent::{Agent, AgentInput, EventStream, RunContext};
use crate::event::{AgentError, AgentEvent, InterruptInfo};
use crate::limits::RunLimits;
use crate::message::MessageRef;
use crate::resume::ResumeInfo;
use crate::session::Session;
use crate::store::{
    Checkpoint, CheckpointCodec, CheckpointError, CheckpointStatus, CheckpointStore, Completion,
    PendingInterrupt, SaveMode, StoreError, ThreadPart,
};

/// Runs a tree: each call starts a new run with its own [`Session`].
///
/// ```
/// use agentweave_runtime::{FlowAgent, FnAgent, Runner};
/// use futures::StreamExt;
/// # futures::executor::block_on(async {
/// let bot = FnAgent::new("bot", |cx, input| async move {
///     cx.say(format!("you said: {}", input.messages[0].content));
///     Ok(())
/// });
/// let runner = Runner::new(FlowAgent::new(bot));
/// let events: Vec<_> = runner.run("hello").collect().await;
/// assert_eq!(events[0].message_output().unwrap().content, "you said: hello");
/// # });
/// ```
///
/// With a [`CheckpointStore`], a run started with [`RunRequest::checkpoint`](crate::RunRequest::checkpoint)
/// saves a checkpoint when it is interrupted (before the caller sees the interrupt event), and
/// [`resume`](Runner::resume) continues it, in this process or another one. A resume first
/// claims the checkpoint in the store: of all the runners, processes and machines that resume
/// one checkpoint, exactly one runs it (see [the store contract](crate::store)).
///
/// With a [`ThreadStore`](crate::ThreadStore), [`turn`](Runner::turn) runs one user turn of a
/// conversation kept in the store (see [`Turn`](crate::Turn)).
#[derive(Clone)]
pub struct Runner {
    /// The tree, shared by every run (a run takes an `Arc` of it, no copy).
    pub(crate) agent: Arc<FlowAgent>,
    pub(crate) streaming: bool,
    pub(crate) store: Option<Arc<dyn CheckpointStore>>,
    pub(crate) middleware: Middlewares,
    pub(crate) options: Arc<RunOptions>,
    pub(crate) codec: CheckpointCodec,
    pub(crate) limits: RunLimits,
    /// What every run may spend (`None`: no budgets).
    pub(crate) budgets: Option<Arc<crate::budget::Budgets>>,
    /// The budgets shared with other runners, per thread and tenant (`None`: none).
    pub(crate) spending: Option<Arc<super::spending::SpendingGuard>>,
    pub(crate) lease: Duration,
    /// Where threads are kept, their routing, and the threads with a turn running here.
    pub(crate) threads: super::turn::ThreadSettings,
    /// Where run journals are kept.
    pub(crate) journal: Option<Arc<dyn crate::store::JournalStore>>,
    /// How much of each run is journaled before it ends.
    pub(crate) durability: super::durability::Durability,
    /// The fingerprint of the tree's shape, as checkpoints and journal steps carry it (made
    /// once: every journaled run needs it).
    pub(crate) flow_print: Arc<str>,
    /// What the runs get from the world: waits, the clock, fresh ids.
    pub(crate) host: Arc<dyn crate::host::Host>,
}

impl fmt::Debug for Runner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Runner")
            .field("agent", &self.agent.name())
            .field("streaming", &self.streaming)
            .field("store", &self.store.is_some())
            .field("lease", &self.lease)
            .field("limits", &self.limits)
            .field("budgets", &self.budgets)
            .field("codec", &self.codec)
            .field("middleware", &self.middleware)
            .finish()
    }
}

impl Runner {
    /// The tree this runner runs.
    pub fn agent(&self) -> &FlowAgent {
        &self.agent
    }

    /// Starts a run (see [`RunRequest`]): on one user message (`runner.run("hello")`), on
    /// messages, in a session given, checkpointed under an id if it is interrupted.
    ///
    /// The run proceeds as its events are read; dropping the stream stops it.
    pub fn run(&self, request: impl Into<RunRequest>) -> EventStream {
        let RunRequest {
            messages,
            session,
            checkpoint,
            options,
        } = request.into();
        let runner = self.for_request(options.as_ref(), None);
        let session = session.unwrap_or_else(Session::new);
        match checkpoint {
            None => {
                let (cx, input) = runner.new_context(session, messages);
                Arc::clone(&runner.agent).run(cx, input)
            }
            Some((id, mode)) => runner.fresh(id, mode, session, messages),
        }
    }

    fn fresh(
        &self,
        id: String,
        mode: SaveMode,
        session: Arc<Session>,
        messages: impl IntoIterator<Item = MessageRef>,
    ) -> EventStream {
        let (cx, input) = self.new_context(Arc::clone(&session), messages.into_iter().collect());
        let run_id = self.host.new_id();
        let cx = cx.with_idempotency_scope(format!("{run_id}.0"));
        let agent = Arc::clone(&self.agent);
        let lineage = Lineage {
            id,
            run_id,
            resumes: 0,
            first_save: mode,
            claim: None,
        };
        self.checkpointing(lineage, cx, move |cx| agent.run(cx, input))
    }

    /// The context of a new run of this runner: the one place a run's context is set up, for
    /// every request (a run, a resume, a thread's turn, its recovery, a re-run from a step).
    /// It starts at agent `start` on `messages` with `session`, and carries the runner's
    /// options, host, limits and middleware; a thread's turn (`thread`: its earlier turns)
    /// also gets its run's cancel request. Callers add what is theirs alone (an idempotency
    /// scope, the journal's replay before the middleware).
    #[inline]
    pub(super) fn run_context(
        &self,
        session: Arc<Session>,
        messages: impl IntoIterator<Item = MessageRef>,
        start: impl Into<Arc<str>>,
        thread: Option<Arc<crate::history::ThreadHistory>>,
    ) -> RunContext {
        let mut cx = RunContext::new_run(session, messages, self.streaming, start)
            .with_options(Arc::clone(&self.options))
            .with_host(Arc::clone(&self.host))
            .with_limits(self.limits);
        if !self.middleware.is_empty() {
            cx = cx.with_run_middleware(self.middleware.clone());
        }
        if let Some(budgets) = &self.budgets {
            cx = cx.with_budgets(Arc::clone(budgets));
        }
        if let Some(spending) = &self.spending {
            cx = cx.with_spending(Arc::clone(spending) as Arc<dyn crate::spending::SpendingGate>);
        }
        if let Some(history) = thread {
            cx = cx
                .with_thread(history)
                .with_cancel(self.threads.cancel.clone().unwrap_or_default(), false);
            if let Some(steer) = &self.threads.steer {
                cx = cx.with_steering(steer.clone());
            }
        }
        cx
    }

    fn new_context(
        &self,
        session: Arc<Session>,
        messages: Vec<MessageRef>,
    ) -> (RunContext, AgentInput) {
        let cx = self.run_context(session, messages, self.agent.shared_name(), None);
        // The root agent's input shares the context's copy.
        let input = AgentInput {
            messages: cx.root_messages(),
            streaming: self.streaming,
        };
        (cx, input)
    }

    /// Loads and checks a checkpoint without claiming it: it exists, decodes, was taken in
    /// this flow, and has not been resumed to its end.
    pub(crate) async fn load_checkpoint(
        &self,
        checkpoint_id: &str,
    ) -> Result<Checkpoint, CheckpointError> {
        let store = self.store.as_ref().ok_or(CheckpointError::NoStore)?;
        let bytes = store
            .get(checkpoint_id)
            .await?
            .ok_or_else(|| CheckpointError::NotFound {
                id: checkpoint_id.to_owned(),
            })?;
        self.check(checkpoint_id, &bytes, self.agent.name())
    }

    /// Decodes `bytes` and checks they can resume in this runner, as a run that started at
    /// agent `root` (the runner's agent, or the agent a thread's turn started at).
    fn check(
        &self,
        checkpoint_id: &str,
        bytes: &[u8],
        root: &str,
    ) -> Result<Checkpoint, CheckpointError> {
        let checkpoint = self.codec.decode(checkpoint_id, bytes)?;
        let current = self.agent.shape();
        let fingerprint = format!("{:016x}", crate::fingerprint_of(&current));
        if checkpoint.shape != current || checkpoint.fingerprint != fingerprint {
            return Err(CheckpointError::ShapeChanged {
                id: checkpoint_id.to_owned(),
                saved: checkpoint.shape,
                current,
            });
        }
        let names = self.agent.all_names();
        let opaque = self.agent.opaque_leaves();
        checkpoint.check_names_in(
            checkpoint_id,
            root,
            |n| names.contains(n),
            |n| opaque.contains(n),
        )?;
        if checkpoint.status == CheckpointStatus::Resumed {
            return Err(CheckpointError::AlreadyResumed {
                id: checkpoint_id.to_owned(),
            });
        }
        Ok(checkpoint)
    }

    /// The runs waiting for their resume in this runner's store, oldest first, at most
    /// `limit`: each with its id, the flow it was taken in, its interrupts (ids and infos)
    /// and when it was saved. What an approvals screen lists. Checkpoints that do not decode
    /// are left out (and stay in the store).
    pub(crate) async fn pending_interrupts(
        &self,
        limit: usize,
    ) -> Result<Vec<PendingInterrupt>, CheckpointError> {
        let store = self.store.as_ref().ok_or(CheckpointError::NoStore)?;
        let pending = store.pending(limit).await?;
        Ok(pending
            .into_iter()
            .filter_map(|p| match self.codec.decode(&p.id, &p.bytes) {
                Ok(c) => Some(PendingInterrupt {
                    id: p.id,
                    version: p.version,
                    created_at: p.created_at,
                    flow: c.shape,
                    interrupts: c.interrupts,
                }),
                Err(e) => {
                    tracing::warn!(checkpoint = %p.id, error = %e, "pending checkpoint does not decode");
                    None
                }
            })
            .collect())
    }

    /// Resumes a checkpointed run (see [`ResumeRequest`]).
    ///
    /// First it claims the checkpoint in the store (for the runner's
    /// [lease](crate::RunnerBuilder::lease)), unless the request brings a claim the worker holds: if
    /// another resume holds it or has completed it, this returns [`CheckpointError::Claimed`]
    /// or [`CheckpointError::AlreadyResumed`] and runs nothing. Any other error (the checkpoint
    /// does not decode, was taken in another flow, the answers name an unknown interrupt)
    /// gives the claim back and leaves the store as it was.
    ///
    /// Events of the resumed run carry the run paths they would have had without the
    /// interrupt; agents that finished before it are not run again. If the resumed run is
    /// interrupted again, its new checkpoint becomes the head of the id's history (a child of
    /// the resumed one); when it ends, the checkpoint is marked finished and cannot be resumed
    /// again. Dropping the event stream before the end gives the claim back (when a Tokio
    /// runtime is there to do it; else the lease runs out). The resumed run streams as this
    /// runner says ([`RunnerBuilder::streaming`](crate::RunnerBuilder::streaming)), whatever the interrupted run did.
    pub async fn resume(&self, request: ResumeRequest) -> Result<EventStream, CheckpointError> {
        let ResumeRequest {
            target,
            answers,
            options,
        } = request;
        let runner = self.for_request(options.as_ref(), None);
        match target {
            ResumeTarget::Id(checkpoint_id) => {
                let restored = runner
                    .restore_claimed(&checkpoint_id, &answers, runner.agent.name(), |c| {
                        format!("{}.{}", run_id_of(&checkpoint_id, c), c.resumes)
                    })
                    .await?;
                Ok(runner.resume_restored(&checkpoint_id, restored))
            }
            ResumeTarget::Claimed(held) => runner.resume_claimed(held, answers).await,
        }
    }

    /// Runs a restored checkpoint's resume (see [`resume`](Runner::resume)), completing its
    /// claim when it ends or is interrupted again.
    pub(crate) fn resume_restored(&self, checkpoint_id: &str, restored: Restored) -> EventStream {
        let Restored {
            checkpoint,
            guard,
            cx,
            input,
            info,
            ..
        } = restored;
        let run_id = run_id_of(checkpoint_id, &checkpoint);
        let agent = Arc::clone(&self.agent);
        let lineage = Lineage {
            id: checkpoint_id.to_owned(),
            run_id,
            resumes: checkpoint.resumes + 1,
            first_save: SaveMode::Create,
            claim: Some(guard),
        };
        self.checkpointing(lineage, cx, move |cx| agent.resume(cx, input, info))
    }

    /// Claims checkpoint `checkpoint_id` (see [`claim_checkpoint`](Self::claim_checkpoint)) and
    /// restores its run, starting at agent `start`: the session, the run's context (this
    /// runner's options, limits and middleware; tool calls keyed under `scope` of the
    /// checkpoint), its input, and the resume data for `targets`. Written once for
    /// [`Runner::resume`] and a resumed thread turn.
    pub(crate) async fn restore_claimed(
        &self,
        checkpoint_id: &str,
        targets: &HashMap<String, serde_json::Value>,
        start: &str,
        scope: impl FnOnce(&Checkpoint) -> String,
    ) -> Result<Restored, CheckpointError> {
        let (checkpoint, guard) = self.claim_checkpoint(checkpoint_id, targets, start).await?;
        Ok(self.restore(checkpoint, guard, targets, start, scope))
    }

    /// Restores a checkpoint whose claim `guard` holds (see
    /// [`restore_claimed`](Self::restore_claimed)).
    pub(crate) fn restore(
        &self,
        checkpoint: Checkpoint,
        guard: ClaimGuard,
        targets: &HashMap<String, serde_json::Value>,
        start: &str,
        scope: impl FnOnce(&Checkpoint) -> String,
    ) -> Restored {
        let session = checkpoint.restore_session();
        let restored = session.len();
        let root_input: Vec<MessageRef> = checkpoint
            .root_input
            .iter()
            .cloned()
            .map(Arc::new)
            .collect();
        // The resuming runner's settings (streaming, options), not the interrupted run's.
        let cx = self
            .run_context(session, root_input, start, None)
            .with_idempotency_scope(scope(&checkpoint));
        let input = AgentInput {
            messages: cx.root_messages(),
            streaming: self.streaming,
        };
        let info = ResumeInfo::new(checkpoint.interrupts.iter().cloned(), targets);
        Restored {
            checkpoint,
            guard,
            cx,
            input,
            info,
            restored,
        }
    }

    /// Claims checkpoint `checkpoint_id` for this runner's lease and checks it can resume here
    /// with `targets`, as a run that started at agent `root`; on any error after the claim,
    /// gives the claim back.
    pub(crate) async fn claim_checkpoint(
        &self,
        checkpoint_id: &str,
        targets: &HashMap<String, serde_json::Value>,
        root: &str,
    ) -> Result<(Checkpoint, ClaimGuard), CheckpointError> {
        let store = self.store.as_ref().ok_or(CheckpointError::NoStore)?;
        let claim = store.claim(checkpoint_id, self.lease).await?;
        self.check_claimed(ClaimGuard::new(Arc::clone(store), claim), targets, root)
            .await
    }

    /// Checks that the checkpoint `guard` holds can resume here with `targets`, as a run that
    /// started at agent `root`; on an error, gives the claim back.
    pub(crate) async fn check_claimed(
        &self,
        guard: ClaimGuard,
        targets: &HashMap<String, serde_json::Value>,
        root: &str,
    ) -> Result<(Checkpoint, ClaimGuard), CheckpointError> {
        let claim = guard.claim().expect("a new guard holds its claim");
        let checkpoint_id = &claim.id[..];
        match self
            .check(checkpoint_id, &claim.bytes, root)
            .and_then(|c| check_targets(checkpoint_id, &c, targets).map(|()| c))
        {
            Ok(c) => Ok((c, guard)),
            Err(e) => {
                guard.release().await;
                Err(e)
            }
        }
    }

    /// Runs `start` and forwards its events, saving a checkpoint before each interrupt is
    /// forwarded (an interrupt whose checkpoint could not be saved is not forwarded: its
    /// error is) and completing a resume's claim when the run ends.
    fn checkpointing(
        &self,
        mut lineage: Lineage,
        cx: RunContext,
        start: impl FnOnce(RunContext) -> EventStream + Send + 'static,
    ) -> EventStream {
        let store = self.store.clone();
        let codec = self.codec.clone();
        let shape = self.agent.shape();
        let lease = self.lease;
        let runner = self.clone();
        generate(cx.clone(), move |out| async move {
            let id = lineage.id.clone();
            let Some(store) = store else {
                out.emit(checkpoint_error(&cx, &id, &CheckpointError::NoStore));
                return Ok(());
            };
            if lineage.claim.is_none() && lineage.first_save == SaveMode::Create {
                // Refuse early a run that could not be saved: nothing runs.
                match store.history(&id).await {
                    Ok(history) => {
                        if let Some(head) = history.last().filter(|h| {
                            matches!(
                                h.state,
                                crate::store::CheckpointState::Pending
                                    | crate::store::CheckpointState::Claimed { .. }
                            )
                        }) {
                            let e = StoreError::Pending {
                                id: id.clone(),
                                version: head.version,
                            };
                            out.emit(checkpoint_error(&cx, &id, &e.into()));
                            return Ok(());
                        }
                    }
                    Err(e) => {
                        out.emit(checkpoint_error(&cx, &id, &e.into()));
                        return Ok(());
                    }
                }
            }
            let scope = cx.idempotency_scope().to_owned();
            let mut journal = match runner.open_journal(id.clone(), scope, cx.session()).await {
                Ok(journal) => journal,
                Err(e) => {
                    out.emit(journal_error(&cx, &id, &e));
                    return Ok(());
                }
            };
            let mut events = start(cx.clone());
            let mut renewed = Instant::now();
            let mut saved_once = false;
            let mut interrupts: Vec<InterruptInfo> = Vec::new();
            while let Some(event) = events.next().await {
                if let Some(guard) = &lineage.claim {
                    if let Some(claim) = guard.claim() {
                        if renewed.elapsed() >= lease / 2 {
                            if let Err(e) = store.renew(claim, lease).await {
                                out.emit(checkpoint_error(&cx, &id, &e.into()));
                                return Ok(());
                            }
                            renewed = Instant::now();
                        }
                    }
                }
                if let Some(journal) = &mut journal {
                    // Sync: the event's step is stored before the event is passed on.
                    if !journal.step_in_line(cx.session()) {
                        if let Err(e) = journal.step(cx.session()).await {
                            out.emit(journal_error(&cx, &id, &e));
                            return Ok(());
                        }
                    }
                }
                let Some(info) = event.interrupt() else {
                    out.yield_event(event).await;
                    continue;
                };
                if let Some(journal) = &mut journal {
                    // Async: the steps kept so far are stored before the checkpoint.
                    if let Err(e) = journal.store_kept().await {
                        out.emit(journal_error(&cx, &id, &e));
                        return Ok(());
                    }
                }
                interrupts.push(info.clone());
                let captured =
                    capture(&cx, &codec, &id, &shape, &lineage, interrupts.clone()).await;
                let saved = match captured {
                    Err(e) => Err(e),
                    Ok(bytes) => {
                        let claim = lineage.claim.as_mut().and_then(|g| g.claim().cloned());
                        match (saved_once, claim) {
                            (false, Some(claim)) => {
                                let done =
                                    store.complete(&claim, Completion::Interrupted(bytes)).await;
                                if done.is_ok() {
                                    lineage.claim.as_mut().map(ClaimGuard::disarm);
                                }
                                done
                            }
                            (false, None) => store.save(&id, bytes, lineage.first_save).await,
                            (true, _) => store.save(&id, bytes, SaveMode::Replace).await,
                        }
                        .map_err(CheckpointError::from)
                    }
                };
                // The interrupt is passed on only once its checkpoint is stored: a caller never
                // shows an interrupt that cannot be resumed (a run that lost the id to another
                // sees only the error).
                match saved {
                    Ok(_) => {
                        saved_once = true;
                        out.yield_event(event).await;
                    }
                    Err(e) => {
                        out.emit(checkpoint_error(&cx, &id, &e));
                        return Ok(());
                    }
                }
            }
            if let Some(journal) = journal {
                if let Err(e) = journal.finish(cx.session()).await {
                    out.emit(journal_error(&cx, &id, &e));
                    return Ok(());
                }
            }
            let claim = lineage.claim.as_ref().and_then(|g| g.claim().cloned());
            if let Some(claim) = claim {
                // The resumed run ended without an interrupt: record its end.
                let bytes = capture(&cx, &codec, &id, &shape, &lineage, Vec::new()).await;
                let done = match bytes {
                    Ok(bytes) => store
                        .complete(&claim, Completion::Finished(bytes))
                        .await
                        .map_err(CheckpointError::from),
                    Err(e) => Err(e),
                };
                match done {
                    Ok(_) => {
                        lineage.claim.as_mut().map(ClaimGuard::disarm);
                    }
                    Err(e) => {
                        // The outcome is not recorded: the checkpoint is pending again, so
                        // it can be resumed once more (tools see the same idempotency keys).
                        if let Some(guard) = lineage.claim.as_mut() {
                            guard.disarm();
                        }
                        if let Err(release) = store.release(&claim).await {
                            tracing::warn!(checkpoint = %id, error = %release, "could not give a claim back");
                        }
                        out.emit(checkpoint_error(&cx, &id, &e));
                    }
                }
            }
            Ok(())
        })
    }
}

/// What a checkpointing run saves under, and the claim it resumes with.
struct Lineage {
    id: String,
    run_id: String,
    /// The resumes before the checkpoints this run writes.
    resumes: u32,
    /// How a fresh run's first checkpoint is saved.
    first_save: SaveMode,
    claim: Option<ClaimGuard>,
}

/// The run id of checkpoint `checkpoint_id`'s lineage (its own id for checkpoints written
/// before run ids existed).
pub(crate) fn run_id_of(checkpoint_id: &str, c: &Checkpoint) -> String {
    match c.run_id.is_empty() {
        true => checkpoint_id.to_owned(),
        false => c.run_id.clone(),
    }
}

pub(crate) fn check_targets(
    checkpoint_id: &str,
    checkpoint: &Checkpoint,
    targets: &HashMap<String, serde_json::Value>,
) -> Result<(), CheckpointError> {
    for target in targets.keys() {
        if !checkpoint.interrupts.iter().any(|i| &i.id == target) {
            let known: Vec<&str> = checkpoint.interrupts.iter().map(|i| &*i.id).collect();
            return Err(CheckpointError::UnknownInterrupt {
                id: checkpoint_id.to_owned(),
                interrupt: target.clone(),
                known: known.join(", "),
            });
        }
    }
    Ok(())
}

fn journal_error(cx: &RunContext, id: &str, e: &crate::store::JournalError) -> AgentEvent {
    AgentEvent::error(AgentError::Checkpoint {
        message: format!("could not write the journal of run '{id}': {e}").into(),
    })
    .stamped(&Arc::from(cx.agent_name()), cx.run_path())
}

fn checkpoint_error(cx: &RunContext, id: &str, e: &CheckpointError) -> AgentEvent {
    AgentEvent::error(AgentError::Checkpoint {
        message: format!("could not save checkpoint '{id}': {e}").into(),
    })
    .stamped(&Arc::from(cx.agent_name()), cx.run_path())
}

/// Captures the run's session as checkpoint bytes: interrupted at `interrupts`, or, with none,
/// the final record of a run that was resumed to its end.
async fn capture(
    cx: &RunContext,
    codec: &CheckpointCodec,
    id: &str,
    shape: &str,
    lineage: &Lineage,
    interrupts: Vec<InterruptInfo>,
) -> Result<Vec<u8>, CheckpointError> {
    capture_bytes(
        cx,
        codec,
        id,
        shape,
        (lineage.run_id.clone(), lineage.resumes),
        interrupts,
        None,
    )
    .await
}

/// Captures the run's session as checkpoint bytes, in the lineage `(run_id, resumes)`, with
/// the thread record that goes with it (a resumed turn's), encoded (and signed, if it has a
/// key) by `codec`.
pub(crate) async fn capture_bytes(
    cx: &RunContext,
    codec: &CheckpointCodec,
    id: &str,
    shape: &str,
    (run_id, resumes): (String, u32),
    interrupts: Vec<InterruptInfo>,
    thread_part: Option<ThreadPart>,
) -> Result<Vec<u8>, CheckpointError> {
    let mut checkpoint = Checkpoint::capture(
        id,
        shape.to_owned(),
        cx.streaming(),
        cx.root_input(),
        cx.session(),
        interrupts,
        (run_id, resumes),
    )
    .await?;
    checkpoint.thread_part = thread_part;
    if checkpoint.interrupts.is_empty() {
        checkpoint.status = CheckpointStatus::Resumed;
    }
    Ok(codec.encode(&checkpoint))
}

/// A claimed checkpoint restored for its resume (see [`Runner::restore_claimed`]).
pub(crate) struct Restored {
    /// The checkpoint.
    pub(crate) checkpoint: Checkpoint,
    /// The claim on it, given back if the resume ends unrecorded.
    pub(crate) guard: ClaimGuard,
    /// The resumed run's context.
    pub(crate) cx: RunContext,
    /// The run's input.
    pub(crate) input: AgentInput,
    /// What the interrupts are answered with.
    pub(crate) info: ResumeInfo,
    /// How many events the restored session holds.
    pub(crate) restored: usize,
}

impl Runner {
    /// This runner with `request`'s per-run settings (options, durability, principal) in place
    /// of its own: a cheap clone sharing stores, registry and claims.
    pub(crate) fn for_request(
        &self,
        options: Option<&Arc<RunOptions>>,
        durability: Option<super::durability::Durability>,
    ) -> std::borrow::Cow<'_, Runner> {
        if options.is_none() && durability.is_none() {
            return std::borrow::Cow::Borrowed(self);
        }
        let mut runner = self.clone();
        if let Some(options) = options {
            runner.options = Arc::clone(options);
        }
        if let Some(mode) = durability {
            runner.durability = mode;
        }
        std::borrow::Cow::Owned(runner)
    }
}
