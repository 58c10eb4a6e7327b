//! [`Runner`]: the top-level entry point of a run, and of its resume.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::{Arc, Mutex};

use futures::StreamExt;

use crate::agent::{Agent, AgentInput, EventStream, RunContext};
use crate::event::{AgentError, AgentEvent, InterruptInfo};
use crate::flow::FlowAgent;
use crate::generate::generate;
use crate::llm::middleware::{Middleware, Middlewares};
use crate::llm::options::RunOptions;
use crate::message::{Message, MessageRef};
use crate::resume::ResumeInfo;
use crate::session::Session;
use crate::store::{Checkpoint, CheckpointError, CheckpointStatus, CheckpointStore};

/// Runs a tree: each call starts a new run with its own [`Session`].
///
/// ```
/// use flow_runtime::{FlowAgent, FnAgent, Runner};
/// use futures::StreamExt;
/// # futures::executor::block_on(async {
/// let bot = FnAgent::new("bot", |cx, input| async move {
///     cx.say(format!("you said: {}", input.messages[0].content));
///     Ok(())
/// });
/// let runner = Runner::new(FlowAgent::new(bot));
/// let events: Vec<_> = runner.query("hello").collect().await;
/// assert_eq!(events[0].message_output().unwrap().content, "you said: hello");
/// # });
/// ```
///
/// With a [`CheckpointStore`], a run started with [`run_checkpointed`](Runner::run_checkpointed)
/// saves a checkpoint when it is interrupted (before the caller sees the interrupt event), and
/// [`resume`](Runner::resume) continues it, in this process or another one.
///
/// With a [`ThreadStore`](crate::ThreadStore), [`turn`](Runner::turn) runs one user turn of a
/// conversation kept in the store (see [`Turn`](crate::Turn)).
#[derive(Clone)]
pub struct Runner {
    pub(crate) agent: FlowAgent,
    pub(crate) streaming: bool,
    pub(crate) store: Option<Arc<dyn CheckpointStore>>,
    resuming: Arc<Mutex<HashSet<String>>>,
    middleware: Middlewares,
    pub(crate) options: Arc<RunOptions>,
    /// Where threads are kept, their routing, and the threads with a turn running here.
    pub(crate) threads: crate::turn::ThreadSettings,
}

impl fmt::Debug for Runner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Runner")
            .field("agent", &self.agent.name())
            .field("streaming", &self.streaming)
            .field("store", &self.store.is_some())
            .field("middleware", &self.middleware)
            .finish()
    }
}

impl Runner {
    /// A runner for the tree `agent` is the root of (or the subtree it heads).
    pub fn new(agent: FlowAgent) -> Self {
        Runner {
            agent,
            streaming: false,
            store: None,
            resuming: Arc::default(),
            middleware: Middlewares::default(),
            options: Arc::default(),
            threads: crate::turn::ThreadSettings::default(),
        }
    }

    /// Asks agents for streamed output (they see it as [`AgentInput::streaming`]).
    pub fn streaming(mut self, streaming: bool) -> Self {
        self.streaming = streaming;
        self
    }

    /// Options for the runs (and resumes, thread turns) this runner starts, addressed to
    /// agents by name (see [`RunOptions`]). Per run: set them on a clone, which shares everything else
    /// (store, resume claims) with the original.
    ///
    /// ```
    /// # use flow_runtime::{FlowAgent, FnAgent, Runner, RunOptions, AgentRunOptions};
    /// # let runner = Runner::new(FlowAgent::new(FnAgent::new("a", |_, _| async { Ok(()) })));
    /// let cold = RunOptions::new().agent("a", AgentRunOptions::new().temperature(0.0));
    /// let events = runner.clone().run_options(cold).query("hello");
    /// # drop(events);
    /// ```
    pub fn run_options(mut self, options: RunOptions) -> Self {
        self.options = Arc::new(options);
        self
    }

    /// Where checkpoints of interrupted runs are saved.
    pub fn checkpoint_store(mut self, store: impl CheckpointStore) -> Self {
        self.store = Some(Arc::new(store));
        self
    }

    /// Adds middleware that runs around every agent of every run this runner starts (or
    /// resumes), and around the model and tool calls of its LLM agents; it is the outermost,
    /// before the nodes' and the agents' own (see [`middleware`](crate::middleware)).
    pub fn middleware(mut self, middleware: impl Middleware) -> Self {
        self.middleware = self.middleware.with(Arc::new(middleware));
        self
    }

