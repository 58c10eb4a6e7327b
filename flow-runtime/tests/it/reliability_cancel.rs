//! Cancellation: dropping the event stream at any await point of a depth-3 run (root -> a -> b,
//! streamed model answers, tool calls, a streamed message, an interrupt) leaves nothing alive:
//! no agent body, tool call, model stream, message-stream source or checkpoint write; and a
//! checkpoint being written when the run is dropped is either wholly written or not at all.

use std::pin::Pin;
use std::sync::atomic::{AtomicIsize, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll};
use std::time::Duration;

use agentweave_runtime::model::{ChatRequest, ModelError, ModelStream, ScriptStep, ScriptedModel};
use agentweave_runtime::RunRequest;
use agentweave_runtime::RunnerBuilder;
use agentweave_runtime::{
    set_sub_agents, tool_fn, Action, AgentEvent, ChatModel, ChatModelAgent, CheckpointMeta,
    CheckpointStore, Claim, Completion, EventOutput, EventStream, FlowAgent, FnAgent,
    InMemoryStore, Message, MessageStream, PendingCheckpoint, Runner, SaveMode, StoreError,
    ToolCall, ToolError,
};
use async_trait::async_trait;
use futures::{Stream, StreamExt};
use serde_json::json;

/// Counts live objects: each [`Guard`] is one, until dropped.
#[derive(Clone, Default)]
struct Live {
    now: Arc<AtomicIsize>,
    ever: Arc<AtomicUsize>,
}

struct Guard(Live);

