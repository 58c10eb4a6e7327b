//! The store contract on the in-process stores (InMemoryStore, FileStore), and the Runner's
//! use of it: exactly one resume runs, a run waiting under an id is never replaced silently,
//! tools get the same idempotency key when a dead worker's resume is taken over.

use crate::support;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agentweave_runtime::store::JournalStore;
use agentweave_runtime::{
    tool_fn_with_context, AgentEvent, ChatModelAgent, CheckpointError, CheckpointState,
    CheckpointStore, FileStore, FlowAgent, InMemoryStore, Message, Runner, ScriptStep,
    ScriptedModel, ToolContext,
};
use agentweave_runtime::{ResumeRequest, RunRequest};
use futures::StreamExt;
use serde_json::json;
use support::{contract, journal_contract, thread_contract};

fn temp_dir(name: &str) -> std::path::PathBuf {
    crate::support::dirs::temp_dir("store", name)
}

#[tokio::test]
async fn memory_store_keeps_the_contract() {
    let store = InMemoryStore::new();
    contract::refuses_escaping_ids(&store).await;
    contract::lifecycle(&store, "").await;
    contract::pending_and_purge(&store, "").await;
    contract::size_limit(&store, &store.clone().max_checkpoint_bytes(16), "").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn memory_store_gives_one_claim_among_tasks() {
    contract::one_claim_among_tasks(Arc::new(InMemoryStore::new()), "").await;
}

#[tokio::test]
async fn file_store_keeps_the_contract() {
    let dir = temp_dir("contract");
    let store = FileStore::new(&dir).unwrap();
    contract::refuses_escaping_ids(&store).await;
    contract::lifecycle(&store, "").await;
    contract::pending_and_purge(&store, "").await;
    let limited = FileStore::new(&dir).unwrap().max_checkpoint_bytes(16);
    contract::size_limit(&store, &limited, "").await;
    // Nothing escaped the directory, and no temporary file is left.
    let names = |dir: &std::path::Path| -> Vec<String> {
        std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect()
    };
    assert_eq!(names(&dir), ["runs"]);
    assert!(names(&dir.join("runs")).is_empty());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn file_store_gives_one_claim_among_tasks() {
    let dir = temp_dir("race");
    contract::one_claim_among_tasks(Arc::new(FileStore::new(&dir).unwrap()), "").await;
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn memory_store_keeps_the_thread_contract() {
    let store = InMemoryStore::new();
    thread_contract::refuses_bad_ids(&store).await;
    thread_contract::appends_reads_list_delete(&store, &store.clone(), "").await;
    thread_contract::size_limit(&store, &store.clone().max_checkpoint_bytes(64), "").await;
    thread_contract::leases(&store, "").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn memory_store_gives_one_append_and_one_lease_among_tasks() {
    let store = InMemoryStore::new();
    thread_contract::one_winner_among_tasks(vec![Arc::new(store.clone()), Arc::new(store)], "")
        .await;
}

#[tokio::test]
async fn file_store_keeps_the_thread_contract() {
    let dir = temp_dir("thread-contract");
    let store = FileStore::new(&dir).unwrap();
    thread_contract::refuses_bad_ids(&store).await;
    thread_contract::appends_reads_list_delete(&store, &FileStore::new(&dir).unwrap(), "").await;
    let limited = FileStore::new(&dir).unwrap().max_checkpoint_bytes(64);
    thread_contract::size_limit(&store, &limited, "").await;
    thread_contract::leases(&store, "").await;
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn file_store_gives_one_append_and_one_lease_among_tasks() {
    let dir = temp_dir("thread-race");
    let handles: Vec<Arc<dyn agentweave_runtime::ThreadStore>> = (0..4)
        .map(|_| Arc::new(FileStore::new(&dir).unwrap()) as _)
        .collect();
    thread_contract::one_winner_among_tasks(handles, "").await;
    std::fs::remove_dir_all(&dir).unwrap();
}

#[cfg(unix)]
#[tokio::test]
async fn file_store_files_are_private_and_temps_are_cleaned_and_symlinks_refused() {
    use agentweave_runtime::SaveMode;
    use std::os::unix::fs::PermissionsExt;
    let dir = temp_dir("files");
    let store = FileStore::new(&dir).unwrap();
    store
        .save("a", b"x".to_vec(), SaveMode::Create)
        .await
        .unwrap();
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&dir.join("runs/a/1.ckpt")), 0o600);
    assert_eq!(mode(&dir.join("runs/a/records.json")), 0o600);
    assert_eq!(mode(&dir.join("runs/a")), 0o700);

    // Temporary files a crash left behind go when a store opens the directory.
    std::fs::write(dir.join("runs/a/.tmp-dead"), b"half").unwrap();
    std::fs::write(dir.join(".tmp-old"), b"half").unwrap();
    let _reopened = FileStore::new(&dir).unwrap();
    assert!(!dir.join("runs/a/.tmp-dead").exists());
    assert!(!dir.join(".tmp-old").exists());

    // A record planted as a symlink is not followed.
    let outside = dir.with_extension("outside");
    std::fs::write(&outside, b"secret").unwrap();
    std::fs::remove_file(dir.join("runs/a/1.ckpt")).unwrap();
    std::os::unix::fs::symlink(&outside, dir.join("runs/a/1.ckpt")).unwrap();
    assert!(store.get("a").await.is_err());
    std::fs::remove_file(&outside).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A desk whose `refund` tool asks for approval, then pays, logging the idempotency key it
/// was given to `paid`.
fn desk(paid: Arc<Mutex<Vec<String>>>) -> FlowAgent {
    let refund = tool_fn_with_context(
        "refund",
        "Refunds after approval.",
        move |cx: ToolContext, _args: serde_json::Value| {
            let paid = Arc::clone(&paid);
            async move {
                if cx.resume_data().is_none() {
                    return Err(cx.interrupt(json!("approve?")));
                }
                paid.lock().unwrap().push(cx.idempotency_key());
                Ok("paid".to_string())
            }
        },
    );
    let model = ScriptedModel::rules()
        .when(
            |r: &agentweave_runtime::ChatRequest| {
                r.messages.last().is_some_and(|m| m.content == "paid")
            },
            ScriptStep::text("refunded"),
        )
        .otherwise(ScriptStep::tool_call("refund", json!({})));
    let agent = ChatModelAgent::builder("desk", model)
        .tool(refund)
        .build()
        .unwrap();
    FlowAgent::new(agent)
}

fn approve() -> HashMap<String, serde_json::Value> {
    HashMap::from([("desk".to_owned(), json!("yes"))])
}

/// Resumes `id` with `data`; every event of the resumed run.
async fn resume_all(
    runner: &Runner,
    id: &str,
    data: HashMap<String, serde_json::Value>,
) -> Vec<AgentEvent> {
    runner
        .resume(ResumeRequest::new(id, data))
        .await
        .unwrap()
        .collect()
        .await
}

async fn interrupt(runner: &Runner, id: &str) -> Vec<AgentEvent> {
    runner
        .run(RunRequest::new([Message::user("refund me")]).checkpoint(id))
        .collect()
        .await
}

#[tokio::test]
async fn a_run_waiting_under_an_id_is_not_replaced_and_nothing_runs() {
    let store = InMemoryStore::new();
    let paid = Arc::new(Mutex::new(Vec::new()));
    let runner = Runner::builder(desk(Arc::clone(&paid)))
        .checkpoint_store(store.clone())
        .build();
    assert!(interrupt(&runner, "r1")
        .await
        .last()
        .unwrap()
        .is_interrupt());
    let saved = store.get("r1").await.unwrap().unwrap();
    let again = interrupt(&runner, "r1").await;
    assert_eq!(again.len(), 1, "nothing ran");
    let text = again[0].error.as_ref().unwrap().to_string();
    assert!(
        text.contains("holds a run waiting for its resume"),
        "{text}"
    );
    assert_eq!(store.get("r1").await.unwrap().unwrap(), saved);

    // Replacing is explicit.
    let replaced: Vec<AgentEvent> = runner
        .run(
            RunRequest::new([Message::user("again")])
                .checkpoint("r1")
                .replacing(),
        )
        .collect()
        .await;
    assert!(replaced.last().unwrap().is_interrupt());
    let states: Vec<CheckpointState> = store
        .history("r1")
        .await
        .unwrap()
        .iter()
        .map(|m| m.state)
        .collect();
    assert_eq!(
        states,
        [CheckpointState::Replaced, CheckpointState::Pending]
    );
}

#[tokio::test]
async fn the_history_of_a_run_links_each_checkpoint_to_its_parent() {
    let store = InMemoryStore::new();
    let runner = Runner::builder(desk(Arc::default()))
        .checkpoint_store(store.clone())
        .build();
    interrupt(&runner, "h1").await;
    // Resumed without an answer, the tool interrupts again: a child checkpoint.
    let again = resume_all(&runner, "h1", HashMap::new()).await;
    assert!(again.last().unwrap().is_interrupt());
    let done = resume_all(&runner, "h1", approve()).await;
    assert_eq!(
        done.last().unwrap().message_output().unwrap().content,
        "refunded"
    );
    let history = store.history("h1").await.unwrap();
    let links: Vec<(u64, Option<u64>, CheckpointState)> = history
        .iter()
        .map(|m| (m.version, m.parent, m.state))
        .collect();
    assert_eq!(
        links,
        [
            (1, None, CheckpointState::Resumed),
            (2, Some(1), CheckpointState::Resumed),
            (3, Some(2), CheckpointState::Finished),
        ]
    );
    assert!(matches!(
        runner.resume(ResumeRequest::new("h1", approve())).await,
        Err(CheckpointError::AlreadyResumed { .. })
    ));
}

#[tokio::test]
async fn pending_interrupts_list_what_an_approvals_screen_needs() {
    let store = InMemoryStore::new();
    let runner = Runner::builder(desk(Arc::default()))
        .checkpoint_store(store.clone())
        .build();
    interrupt(&runner, "p1").await;
    tokio::time::sleep(Duration::from_millis(3)).await;
    interrupt(&runner, "p2").await;
    let pending = runner.checkpoints().pending(10).await.unwrap();
    assert_eq!(pending.len(), 2);
    assert_eq!(pending[0].id, "p1");
    assert_eq!(pending[1].id, "p2");
    assert_eq!(pending[0].flow, runner.agent().shape());
    assert_eq!(pending[0].interrupts.len(), 1);
    assert_eq!(pending[0].interrupts[0].id, "desk");
    assert_eq!(pending[0].interrupts[0].info, json!("approve?"));
    assert!(pending[0].created_at <= pending[1].created_at);
    resume_all(&runner, "p1", approve()).await;
    let left: Vec<String> = runner
        .checkpoints()
        .pending(10)
        .await
        .unwrap()
        .into_iter()
        .map(|p| p.id)
        .collect();
    assert_eq!(left, ["p2"]);
}

#[tokio::test]
async fn a_dead_workers_claim_is_taken_over_and_the_tool_sees_the_same_key() {
    let store = InMemoryStore::new();
    let paid = Arc::new(Mutex::new(Vec::new()));
    let runner = Runner::builder(desk(Arc::clone(&paid)))
        .checkpoint_store(store.clone())
        .lease(Duration::from_millis(1))
        .build();
    interrupt(&runner, "k1").await;

    // The first worker runs the approved tool, then "dies" before recording the outcome: its
    // stream is leaked, so it never completes or gives back its claim.
    let mut dying = runner
        .resume(ResumeRequest::new("k1", approve()))
        .await
        .unwrap();
    while paid.lock().unwrap().is_empty() {
        dying.next().await.unwrap();
    }
    std::mem::forget(dying);
    assert_eq!(paid.lock().unwrap().len(), 1);

    tokio::time::sleep(Duration::from_millis(5)).await;
    let done = resume_all(&runner, "k1", approve()).await;
    assert_eq!(
        done.last().unwrap().message_output().unwrap().content,
        "refunded"
    );
    let keys = paid.lock().unwrap().clone();
    assert_eq!(keys.len(), 2, "at-least-once: the call ran again");
    assert_eq!(keys[0], keys[1], "with the same idempotency key");
    assert!(keys[0].contains(":desk:"), "{}", keys[0]);

    // Another run of the same flow gets other keys.
    interrupt(&runner, "k2").await;
    resume_all(&runner, "k2", approve()).await;
    let keys = paid.lock().unwrap().clone();
    assert_ne!(keys[2], keys[0]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn memory_store_keeps_the_journal_contract() {
    let store = InMemoryStore::new();
    journal_contract::refuses_bad_ids_and_kinds(&store).await;
    journal_contract::appends_reads_truncates_deletes(&store, &store.clone(), "").await;
    journal_contract::one_append_among_tasks(
        vec![Arc::new(store.clone()), Arc::new(store.clone())],
        "",
    )
    .await;
    journal_contract::many_runs_append_at_once(vec![Arc::new(store.clone())], "").await;
    journal_contract::deferred_steps_are_encoded_when_read(&store).await;
    journal_contract::deferred_batches_read_back_and_cut(&store).await;
    journal_contract::unsynced_appends_keep_the_condition(&store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn file_store_keeps_the_journal_contract() {
    let dir = temp_dir("journal");
    let store = FileStore::new(&dir).unwrap();
    journal_contract::refuses_bad_ids_and_kinds(&store).await;
    journal_contract::appends_reads_truncates_deletes(&store, &FileStore::new(&dir).unwrap(), "")
        .await;
    let handles: Vec<Arc<dyn JournalStore>> = (0..3)
        .map(|_| Arc::new(FileStore::new(&dir).unwrap()) as Arc<dyn JournalStore>)
        .collect();
    journal_contract::one_append_among_tasks(handles.clone(), "").await;
    journal_contract::many_runs_append_at_once(handles, "").await;
    journal_contract::deferred_steps_are_encoded_when_read(&store).await;
    journal_contract::deferred_batches_read_back_and_cut(&store).await;
    journal_contract::unsynced_appends_keep_the_condition(&store).await;
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A crash during an append leaves a torn last frame: reads ignore it and the next append cuts
/// it off. A damaged frame with whole frames after it is refused as corrupt, and stays as it
/// was.
#[tokio::test]
async fn file_journal_ignores_a_torn_tail_and_refuses_a_damaged_step() {
    use agentweave_runtime::store::JournalError;
    use journal_contract::step;
    let dir = temp_dir("journal-torn");
    let store = FileStore::new(&dir).unwrap();
    store
        .append_steps(
            "run",
            0,
            vec![step("model_reply", "a"), step("tool_result", "b")],
        )
        .await
        .unwrap();
    let path = dir.join("journals/run/steps.log");
    let whole = std::fs::read(&path).unwrap();
    // Half of a third frame, as a crash mid-append leaves it.
    let mut torn = whole.clone();
    torn.extend_from_slice(b"AFJ1\x02\0\0\0\0\0\0\0partial");
    std::fs::write(&path, &torn).unwrap();
    assert_eq!(store.journal_len("run").await.unwrap(), 2);
    assert_eq!(store.read_steps("run", 0).await.unwrap().len(), 2);
    assert_eq!(
        store
            .append_steps("run", 2, vec![step("agent_end", "c")])
            .await
            .unwrap(),
        3
    );
    let kinds: Vec<String> = store
        .read_steps("run", 0)
        .await
        .unwrap()
        .into_iter()
        .map(|s| s.kind)
        .collect();
    assert_eq!(kinds, ["model_reply", "tool_result", "agent_end"]);
    // A flipped byte in the first step's body, with whole steps after it.
    let mut damaged = std::fs::read(&path).unwrap();
    let at = damaged.windows(1).position(|w| w == b"a").unwrap();
    damaged[at] = b'z';
    std::fs::write(&path, &damaged).unwrap();
    match store.read_steps("run", 0).await {
        Err(JournalError::Corrupt { seq: 0, .. }) => {}
        other => panic!("expected Corrupt, got {other:?}"),
    }
    assert_eq!(std::fs::read(&path).unwrap(), damaged, "left as it was");
    std::fs::remove_dir_all(&dir).unwrap();
}
