//! A thread workflow's semantics on the dev server: continue-as-new keeps a long thread's
//! history bounded and its conversation whole; double texting (reject, enqueue, interrupt,
//! rollback) while a turn runs; a workflow cancel stops the running turn at the engine's safe
//! point, or where it is with `immediate`; `cancel_turn` stops one turn and the thread goes on;
//! a tool result or a model reply over Temporal's 2 MB payload limit is stored by reference (in
//! a directory, in SQLite) and the model still reads it all, and its history replays.
//!
//! Needs a dev server (`AGENTFLOW_TEMPORAL_ADDRESS`): skipped without one, failed in CI
//! (`AGENTFLOW_REQUIRE_COMPONENTS=1`).

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use agentweave_runtime::model::{ChatRequest, ScriptStep, ScriptedModel};
use agentweave_runtime::{
    tool_fn, CancelMode, ChatModelAgent, DoubleText, FlowAgent, Role, ToolError,
};
use agentweave_temporal::{
    replay_history, worker_flows, BlobStore, CancelTurn, FileBlobStore, LocalSteps, Reference,
    SqliteBlobStore, TemporalError, Thread, ThreadStart, ThreadWorkflow, TurnEnd, TurnRequest,
    TurnResult,
};
use serde_json::json;
use support::*;
use temporalio_client::{
    WorkflowFetchHistoryOptions, WorkflowGetResultOptions, WorkflowHistory, WorkflowStartOptions,
};
use temporalio_common::protos::temporal::api::enums::v1::EventType;

/// Every wait of these tests is bounded: a hung workflow fails the test instead of hanging CI.
const BOUND: Duration = Duration::from_secs(60);

async fn bounded<T>(what: &str, future: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(BOUND, future)
        .await
        .unwrap_or_else(|_| panic!("{what} did not end in {BOUND:?}"))
}

/// The texts the turn's messages said.
fn said(result: &TurnResult) -> Vec<String> {
    result
        .events
        .iter()
        .filter_map(|e| e["message"]["content"].as_str().map(str::to_owned))
        .collect()
}

/// `flow`, registered under a fresh name made from `prefix`, and a worker of its own on a fresh
/// queue: gives the name and the queue.
fn serve_flow(
    client: &temporalio_client::Client,
    prefix: &str,
    flow: FlowAgent,
) -> (String, String) {
    let name = unique(prefix);
    worker_flows().insert(&name, flow);
    let queue = unique("queue");
    start_worker(client, &queue);
    (name, queue)
}

/// A fresh thread of flow `name` on `queue`, its start as `start` makes it.
async fn start_thread(
    client: &temporalio_client::Client,
    queue: &str,
    name: &str,
    start: impl FnOnce(ThreadStart) -> ThreadStart,
) -> Thread {
    bounded(
        "the thread's start",
        Thread::start_with(
            client,
            queue,
            start(ThreadStart::new(name, unique("thread"))),
        ),
    )
    .await
    .unwrap()
}

/// Ana's turn `text` on `thread`, to its end.
async fn turn(thread: &Thread, text: &str) -> TurnResult {
    bounded("the turn", thread.turn("ana", text)).await.unwrap()
}

