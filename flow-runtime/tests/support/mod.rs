//! Helpers shared by the integration tests. Each test crate uses some of them.
#![allow(dead_code)]

pub mod contract;
pub mod dirs;
pub mod journal_contract;
pub mod ledger;
pub mod model_server;
pub mod processes;
pub mod steps;
pub mod thread_contract;

use std::sync::atomic::{AtomicIsize, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use agentweave_runtime::model::{ChatModel, RetryPolicy, ScriptStep, ScriptedModel, Usage};
use agentweave_runtime::RunRequest;
use agentweave_runtime::{
    set_sub_agents, tool_fn, Action, AgentEvent, ChatModelAgent, CheckpointMeta, CheckpointStore,
    Claim, Completion, FlowAgent, InMemoryStore, Message, PendingCheckpoint, Role, Runner,
    SaveMode, Session, StoreError, ToolError,
};
use async_trait::async_trait;
use futures::StreamExt;
use schemars::JsonSchema;
use serde::Deserialize;

/// A store whose writes (saves and completions) fail ("disk full") after the first
/// `ok_writes`.
#[derive(Clone)]
pub struct FailingStore {
    /// Where the writes that succeed go.
    pub inner: InMemoryStore,
    /// How many writes may still succeed.
    pub ok_writes: Arc<AtomicUsize>,
}

impl FailingStore {
    fn write(&self, id: &str) -> Result<(), StoreError> {
        match self
            .ok_writes
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
        {
            Ok(_) => Ok(()),
            Err(_) => Err(StoreError::Other {
                id: id.into(),
                message: "disk full".into(),
            }),
        }
    }
}

#[async_trait]
impl CheckpointStore for FailingStore {
    async fn get(&self, id: &str) -> Result<Option<Vec<u8>>, StoreError> {
        self.inner.get(id).await
    }
    async fn save(&self, id: &str, bytes: Vec<u8>, mode: SaveMode) -> Result<u64, StoreError> {
        self.write(id)?;
        self.inner.save(id, bytes, mode).await
    }
    async fn claim(&self, id: &str, lease: Duration) -> Result<Claim, StoreError> {
        self.inner.claim(id, lease).await
    }
    async fn renew(&self, claim: &Claim, lease: Duration) -> Result<(), StoreError> {
        self.inner.renew(claim, lease).await
    }
    async fn release(&self, claim: &Claim) -> Result<(), StoreError> {
        self.inner.release(claim).await
    }
    async fn complete(&self, claim: &Claim, completion: Completion) -> Result<u64, StoreError> {
        self.write(&claim.id)?;
        self.inner.complete(claim, completion).await
    }
    async fn history(&self, id: &str) -> Result<Vec<CheckpointMeta>, StoreError> {
        self.inner.history(id).await
    }
    async fn pending(&self, limit: usize) -> Result<Vec<PendingCheckpoint>, StoreError> {
        self.inner.pending(limit).await
    }
    async fn purge_finished(&self, age: Duration) -> Result<usize, StoreError> {
        self.inner.purge_finished(age).await
    }
    async fn delete(&self, id: &str) -> Result<(), StoreError> {
        self.inner.delete(id).await
    }
}

/// One event as a line: `agent@path: content`, then ` [calls TOOL ARGS]` for tool calls,
/// ` => ACTION` for an action and ` error: TEXT` for an error.
pub fn line(e: &AgentEvent) -> String {
    line_with(e, e.message_output())
}

/// [`line`] with `message` as the event's message (a stream's, once read).
pub fn line_with(e: &AgentEvent, message: Option<&Message>) -> String {
    let mut out = format!("{}@{}:", e.agent_name(), e.run_path());
    if let Some(m) = message {
        out.push(' ');
        out.push_str(&m.content);
        for c in &m.tool_calls {
            out.push_str(&format!(" [calls {} {}]", c.name, c.arguments));
        }
    }
    match &e.action {
        Some(Action::TransferToAgent(to)) => out.push_str(&format!(" => transfer {to}")),
        Some(Action::Exit) => out.push_str(" => exit"),
        Some(Action::BreakLoop(by)) => out.push_str(&format!(" => break_loop {by}")),
        Some(Action::Interrupted(i)) => out.push_str(&format!(" => interrupt {}", i.id)),
        Some(Action::Custom(v)) => out.push_str(&format!(" => custom {v}")),
        Some(Action::Finish(v)) => out.push_str(&format!(" => finish {v}")),
        None => {}
    }
    if let Some(err) = &e.error {
        out.push_str(&format!(" error: {err}"));
    }
    out
}

/// [`line`] for each event.
pub fn lines(events: &[AgentEvent]) -> Vec<String> {
    events.iter().map(line).collect()
}

// The arguments of the clerk's `lookup_order` tool (no doc comment: it would become the
// schema's description, which the wire-format tests compare).
#[derive(Deserialize, JsonSchema)]
pub struct LookupOrder {
    /// The order number.
    pub order_id: u64,
}

/// `clerk`, a ChatModelAgent on `model` that looks orders up with its `lookup_order` tool
/// (every order is "a kettle"), retrying model calls per `retry`.
pub fn clerk(model: impl ChatModel, retry: RetryPolicy) -> FlowAgent {
    let clerk = ChatModelAgent::builder("clerk", model)
        .instruction("You look up orders.")
        .tool(tool_fn(
            "lookup_order",
            "Finds an order.",
            |a: LookupOrder| async move {
                Ok::<_, ToolError>(format!("order {}: a kettle", a.order_id))
            },
        ))
        .retry(retry)
        .build()
        .unwrap();
    FlowAgent::new(clerk)
}

/// Runs `flow` on one user message, `question`, in a new session (the answer streamed if
/// `streaming`): the session and the events.
pub async fn run_question(
    flow: FlowAgent,
    question: &str,
    streaming: bool,
) -> (Arc<Session>, Vec<AgentEvent>) {
    let session = Session::new();
    let events: Vec<AgentEvent> = Runner::builder(flow)
        .streaming(streaming)
        .build()
        .run(RunRequest::new([Message::user(question)]).session(Arc::clone(&session)))
        .collect()
        .await;
    (session, events)
}

/// A retry policy of `retries` retries with a 1 ms first backoff.
pub fn fast(retries: u32) -> RetryPolicy {
    RetryPolicy::new(retries).initial_backoff(Duration::from_millis(1))
}

/// A message as a line: `role: content`, then ` [call ID NAME ARGS]` for each tool call and
/// ` [result of ID]` for a tool result.
pub fn show(m: &Message) -> String {
    let mut s = format!("{}: {}", m.role, m.content);
    for c in &m.tool_calls {
        s.push_str(&format!(" [call {} {} {}]", c.id, c.name, c.arguments));
    }
    if let Some(id) = &m.tool_call_id {
        s.push_str(&format!(" [result of {id}]"));
    }
    s
}

/// `triage` (its model named `triage-model`, each reply 100 input and 10 output tokens)
/// transferring to `refund`, its only sub-agent.
pub fn triage_to(refund: ChatModelAgent) -> FlowAgent {
    let triage = ChatModelAgent::builder(
        "triage",
        ScriptedModel::rules()
            .otherwise(ScriptStep::transfer("refund").with_usage(Usage::new(100, 10)))
            .named("triage-model"),
    )
    .build()
    .unwrap();
    set_sub_agents(FlowAgent::new(triage), [FlowAgent::new(refund)]).unwrap()
}

/// Counts itself as alive in a shared counter while it exists: held by a running agent or
/// tool, the counter tells how many are still running (and, once runs end, that none leaked).
pub struct Held(Arc<AtomicIsize>);

impl Held {
    /// Adds one to `count` until dropped.
    pub fn new(count: &Arc<AtomicIsize>) -> Self {
        count.fetch_add(1, Ordering::SeqCst);
        Held(Arc::clone(count))
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Each message as its role and content.
pub fn contents<M: std::borrow::Borrow<Message>>(messages: &[M]) -> Vec<(Role, String)> {
    messages
        .iter()
        .map(|m| {
            let m = m.borrow();
            (m.role, m.content.clone())
        })
        .collect()
}

/// A user message as [`contents`] shows it.
pub fn user(text: &str) -> (Role, String) {
    (Role::User, text.to_owned())
}

/// Runs `body` with `subscriber` as this thread's default, so that the spans `body` makes
/// reach it even while other tests of the binary run on other threads with none.
///
/// tracing keeps one interest per callsite for the whole process. While only one dispatcher
/// is alive, it asks the *registering thread's* default instead of every live dispatcher: a
/// callsite first hit by another test's thread (no subscriber) is then cached as "never" and
/// this test's subscriber never sees its spans; a rebuild from such a thread also sets the
/// global level filter to off. A second dispatcher kept alive for the whole process makes
/// tracing ask every live dispatcher, this test's included; the cache is then built again
/// once the subscriber is set, for callsites cached before.
pub fn with_subscriber<S, R>(subscriber: S, body: impl FnOnce() -> R) -> R
where
    S: tracing::Subscriber + Send + Sync + 'static,
{
    static KEEPER: std::sync::OnceLock<tracing::Dispatch> = std::sync::OnceLock::new();
    KEEPER.get_or_init(|| tracing::Dispatch::new(tracing::subscriber::NoSubscriber::default()));
    tracing::subscriber::with_default(subscriber, || {
        tracing::callsite::rebuild_interest_cache();
        body()
    })
}