impl Live {
    fn guard(&self) -> Guard {
        self.now.fetch_add(1, Ordering::SeqCst);
        self.ever.fetch_add(1, Ordering::SeqCst);
        Guard(self.clone())
    }
    fn now(&self) -> isize {
        self.now.load(Ordering::SeqCst)
    }
    fn ever(&self) -> usize {
        self.ever.load(Ordering::SeqCst)
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        self.0.now.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Returns `Pending` once (waking itself): an await point.
struct Yield(bool);

impl std::future::Future for Yield {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<()> {
        if self.0 {
            return Poll::Ready(());
        }
        self.0 = true;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

fn pause() -> Yield {
    Yield(false)
}

/// A model whose calls and answer streams hold a guard while alive, with an await point
/// before every chunk.
struct CountingModel {
    inner: ScriptedModel,
    live: Live,
}

#[async_trait]
impl ChatModel for CountingModel {
    fn model_name(&self) -> &str {
        "counting"
    }

    async fn generate(&self, request: &ChatRequest) -> Result<Message, ModelError> {
        let _g = self.live.guard();
        pause().await;
        self.inner.generate(request).await
    }

    async fn stream(&self, request: &ChatRequest) -> Result<ModelStream, ModelError> {
        let g = self.live.guard();
        pause().await;
        let inner = self.inner.stream(request).await?;
        Ok(inner
            .then(|item| async move {
                pause().await;
                item
            })
            .map(move |item| {
                let _held = &g;
                item
            })
            .boxed())
    }
}

/// A checkpoint store whose writes hold a guard and pass await points before the bytes are
/// swapped in at once (the atomicity `CheckpointStore::set` promises).
#[derive(Clone)]
struct CountingStore {
    inner: InMemoryStore,
    live: Live,
    writes_done: Arc<AtomicUsize>,
}

#[async_trait]
impl CheckpointStore for CountingStore {
    async fn get(&self, id: &str) -> Result<Option<Vec<u8>>, StoreError> {
        self.inner.get(id).await
    }
    async fn save(&self, id: &str, bytes: Vec<u8>, mode: SaveMode) -> Result<u64, StoreError> {
        let _g = self.live.guard();
        for _ in 0..3 {
            pause().await;
        }
        let version = self.inner.save(id, bytes, mode).await?;
        self.writes_done.fetch_add(1, Ordering::SeqCst);
        Ok(version)
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
        let _g = self.live.guard();
        for _ in 0..3 {
            pause().await;
        }
        let version = self.inner.complete(claim, completion).await?;
        self.writes_done.fetch_add(1, Ordering::SeqCst);
        Ok(version)
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

/// root -> a -> b. root's model streams and transfers to a; a's model calls `lookup` (which
/// passes await points) then transfers to b; b streams a message from a counted source, then
/// interrupts.
fn tree(live: &Live) -> FlowAgent {
    let model = |steps: Vec<ScriptStep>| CountingModel {
        inner: ScriptedModel::new(steps),
        live: live.clone(),
    };
    let root = ChatModelAgent::builder(
        "root",
        model(vec![ScriptStep::Reply(Message::assistant_tool_calls(
            "let me see",
            vec![ToolCall::new(
                "",
                "transfer_to_agent",
                r#"{"agent_name":"a"}"#,
            )],
        ))]),
    )
    .build()
    .unwrap();
    let tool_live = live.clone();
    let a = ChatModelAgent::builder(
        "a",
        model(vec![
            ScriptStep::tool_call("lookup", json!({})),
            ScriptStep::transfer("b"),
        ]),
    )
    .tool(tool_fn(
        "lookup",
        "Looks something up.",
        move |_: serde_json::Value| {
            let g = tool_live.guard();
            async move {
                pause().await;
                pause().await;
                drop(g);
                Ok::<_, ToolError>("found it")
            }
        },
    ))
    .build()
    .unwrap();
    let b_live = live.clone();
    let b = FnAgent::new("b", move |cx, _| {
        let live = b_live.clone();
        async move {
            let _body = live.guard();
            let source_guard = live.guard();
            let chunks = futures::stream::iter(["all ", "done"]).then(move |c| {
                let _held = &source_guard;
                async move {
                    pause().await;
                    Ok(Message::assistant(c))
                }
            });
            cx.send_stream(MessageStream::from_stream(chunks));
            pause().await;
            cx.say("one more thing");
            pause().await;
            cx.interrupt(json!("approve?"));
            Ok(())
        }
    });
    let b = FlowAgent::new(b);
    let a = set_sub_agents(FlowAgent::new(a), [b]).unwrap();
    set_sub_agents(FlowAgent::new(root), [a]).unwrap()
}

/// Polls `events` at most `polls` times (with a no-op waker: every await point here wakes
/// itself). Returns the events taken and whether the stream ended.
fn poll_some(events: &mut EventStream, polls: usize) -> (Vec<AgentEvent>, bool) {
    let waker = futures::task::noop_waker();
    let mut cx = TaskContext::from_waker(&waker);
    let mut taken = Vec::new();
    for _ in 0..polls {
        match Pin::new(&mut *events).poll_next(&mut cx) {
            Poll::Ready(Some(e)) => taken.push(e),
            Poll::Ready(None) => return (taken, true),
            Poll::Pending => {}
        }
    }
    (taken, false)
}

/// How many polls a whole run takes (a hang guard bounds it).
fn polls_to_finish(mut events: EventStream) -> (usize, Vec<AgentEvent>) {
    let waker = futures::task::noop_waker();
    let mut cx = TaskContext::from_waker(&waker);
    let mut taken = Vec::new();
    for n in 1..100_000 {
        match Pin::new(&mut events).poll_next(&mut cx) {
            Poll::Ready(Some(e)) => taken.push(e),
            Poll::Ready(None) => return (n, taken),
            Poll::Pending => {}
        }
    }
    panic!("the run did not finish in 100000 polls");
}

/// An event in brief: run path, output (stream or message role), action.
fn brief(e: &AgentEvent) -> String {
    let output = match &e.output {
        Some(EventOutput::Stream(_)) => "stream".to_owned(),
        Some(EventOutput::Message(m)) => m.role.to_string(),
        Some(EventOutput::Custom(_)) => "custom".to_owned(),
        None => "-".to_owned(),
    };
    let action = match &e.action {
        Some(Action::TransferToAgent(t)) => format!("transfer {t}"),
        Some(Action::Interrupted(_)) => "interrupt".to_owned(),
        Some(other) => format!("{other:?}"),
        None => "-".to_owned(),
    };
    assert!(e.error.is_none(), "unexpected error event: {:?}", e.error);
    format!("{} {output} {action}", e.run_path())
}

fn streaming_runner(tree: FlowAgent) -> Runner {
    Runner::builder(tree).streaming(true).build()
}

#[test]
fn the_uncancelled_run_is_what_the_cancellation_tests_cut_short() {
    let live = Live::default();
    let (_, events) = polls_to_finish(streaming_runner(tree(&live)).run("hi"));
    let shown: Vec<String> = events.iter().map(brief).collect();
    assert_eq!(
        shown,
        [
            "root stream -",
            "root tool transfer a",
            "root/a stream -",
            "root/a tool -",
            "root/a stream -",
            "root/a tool transfer b",
            "root/a/b stream -",
            "root/a/b assistant -",
            "root/a/b - interrupt",
        ]
    );
    assert!(events[8].is_interrupt());
    drop(events);
    assert_eq!(live.now(), 0);
    // One model call for root, two for a, one tool call, b's body and its stream source.
    assert_eq!(live.ever(), 6);
}

#[test]
fn dropping_the_stream_at_any_event_leaves_nothing_alive() {
    let full = polls_to_finish(streaming_runner(tree(&Live::default())).run("hi"))
        .1
        .len();
    for keep in 0..=full {
        let live = Live::default();
        let mut events = streaming_runner(tree(&live)).run("hi");
        let mut taken = Vec::new();
        futures::executor::block_on(async {
            while taken.len() < keep {
                match events.next().await {
                    Some(e) => taken.push(e),
                    None => break,
                }
            }
        });
        assert_eq!(taken.len(), keep);
        drop(events);
        drop(taken);
        assert_eq!(live.now(), 0, "after {keep} events");
    }
}

#[test]
fn dropping_the_stream_at_any_await_point_leaves_nothing_alive() {
    let (total, _) = polls_to_finish(streaming_runner(tree(&Live::default())).run("hi"));
    for polls in 0..=total {
        let live = Live::default();
        let mut events = streaming_runner(tree(&live)).run("hi");
        let (taken, ended) = poll_some(&mut events, polls);
        assert_eq!(ended, polls == total, "after {polls} polls");
        // The caller still holds the events it took; their streams are its to read.
        drop(events);
        drop(taken);
        assert_eq!(live.now(), 0, "after {polls} polls");
    }
}

#[test]
fn a_timeout_around_the_run_cancels_it() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .unwrap();
    let live = Live::default();
    let body_live = live.clone();
    // An agent that never finishes on its own: it waits forever after its first event.
    let stuck = FnAgent::new("stuck", move |cx, _| {
        let g = body_live.guard();
        async move {
            let _g = g;
            cx.say("working");
            futures::future::pending::<()>().await;
            Ok(())
        }
    });
    let runner = Runner::new(FlowAgent::new(stuck));
    let seen = rt.block_on(async {
        let mut events = runner.run("go");
        let mut seen = Vec::new();
        // The timeout is the test's subject, not a timing assertion: the run never ends.
        let r = tokio::time::timeout(std::time::Duration::from_millis(20), async {
            while let Some(e) = events.next().await {
                seen.push(e.message_output().unwrap().content.clone());
            }
        })
        .await;
        assert!(r.is_err(), "the stuck run cannot end by itself");
        assert_eq!(
            live.now(),
            1,
            "the run is alive until its stream is dropped"
        );
        drop(events);
        seen
    });
    assert_eq!(seen, ["working"]);
    assert_eq!(live.now(), 0);
    assert_eq!(live.ever(), 1);
}

fn counting_store(live: &Live) -> CountingStore {
    CountingStore {
        inner: InMemoryStore::new(),
        live: live.clone(),
        writes_done: Arc::default(),
    }
}

/// Whether two encoded checkpoints are equal but for their random run ids.
fn same_run(a: &[u8], b: &[u8]) -> bool {
    let decode = |bytes: &[u8]| {
        let mut c = agentweave_runtime::Checkpoint::decode("c1", bytes).unwrap();
        c.run_id.clear();
        c
    };
    decode(a) == decode(b)
}

#[test]
fn a_checkpointed_run_dropped_at_any_await_point_writes_all_or_nothing() {
    // The bytes an earlier run left, and the bytes this run writes when not cancelled.
    let old = {
        let store = counting_store(&Live::default());
        let runner = RunnerBuilder::from(streaming_runner(tree(&Live::default())))
            .checkpoint_store(store.clone())
            .build();
        polls_to_finish(runner.run(RunRequest::new([Message::user("old")]).checkpoint("c1")));
        futures::executor::block_on(store.get("c1"))
            .unwrap()
            .unwrap()
    };
    let (total, new) = {
        let store = counting_store(&Live::default());
        let runner = RunnerBuilder::from(streaming_runner(tree(&Live::default())))
            .checkpoint_store(store.clone())
            .build();
        let (total, events) =
            polls_to_finish(runner.run(RunRequest::new([Message::user("new")]).checkpoint("c1")));
        assert!(events.last().unwrap().is_interrupt());
        assert_eq!(store.writes_done.load(Ordering::SeqCst), 1);
        (
            total,
            futures::executor::block_on(store.get("c1"))
                .unwrap()
                .unwrap(),
        )
    };
    assert_ne!(old, new);
    let mut outcomes = [0usize; 2];
    for polls in 0..=total {
        let live = Live::default();
        let store = counting_store(&live);
        futures::executor::block_on(store.inner.set("c1", old.clone())).unwrap();
        let runner = RunnerBuilder::from(streaming_runner(tree(&live)))
            .checkpoint_store(store.clone())
            .build();
        // The old run waits under the id: this run replaces it, explicitly.
        let mut events = runner.run(
            RunRequest::new([Message::user("new")])
                .checkpoint("c1")
                .replacing(),
        );
        let (taken, _) = poll_some(&mut events, polls);
        let saw_interrupt = taken.iter().any(AgentEvent::is_interrupt);
        drop(events);
        drop(taken);
        assert_eq!(live.now(), 0, "after {polls} polls");
        let stored = futures::executor::block_on(store.get("c1"))
            .unwrap()
            .unwrap();
        // Each run has its own random run id: compare the rest.
        if same_run(&stored, &new) {
            outcomes[1] += 1;
        } else {
            assert_eq!(
                stored, old,
                "after {polls} polls: neither the old nor the new bytes"
            );
            // The interrupt is forwarded only after its checkpoint is saved.
            assert!(!saw_interrupt, "after {polls} polls");
            outcomes[0] += 1;
        }
    }
    // Some cancellations came before the write ended, some after.
    assert!(outcomes[0] > 0 && outcomes[1] > 0, "{outcomes:?}");
}