    /// Adds shared middleware (see [`middleware`](Runner::middleware)).
    pub fn middleware_arc(mut self, middleware: Arc<dyn Middleware>) -> Self {
        self.middleware = self.middleware.with(middleware);
        self
    }

    /// The tree this runner runs.
    pub fn agent(&self) -> &FlowAgent {
        &self.agent
    }

    /// Starts a run on the given messages, in a new session.
    pub fn run(&self, messages: impl IntoIterator<Item = Message>) -> EventStream {
        self.run_in(Session::new(), messages.into_iter().map(Arc::new))
    }

    /// Starts a run on one user message.
    pub fn query(&self, text: impl Into<String>) -> EventStream {
        self.run([Message::user(text)])
    }

    /// Starts a run in a session you provide (to preset session values, or to read the record
    /// afterwards). Use a new session per run: a session is the record of one run.
    pub fn run_in(
        &self,
        session: Arc<Session>,
        messages: impl IntoIterator<Item = MessageRef>,
    ) -> EventStream {
        let (cx, input) = self.start(session, messages.into_iter().collect());
        Arc::new(self.agent.clone()).run(cx, input)
    }

    /// Starts a run that saves a checkpoint under `checkpoint_id` if it is interrupted.
    ///
    /// The checkpoint is saved before the interrupt event reaches you; if saving fails, an
    /// error event follows the interrupt and the store keeps what it had.
    pub fn run_checkpointed(
        &self,
        checkpoint_id: impl Into<String>,
        session: Arc<Session>,
        messages: impl IntoIterator<Item = MessageRef>,
    ) -> EventStream {
        let (cx, input) = self.start(Arc::clone(&session), messages.into_iter().collect());
        let events = Arc::new(self.agent.clone()).run(cx.clone(), input);
        self.checkpointing(checkpoint_id.into(), cx, events, None)
    }

    fn start(&self, session: Arc<Session>, messages: Vec<MessageRef>) -> (RunContext, AgentInput) {
        let mut cx = RunContext::new_run(
            session,
            messages.iter().cloned(),
            self.streaming,
            self.agent.name(),
        )
        .with_options(Arc::clone(&self.options));
        if !self.middleware.is_empty() {
            cx = cx.with_run_middleware(self.middleware.clone());
        }
        let input = AgentInput {
            messages,
            streaming: self.streaming,
        };
        (cx, input)
    }

    /// Loads and checks a checkpoint: it exists, decodes, was taken in this flow, and has not
    /// been resumed to its end.
    pub async fn load_checkpoint(
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
        let checkpoint = Checkpoint::decode(checkpoint_id, &bytes)?;
        let current = self.agent.shape();
        let fingerprint = format!("{:016x}", crate::fingerprint_of(&current));
        if checkpoint.shape != current || checkpoint.fingerprint != fingerprint {
            return Err(CheckpointError::ShapeChanged {
                id: checkpoint_id.to_owned(),
                saved: checkpoint.shape,
                current,
            });
        }
        if checkpoint.status == CheckpointStatus::Resumed {
            return Err(CheckpointError::AlreadyResumed {
                id: checkpoint_id.to_owned(),
            });
        }
        Ok(checkpoint)
    }