/// An agent that says how many user messages its model was shown.
fn counter() -> FlowAgent {
    let model = ScriptedModel::rules().otherwise_with(|request: &ChatRequest| {
        let heard = request
            .messages
            .iter()
            .filter(|m| m.role == Role::User)
            .count();
        ScriptStep::text(format!("heard {heard}"))
    });
    FlowAgent::new(ChatModelAgent::builder("counter", model).build().unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_thread_continues_as_new_and_keeps_its_conversation() {
    let Some(client) = server().await else { return };
    let (name, queue) = serve_flow(&client, "counter", counter());
    let id = unique("thread");
    const LIMIT: u32 = 30;
    let first_run = client
        .start_workflow(
            ThreadWorkflow::run,
            ThreadStart {
                continue_as_new_after: Some(LIMIT),
                ..ThreadStart::new(name.as_str(), id.as_str())
            },
            WorkflowStartOptions::new(queue.as_str(), id.as_str()).build(),
        )
        .await
        .unwrap();
    let thread = Thread::of(&client, &id);
    const TURNS: u64 = 8;
    for n in 0..TURNS {
        let result = turn(&thread, &format!("message {n}")).await;
        assert_eq!(result.turn, n, "turns keep their numbers across runs");
        assert_eq!(
            said(&result).last().map(String::as_str),
            Some(format!("heard {}", n + 1).as_str()),
            "turn {n}'s model saw every earlier user message: {:?}",
            said(&result)
        );
    }

    // The first run ended by continuing as new, and replays with no non-determinism.
    let first = first_run
        .fetch_history(WorkflowFetchHistoryOptions::default())
        .into_events()
        .await
        .unwrap();
    assert_eq!(
        first.last().map(|e| e.event_type),
        Some(EventType::WorkflowExecutionContinuedAsNew as i32),
        "the first run continued as new"
    );
    let json = first_run
        .fetch_history(WorkflowFetchHistoryOptions::default())
        .to_json()
        .await
        .unwrap();
    agentweave_temporal::replayer()
        .unwrap()
        .replay_workflow(WorkflowHistory::from_json(&json).unwrap())
        .await
        .expect("a run that continued as new replays");

    // The run going holds a bounded history: at most the limit and one turn past it.
    let current = client
        .get_workflow_handle::<ThreadWorkflow>(id.as_str())
        .fetch_history(WorkflowFetchHistoryOptions::default())
        .into_events()
        .await
        .unwrap();
    eprintln!(
        "first run: {} events; the run going: {} events",
        first.len(),
        current.len()
    );
    assert!(
        current.len() < 2 * LIMIT as usize,
        "{} events in the run going",
        current.len()
    );
    assert_eq!(bounded("close", thread.close()).await.unwrap(), TURNS);
}

/// A thread of the desk whose payment takes `delay`, and a turn started on it that is inside
/// its paid call when this returns.
async fn busy_thread(
    client: &temporalio_client::Client,
    start: impl FnOnce(ThreadStart) -> ThreadStart,
) -> (Thread, Ledger, tokio::task::JoinHandle<TurnResult>) {
    let ledger = Ledger::new();
    let (name, queue) = serve_flow(
        client,
        "desk-busy",
        desk(&ledger, 30, Duration::from_secs(2)),
    );
    let thread = start_thread(client, &queue, &name, start).await;
    let running = {
        let thread = Thread::of(client, thread.id());
        tokio::spawn(async move { turn(&thread, "please pay my bill").await })
    };
    bounded("the paid call's start", async {
        while ledger.starts().is_empty() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    (thread, ledger, running)
}

fn stopped_for_a_cancel(result: &TurnResult) -> bool {
    result
        .events
        .iter()
        .any(|e| e.to_string().contains("\"cancelled\""))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn double_texting_reject_refuses_and_enqueue_runs_after() {
    let Some(client) = server().await else { return };
    let (thread, ledger, running) = busy_thread(&client, |s| s).await;

    let refused = bounded(
        "a rejected turn",
        thread.ask(TurnRequest::new("ana", "me again").if_busy(DoubleText::Reject)),
    )
    .await
    .expect_err("reject refuses a turn while another runs");
    assert!(matches!(refused, TemporalError::Busy { .. }), "{refused}");
    assert!(refused.to_string().contains("busy"), "{refused}");

    let queued = bounded(
        "an enqueued turn",
        thread.ask(TurnRequest::new("ana", "and the next one").if_busy(DoubleText::Enqueue)),
    )
    .await
    .unwrap();
    let first = running.await.unwrap();
    assert_eq!(first.ended, TurnEnd::Done);
    assert!(
        said(&first).iter().any(|s| s == "billing paid 30"),
        "{:?}",
        said(&first)
    );
    assert_eq!(
        (first.turn, queued.turn),
        (0, 1),
        "the rejected turn took no number"
    );
    assert_eq!(queued.ended, TurnEnd::Done);
    assert!(said(&queued).iter().any(|s| s == "billing paid 30"));
    assert_eq!(ledger.payments().len(), 2, "{:?}", ledger.calls());
    assert_eq!(bounded("close", thread.close()).await.unwrap(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn double_texting_interrupt_stops_the_turn_at_a_safe_point_and_keeps_it() {
    let Some(client) = server().await else { return };
    let (thread, _ledger, running) = busy_thread(&client, |s| s).await;
    let next = bounded(
        "the interrupting turn",
        thread
            .ask(TurnRequest::new("ana", "stop, pay this instead").if_busy(DoubleText::Interrupt)),
    )
    .await
    .unwrap();
    let first = running.await.unwrap();
    eprintln!("interrupted turn said {:?}", said(&first));
    assert_eq!(first.ended, TurnEnd::Cancelled);
    assert!(
        said(&first).iter().any(|s| s == "paid 30"),
        "the tool call under way finished and its result was kept: {:?}",
        said(&first)
    );
    assert!(
        !said(&first).iter().any(|s| s == "billing paid 30"),
        "no model call after the tool calls: {:?}",
        said(&first)
    );
    assert!(stopped_for_a_cancel(&first), "{:#?}", first.events);
    assert_eq!(next.ended, TurnEnd::Done);
    assert!(said(&next).iter().any(|s| s == "billing paid 30"));
    assert_eq!(bounded("close", thread.close()).await.unwrap(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn double_texting_rollback_drops_the_running_turn() {
    let Some(client) = server().await else { return };
    let (thread, _ledger, running) = busy_thread(&client, |s| s).await;
    let next = bounded(
        "the rolling-back turn",
        thread.ask(TurnRequest::new("ana", "forget that").if_busy(DoubleText::Rollback)),
    )
    .await
    .unwrap();
    let first = running.await.unwrap();
    assert_eq!(first.ended, TurnEnd::RolledBack);
    assert!(
        !said(&first).iter().any(|s| s.contains("paid")),
        "dropped inside its tool call: {:?}",
        said(&first)
    );
    assert_eq!(next.ended, TurnEnd::Done);
    assert_eq!(next.turn, 1);
    // The thread kept one turn (the rolled-back one is not in it): the closing count says
    // how many turns the log holds.
    assert_eq!(bounded("close", thread.close()).await.unwrap(), 1);
}

async fn cancelled_workflow(thread: &Thread, client: &temporalio_client::Client) {
    let outcome = bounded(
        "the cancelled workflow's end",
        client
            .get_workflow_handle::<ThreadWorkflow>(thread.id())
            .get_result(WorkflowGetResultOptions::default()),
    )
    .await;
    let error = outcome.expect_err("the workflow ends as cancelled");
    assert!(
        error.to_string().to_lowercase().contains("cancel"),
        "{error}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workflow_cancel_stops_the_turn_at_its_safe_point() {
    let Some(client) = server().await else { return };
    let (thread, ledger, running) = busy_thread(&client, |s| s).await;
    bounded("cancel", thread.cancel()).await.unwrap();
    let first = running.await.unwrap();
    assert_eq!(first.ended, TurnEnd::Cancelled);
    assert!(
        said(&first).iter().any(|s| s == "paid 30"),
        "the paid call finished (its activity is not cancelled with the workflow): {:?}",
        said(&first)
    );
    assert!(!said(&first).iter().any(|s| s == "billing paid 30"));
    assert!(stopped_for_a_cancel(&first), "{:#?}", first.events);
    assert_eq!(ledger.payments().len(), 1);
    cancelled_workflow(&thread, &client).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workflow_cancel_with_immediate_drops_the_turn_where_it_is() {
    let Some(client) = server().await else { return };
    let (thread, _ledger, running) = busy_thread(&client, |s| ThreadStart {
        cancel_mode: Some(CancelMode::IMMEDIATE),
        ..s
    })
    .await;
    bounded("cancel", thread.cancel()).await.unwrap();
    let first = running.await.unwrap();
    assert_eq!(first.ended, TurnEnd::Cancelled);
    assert!(
        !said(&first).iter().any(|s| s.contains("paid")),
        "stopped inside its tool call: {:?}",
        said(&first)
    );
    cancelled_workflow(&thread, &client).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_turn_stops_one_turn_at_its_safe_point_and_the_thread_goes_on() {
    let Some(client) = server().await else { return };
    let (thread, ledger, first) = stopped_after_tools(&client, |s| s).await;
    assert!(
        said(&first).iter().any(|s| s == "paid 30"),
        "the paid call finished before the turn stopped: {:?}",
        said(&first)
    );
    assert!(stopped_for_a_cancel(&first), "{:?}", first.events);
    assert_eq!(ledger.starts().len(), 1);
    // The thread is not cancelled: its next turn runs to its end.
    let next = turn(&thread, "thanks").await;
    assert_eq!(next.ended, TurnEnd::Done, "{:?}", said(&next));
    assert_eq!(bounded("close", thread.close()).await.unwrap(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_stopped_at_a_safe_point_resumes_where_it_stopped_and_replays() {
    let Some(client) = server().await else { return };
    stop_then_resume(&client, |s| s).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_turn_is_carried_across_continue_as_new_and_resumes() {
    let Some(client) = server().await else { return };
    // The workflow continues as new after the stopped turn, before the resume arrives.
    stop_then_resume(&client, |s| ThreadStart {
        continue_as_new_after: Some(1),
        ..s
    })
    .await;
}

/// A busy thread (as `start` makes it) whose first turn `cancel_turn` stopped at the safe point
/// after its tool calls: the thread, its ledger and that turn, which ended cancelled.
async fn stopped_after_tools(
    client: &temporalio_client::Client,
    start: impl FnOnce(ThreadStart) -> ThreadStart,
) -> (Thread, Ledger, TurnResult) {
    let (thread, ledger, running) = busy_thread(client, start).await;
    bounded(
        "cancel_turn",
        thread.cancel_turn(CancelTurn::by_number(
            0,
            CancelMode::AFTER_TOOLS.recursive(),
        )),
    )
    .await
    .unwrap();
    let first = running.await.unwrap();
    assert_eq!(first.ended, TurnEnd::Cancelled, "{:?}", first.events);
    (thread, ledger, first)
}

/// A turn of the desk stopped by `cancel_turn` after its paid call, then resumed; the thread
/// as `start` makes it.
async fn stop_then_resume(
    client: &temporalio_client::Client,
    start: impl FnOnce(ThreadStart) -> ThreadStart,
) {
    let (thread, ledger, first) = stopped_after_tools(client, start).await;
    assert!(stopped_for_a_cancel(&first), "{:?}", first.events);
    assert!(!said(&first).iter().any(|s| s == "billing paid 30"));

    // As the in-process runner resumes a turn cancelled at a safe point: the agent that
    // stopped goes on from there (its model is asked with the paid call's result), and the
    // call it finished is not made again.
    let resumed = bounded("the resume", thread.ask(TurnRequest::resume("ana")))
        .await
        .unwrap();
    assert_eq!(resumed.ended, TurnEnd::Done, "{:?}", resumed.events);
    assert_eq!(
        said(&resumed),
        ["billing paid 30"],
        "the continuation starts where the turn stopped: {:?}",
        resumed.events
    );
    assert_eq!(resumed.events[0]["agent_name"], "billing");
    assert_eq!(ledger.starts().len(), 1, "{:?}", ledger.calls());
    assert_eq!(ledger.payments().len(), 1, "{:?}", ledger.calls());

    // Nothing is stopped any more: a resume of the idle thread is refused before it enters
    // the history.
    let refused = bounded("a second resume", thread.ask(TurnRequest::resume("ana")))
        .await
        .expect_err("nothing left to resume");
    assert!(
        matches!(refused, TemporalError::NothingToResume { .. }),
        "{refused}"
    );
    // The continuation joined the stopped turn: the thread holds one turn, which the next
    // one hears as a whole.
    assert_eq!(bounded("close", thread.close()).await.unwrap(), 1);
    let history = bounded("the history", thread.history_json()).await.unwrap();
    bounded("the replay", replay_history(&history))
        .await
        .unwrap_or_else(|e| panic!("the history replays: {e}"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_message_after_a_stopped_turn_leaves_it_and_a_resume_then_has_nothing_to_resume() {
    let Some(client) = server().await else { return };
    let (thread, ledger, _first) = stopped_after_tools(&client, |s| s).await;
    let next = turn(&thread, "thanks").await;
    assert_eq!(next.ended, TurnEnd::Done, "{:?}", said(&next));
    let refused = bounded("the resume", thread.ask(TurnRequest::resume("ana")))
        .await
        .expect_err("the new message dropped the stopped turn's place");
    assert!(
        refused.to_string().contains("nothing to resume"),
        "{refused}"
    );
    assert_eq!(ledger.payments().len(), 2, "{:?}", ledger.calls());
    assert_eq!(bounded("close", thread.close()).await.unwrap(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_turn_immediate_drops_the_turn_and_a_cancel_before_the_turn_keeps_it_from_running() {
    let Some(client) = server().await else { return };
    let (thread, _ledger, running) = busy_thread(&client, |s| s).await;
    // A turn asked later under a key cancelled before it arrives never runs.
    bounded(
        "cancel_turn by key",
        thread.cancel_turn(CancelTurn::by_key("later", CancelMode::IMMEDIATE)),
    )
    .await
    .unwrap();
    bounded(
        "cancel_turn",
        thread.cancel_turn(CancelTurn::by_number(0, CancelMode::IMMEDIATE)),
    )
    .await
    .unwrap();
    let first = running.await.unwrap();
    assert_eq!(first.ended, TurnEnd::RolledBack);
    let later = bounded(
        "the cancelled turn",
        thread.ask(TurnRequest {
            key: Some("later".into()),
            ..TurnRequest::new("ana", "never mind")
        }),
    )
    .await
    .unwrap();
    assert_eq!(later.ended, TurnEnd::Cancelled);
    assert!(later.events.is_empty(), "{:?}", later.events);
    bounded("close", thread.close()).await.unwrap();
}

/// An agent whose `fetch` tool returns `size` bytes, and whose model then says how many bytes
/// of tool result it was shown; asked `say it back`, it answers `size` bytes, and asked `how
/// long`, it says how long its longest earlier reply was.
fn reader(size: usize) -> FlowAgent {
    let fetch = tool_fn(
        "fetch",
        "Fetches a large document.",
        move |_: serde_json::Value| async move { Ok::<_, ToolError>("y".repeat(size)) },
    );
    let model = ScriptedModel::rules().otherwise_with(move |request: &ChatRequest| {
        let said = request.last_user_message().map(|m| m.content.clone());
        match request.messages.last() {
            Some(last) if last.role == Role::Tool => {
                ScriptStep::text(format!("read {} bytes", last.content.len()))
            }
            _ if said.as_deref() == Some("say it back") => ScriptStep::text("z".repeat(size)),
            _ if said.as_deref() == Some("how long") => {
                let longest = request
                    .messages
                    .iter()
                    .filter(|m| m.role == Role::Assistant)
                    .map(|m| m.content.len())
                    .max()
                    .unwrap_or(0);
                ScriptStep::text(format!("you heard {longest} bytes"))
            }
            _ => ScriptStep::tool_call("fetch", json!({})),
        }
    });
    FlowAgent::new(
        ChatModelAgent::builder("reader", model)
            .tool(fetch)
            .build()
            .unwrap(),
    )
}

/// The tests that set the workers' blob store (it is the process's) take turns.
static BLOB_STORE: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// A writer whose model answers `next page` with a page of `page` bytes (under the
/// large-payload threshold: each stays in history) and `how much` with how many bytes of
/// pages it was shown.
fn writer(page: usize) -> FlowAgent {
    let model = ScriptedModel::rules().otherwise_with(move |request: &ChatRequest| {
        let pages: Vec<&str> = request
            .messages
            .iter()
            .filter(|m| m.role == Role::Assistant && m.content.starts_with("page "))
            .map(|m| m.content.as_str())
            .collect();
        match request.last_user_message().map(|m| m.content.as_str()) {
            Some("how much") => {
                let bytes: usize = pages.iter().map(|p| p.len()).sum();
                ScriptStep::text(format!("shown {} pages, {bytes} bytes", pages.len()))
            }
            _ => ScriptStep::text(format!("page {}:{}", pages.len(), "p".repeat(page))),
        }
    });
    FlowAgent::new(ChatModelAgent::builder("writer", model).build().unwrap())
}

/// Many medium messages (each under the large-payload threshold) pass Temporal's 2 MB payload
/// limit in sum: each model call's conversation goes by parts in the blob store, the thread's
/// conversation is carried by parts through continue-as-new, the model still reads all of it,
/// and the history replays.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conversation_of_many_medium_messages_past_2_mb_goes_by_parts_and_replays() {
    let Some(client) = server().await else { return };
    let _store = BLOB_STORE.lock().await;
    const PAGE: usize = 200 * 1024;
    const PAGES: usize = 14;
    let dir = std::env::temp_dir().join(unique("agentweave-temporal-parts"));
    worker_flows().store_large_payloads(Arc::new(FileBlobStore::new(&dir).unwrap()), 256 * 1024);
    let (name, queue) = serve_flow(&client, "writer", writer(PAGE));
    // Continue-as-new every few turns: the carried conversation passes 2 MB too.
    let thread = start_thread(&client, &queue, &name, |s| ThreadStart {
        continue_as_new_after: Some(60),
        ..s
    })
    .await;
    let mut bytes = 0;
    for n in 0..PAGES {
        let page = turn(&thread, "next page").await;
        let text = said(&page).pop().unwrap_or_default();
        assert!(
            text.starts_with(&format!("page {n}:")),
            "{}",
            &text[..40.min(text.len())]
        );
        bytes += text.len();
    }
    assert!(bytes > 2 * 1024 * 1024, "{bytes} bytes of pages");
    let told = turn(&thread, "how much").await;
    assert_eq!(
        said(&told).last().map(String::as_str),
        Some(format!("shown {PAGES} pages, {bytes} bytes").as_str()),
        "the model read the whole conversation"
    );
    assert_eq!(
        bounded("close", thread.close()).await.unwrap(),
        PAGES as u64 + 1
    );
    let history = bounded("the history", thread.history_json()).await.unwrap();
    // The last run began by reading the carried conversation back: one local activity (a
    // marker) a part, the 2.8 MB never one payload.
    let events = client
        .get_workflow_handle::<ThreadWorkflow>(thread.id())
        .fetch_history(WorkflowFetchHistoryOptions::default())
        .into_events()
        .await
        .unwrap();
    let markers = events
        .iter()
        .filter(|e| e.event_type == EventType::MarkerRecorded as i32)
        .count();
    assert!(
        markers * agentweave_temporal::parts::PART_BYTES >= bytes,
        "the carried conversation read back by parts: {markers} markers"
    );
    bounded("the replay", replay_history(&history))
        .await
        .unwrap_or_else(|e| panic!("the history replays: {e}"));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A test that sets the workers' blob store (it is the process's): a 3 MB tool result and
/// a 3 MB model reply, through a directory and through SQLite.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_result_or_a_model_reply_over_the_payload_limit_is_stored_by_reference_and_replays()
{
    let Some(client) = server().await else { return };
    let _store = BLOB_STORE.lock().await;
    let dir = std::env::temp_dir().join(unique("agentweave-temporal-blobs"));
    large_result(&client, Arc::new(FileBlobStore::new(&dir).unwrap())).await;
    let sqlite = SqliteBlobStore::open(dir.join("blobs.db")).await.unwrap();
    large_result(&client, Arc::new(sqlite)).await;
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A turn whose tool returns 3 MB, with `store` as the workers' blob store: the model reads it
/// all, the history holds its reference, the blob is in the store, and the history replays.
async fn large_result(client: &temporalio_client::Client, store: Arc<dyn BlobStore>) {
    const SIZE: usize = 3 * 1024 * 1024;
    worker_flows().store_large_payloads(Arc::clone(&store), 256 * 1024);
    let (name, queue) = serve_flow(client, "reader", reader(SIZE));
    let thread = start_thread(client, &queue, &name, |s| s).await;
    let result = turn(&thread, "read it").await;
    let texts = said(&result);
    assert_eq!(
        texts.last().map(String::as_str),
        Some(format!("read {SIZE} bytes").as_str()),
        "the model read the whole result: {texts:?}"
    );
    let reference = texts
        .iter()
        .find_map(|s| Reference::parse(s))
        .unwrap_or_else(|| panic!("the thread's events hold a reference: {texts:?}"));
    assert_eq!(reference.bytes, SIZE);
    assert_eq!(
        store.get(&reference.key).await.unwrap().len(),
        SIZE,
        "the blob is in the store"
    );
    // A reply over the threshold is stored too, and the next call reads it back.
    let echoed = turn(&thread, "say it back").await;
    assert!(
        said(&echoed).iter().any(|s| Reference::parse(s).is_some()),
        "the reply's reference in the thread's events"
    );
    let measured = turn(&thread, "how long").await;
    assert_eq!(
        said(&measured).last().map(String::as_str),
        Some(format!("you heard {SIZE} bytes").as_str()),
        "the model read its earlier reply whole"
    );
    assert_eq!(bounded("close", thread.close()).await.unwrap(), 3);
    let history = bounded("the history", thread.history_json()).await.unwrap();
    assert!(
        history.len() < 256 * 1024,
        "the history holds the reference, not the result: {} bytes",
        history.len()
    );
    bounded("the replay", replay_history(&history))
        .await
        .unwrap_or_else(|e| panic!("the history replays: {e}"));
}

/// A teller that looks a balance up (an idempotent tool) and wires money (not idempotent).
fn teller() -> FlowAgent {
    let lookup = tool_fn(
        "balance",
        "Reads the balance.",
        |_: serde_json::Value| async { Ok::<_, ToolError>("100".to_string()) },
    );
    let wire = tool_fn("wire", "Sends a wire.", |_: serde_json::Value| async {
        Ok::<_, ToolError>("sent".to_string())
    })
    .with_idempotent(false);
    let agent = ChatModelAgent::builder(
        "teller",
        stateless(vec![
            ScriptStep::tool_call("balance", json!({})),
            ScriptStep::tool_call("wire", json!({})),
            ScriptStep::text("wired"),
        ]),
    )
    .tool(lookup)
    .tool(wire)
    .build()
    .unwrap();
    FlowAgent::new(agent)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_activities_run_models_and_idempotent_tools_but_never_a_non_idempotent_tool() {
    let Some(client) = server().await else { return };
    let (name, queue) = serve_flow(&client, "teller", teller());
    for (local, remote_activities) in [
        (LocalSteps::None, 5),
        (LocalSteps::Models, 2),
        (LocalSteps::ModelsAndIdempotentTools, 1),
    ] {
        let thread = start_thread(&client, &queue, &name, |s| ThreadStart {
            local_activities: local,
            ..s
        })
        .await;
        let result = turn(&thread, "wire it").await;
        assert_eq!(said(&result).last().map(String::as_str), Some("wired"));
        let history = client
            .get_workflow_handle::<ThreadWorkflow>(thread.id())
            .fetch_history(WorkflowFetchHistoryOptions::default())
            .into_events()
            .await
            .unwrap();
        let count = |kind: EventType| {
            history
                .iter()
                .filter(|e| e.event_type == kind as i32)
                .count()
        };
        assert_eq!(
            count(EventType::ActivityTaskScheduled),
            remote_activities,
            "{local:?}: 3 model calls, 2 tool calls"
        );
        assert_eq!(
            count(EventType::MarkerRecorded),
            5 - remote_activities,
            "{local:?}: the others are local activities' markers"
        );
        assert_eq!(bounded("close", thread.close()).await.unwrap(), 1);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_one_shot_thread_starts_runs_its_turn_and_ends_in_one_request() {
    let Some(client) = server().await else { return };
    let (name, queue) = serve_flow(&client, "counter", counter());
    let id = unique("thread");
    let result = bounded(
        "a one-shot thread",
        Thread::run_once(
            &client,
            &queue,
            ThreadStart::new(name.as_str(), id.as_str()),
            TurnRequest::new("ana", "hello"),
        ),
    )
    .await
    .unwrap();
    assert_eq!(said(&result).last().map(String::as_str), Some("heard 1"));
    let turns: u64 = bounded(
        "the workflow's end",
        client
            .get_workflow_handle::<ThreadWorkflow>(id.as_str())
            .get_result(WorkflowGetResultOptions::default()),
    )
    .await
    .expect("the workflow ended by itself after its turn");
    assert_eq!(turns, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workflow_cancel_stops_a_turn_waiting_for_an_answer() {
    let Some(client) = server().await else { return };
    let ledger = Ledger::new();
    let (name, queue) = serve_flow(&client, "clerk", clerk(&ledger));
    let thread = start_thread(&client, &queue, &name, |s| s).await;
    let running = {
        let thread = Thread::of(&client, thread.id());
        tokio::spawn(async move { turn(&thread, "refund order 7").await })
    };
    bounded("the question", async {
        while thread.question().await.unwrap().is_none() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    bounded("cancel", thread.cancel()).await.unwrap();
    let turn = running.await.unwrap();
    assert_eq!(turn.ended, TurnEnd::Cancelled);
    assert!(
        ledger.calls().is_empty(),
        "nothing refunded: {:?}",
        ledger.calls()
    );
    cancelled_workflow(&thread, &client).await;
}