    /// Resumes the run saved under `checkpoint_id`.
    ///
    /// `targets` maps interrupt ids ([`InterruptInfo::id`], e.g. `desk/refund`) to resume data
    /// for them; every interrupt of the checkpoint is re-entered, targeted or not (one that is
    /// not targeted may interrupt again). Events of the resumed run carry the run paths they
    /// would have had without the interrupt; agents that finished before it are not run again.
    /// If the resumed run is interrupted again, the checkpoint is replaced by the new one; when
    /// it ends, the checkpoint is marked resumed and cannot be resumed again.
    pub async fn resume(
        &self,
        checkpoint_id: &str,
        targets: HashMap<String, serde_json::Value>,
    ) -> Result<EventStream, CheckpointError> {
        let checkpoint = self.load_checkpoint(checkpoint_id).await?;
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
        let claim = ResumeClaim::take(&self.resuming, checkpoint_id)?;

        let session = checkpoint.restore_session();
        let root_input: Vec<MessageRef> = checkpoint
            .root_input
            .iter()
            .cloned()
            .map(Arc::new)
            .collect();
        let mut cx = RunContext::new_run(
            session,
            root_input.iter().cloned(),
            checkpoint.streaming,
            self.agent.name(),
        )
        .with_options(Arc::clone(&self.options));
        if !self.middleware.is_empty() {
            cx = cx.with_run_middleware(self.middleware.clone());
        }
        let input = AgentInput {
            messages: root_input,
            streaming: checkpoint.streaming,
        };
        let info = ResumeInfo::new(checkpoint.interrupts.iter().cloned(), &targets);
        let events = Arc::new(self.agent.clone()).resume(cx.clone(), input, info);
        Ok(self.checkpointing(checkpoint_id.to_owned(), cx, events, Some(claim)))
    }

    /// Forwards `events`, saving a checkpoint before each interrupt is forwarded and marking a
    /// resumed checkpoint done when its run ends uninterrupted.
    fn checkpointing(
        &self,
        id: String,
        cx: RunContext,
        mut events: EventStream,
        claim: Option<ResumeClaim>,
    ) -> EventStream {
        let store = self.store.clone();
        let shape = self.agent.shape();
        let streaming = cx.streaming();
        generate(cx.clone(), move |out| async move {
            let _claim = claim;
            let mut interrupts: Vec<InterruptInfo> = Vec::new();
            while let Some(event) = events.next().await {
                let Some(info) = event.interrupt() else {
                    out.yield_event(event).await;
                    continue;
                };
                interrupts.push(info.clone());
                let saved = save(
                    store.as_deref(),
                    &id,
                    shape.clone(),
                    streaming,
                    &cx,
                    interrupts.clone(),
                    CheckpointStatus::Interrupted,
                )
                .await;
                out.yield_event(event).await;
                if let Err(e) = saved {
                    out.emit(checkpoint_error(&cx, &id, &e));
                    return Ok(());
                }
            }
            if _claim.is_some() && interrupts.is_empty() {
                let done = save(
                    store.as_deref(),
                    &id,
                    shape,
                    streaming,
                    &cx,
                    Vec::new(),
                    CheckpointStatus::Resumed,
                )
                .await;
                if let Err(e) = done {
                    out.emit(checkpoint_error(&cx, &id, &e));
                }
            }
            Ok(())
        })
    }
}

fn checkpoint_error(cx: &RunContext, id: &str, e: &CheckpointError) -> AgentEvent {
    AgentEvent::error(AgentError::Checkpoint {
        message: format!("could not save checkpoint '{id}': {e}").into(),
    })
    .stamped(&Arc::from(cx.agent_name()), cx.run_path())
}

pub(crate) async fn save(
    store: Option<&dyn CheckpointStore>,
    id: &str,
    shape: String,
    streaming: bool,
    cx: &RunContext,
    interrupts: Vec<InterruptInfo>,
    status: CheckpointStatus,
) -> Result<(), CheckpointError> {
    let store = store.ok_or(CheckpointError::NoStore)?;
    let mut checkpoint = Checkpoint::capture(
        id,
        shape,
        streaming,
        cx.root_input(),
        cx.session(),
        interrupts,
    )
    .await?;
    checkpoint.status = status;
    store.set(id, checkpoint.encode()).await?;
    Ok(())
}

/// Marks a checkpoint as being resumed in this runner until dropped, so two concurrent resumes
/// of one checkpoint cannot both run.
struct ResumeClaim {
    set: Arc<Mutex<HashSet<String>>>,
    id: String,
}

impl ResumeClaim {
    fn take(set: &Arc<Mutex<HashSet<String>>>, id: &str) -> Result<Self, CheckpointError> {
        if !set.lock().expect("resume set lock").insert(id.to_owned()) {
            return Err(CheckpointError::AlreadyResumed { id: id.to_owned() });
        }
        Ok(ResumeClaim {
            set: Arc::clone(set),
            id: id.to_owned(),
        })
    }
}

impl Drop for ResumeClaim {
    fn drop(&mut self) {
        if let Ok(mut set) = self.set.lock() {
            set.remove(&self.id);
        }
    }
}
