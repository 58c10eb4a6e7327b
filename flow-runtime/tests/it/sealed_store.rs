//! Encryption at rest: a `SealedStore` around a `FileStore` and a `SqliteStore` keeps no
//! plaintext of a conversation (user message, instruction, tool arguments, the interrupt's
//! question, the answer) in any byte on disk, while the runner reads it all back; keys rotate
//! (old records open with their old key, new ones use the new key); an unknown key, the wrong
//! key or altered bytes are typed errors that change nothing (the right key still opens it).

use crate::support;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use agentweave_runtime::model::{ScriptStep, ScriptedModel};
use agentweave_runtime::store::{
    JournalStore, SealError, SealedStore, SealingKeys, StoreError, ThreadStore,
};
use agentweave_runtime::TurnRequest;
use agentweave_runtime::{
    tool_fn_with_context, ChatModelAgent, CheckpointStore, Durability, FileStore, FlowAgent,
    Message, Runner, ThreadError, ToolContext, TurnOutcome,
};
use base64::Engine as _;
use serde_json::{json, Value};
use support::{journal_contract, thread_contract};

const SECRET_MESSAGE: &str = "my-passport-number-X1234567";
const SECRET_INSTRUCTION: &str = "INSTRUCTION-CANARY-vault-7311";
const SECRET_ARGUMENT: &str = "acct-SECRET-ARG-998877";
const SECRET_QUESTION: &str = "Wire-the-SECRET-QUESTION-funds";
const SECRET_ANSWER: &str = "Transfer-SECRET-ANSWER-done";
const SECRETS: [&str; 5] = [
    SECRET_MESSAGE,
    SECRET_INSTRUCTION,
    SECRET_ARGUMENT,
    SECRET_QUESTION,
    SECRET_ANSWER,
];

/// A desk whose agent has a secret instruction, calls a tool with a secret argument, and the
/// tool waits for a human's approval with a secret question; approved, it answers a secret.
fn desk() -> FlowAgent {
    let model = ScriptedModel::rules()
        .after_tool("wire", ScriptStep::text(SECRET_ANSWER))
        .otherwise(ScriptStep::tool_call(
            "wire",
            json!({ "account": SECRET_ARGUMENT }),
        ));
    let agent = ChatModelAgent::builder("desk", model)
        .instruction(SECRET_INSTRUCTION)
        .tool(tool_fn_with_context(
            "wire",
            "Wires money once a human approves.",
            |cx: ToolContext, _args: Value| async move {
                match cx.resume_data() {
                    Some(_) => Ok::<_, agentweave_runtime::ToolError>("wired".to_owned()),
                    None => Err(cx.interrupt(json!({ "question": SECRET_QUESTION }))),
                }
            },
        ))
        .build()
        .unwrap();
    FlowAgent::new(agent)
}

fn keys(id: &str, byte: u8) -> SealingKeys {
    SealingKeys::new(id, [byte; 32]).unwrap()
}

fn temp(name: &str) -> PathBuf {
    crate::support::dirs::fresh_dir("sealed", name)
}

/// Every byte of every file under `dir`.
fn all_bytes(dir: &Path) -> Vec<u8> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if let Ok(bytes) = std::fs::read(&path) {
                out.extend(bytes);
            }
        }
    }
    out
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

/// Runs the desk's turn (interrupted), then approves it, through `runner`; returns the thread's
/// messages as text.
async fn converse(runner: &Runner, thread: &str) -> String {
    let turn = runner
        .turn(TurnRequest::new(thread, Message::user(SECRET_MESSAGE)))
        .await
        .unwrap();
    let TurnOutcome::Interrupted { interrupts, .. } = turn.finish().await else {
        panic!("the turn waits for approval");
    };
    let targets = HashMap::from([(interrupts[0].id.clone(), json!({ "approve": true }))]);
    let resumed = runner
        .turn(TurnRequest::resume(thread, targets))
        .await
        .unwrap();
    assert!(
        matches!(resumed.finish().await, TurnOutcome::Completed { .. }),
        "the resumed turn completes"
    );
    messages(runner, thread).await
}

async fn messages(runner: &Runner, thread: &str) -> String {
    runner
        .thread(thread)
        .messages()
        .await
        .unwrap()
        .iter()
        .map(|m| m.message.content.clone())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Checks that a sealed store keeps what a runner needs, and nothing in plain on disk.
async fn keeps_nothing_plain<S>(store: SealedStore<S>, dir: &Path)
where
    S: ThreadStore + CheckpointStore + JournalStore + Clone,
{
    let runner = Runner::builder(desk())
        .stores(store.clone())
        .journal_store(store.clone())
        .durability(Durability::Sync)
        .build();
    let text = converse(&runner, "t1").await;
    assert!(text.contains(SECRET_MESSAGE), "{text}");
    assert!(text.contains(SECRET_ANSWER), "{text}");

    // The same turn through a plain store of the same kind shows the secrets are there to
    // hide: the plain run writes them.
    let disk = all_bytes(dir);
    assert!(!disk.is_empty(), "the store wrote files");
    for secret in SECRETS {
        assert!(!contains(&disk, secret), "{secret} is on disk in plain");
    }
    // The journal's steps were written, sealed.
    let steps = store
        .inner()
        .read_steps(&agentweave_runtime::turn_journal_id("t1", 0), 0)
        .await
        .unwrap();
    for step in &steps {
        assert!(SealingKeys::is_sealed(&step.bytes), "{step:?}");
    }
}

#[tokio::test]
async fn a_plain_file_store_holds_the_secrets_the_sealed_one_hides() {
    let dir = temp("plain");
    let runner = Runner::builder(desk())
        .stores(FileStore::new(&dir).unwrap())
        .build();
    converse(&runner, "t1").await;
    let disk = all_bytes(&dir);
    for secret in [SECRET_MESSAGE, SECRET_ANSWER, SECRET_QUESTION] {
        assert!(contains(&disk, secret), "the plain store keeps {secret}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn a_sealed_file_store_keeps_no_plaintext_on_disk() {
    let dir = temp("file");
    let store = SealedStore::new(FileStore::new(&dir).unwrap(), keys("k1", 1));
    keeps_nothing_plain(store, &dir).await;
    std::fs::remove_dir_all(&dir).unwrap();
}

#[cfg(feature = "sqlite")]
#[tokio::test]
async fn a_sealed_sqlite_store_keeps_no_plaintext_on_disk() {
    let dir = temp("sqlite");
    let sqlite = agentweave_runtime::store::SqliteStore::open(dir.join("store.db"))
        .await
        .unwrap();
    let store = SealedStore::new(sqlite, keys("k1", 1));
    keeps_nothing_plain(store, &dir).await;
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The key id the sealed record `seq` of `thread` names, read through the inner store.
async fn key_of_record(inner: &FileStore, thread: &str, seq: u64) -> String {
    let records = inner.read(thread, 0..u64::MAX).await.unwrap();
    let record = records.iter().find(|r| r.seq == seq).unwrap();
    let sealed = base64::engine::general_purpose::STANDARD
        .decode(record.sealed.as_ref().expect("a sealed record"))
        .unwrap();
    SealingKeys::key_id_of(&sealed).unwrap().to_owned()
}

#[tokio::test]
async fn keys_rotate_old_records_open_with_their_key_new_ones_use_the_new_key() {
    let dir = temp("rotate");
    let inner = FileStore::new(&dir).unwrap();
    let old = Runner::builder(desk())
        .stores(SealedStore::new(inner.clone(), keys("2026-01", 1)))
        .build();
    let before = converse(&old, "t1").await;
    assert_eq!(key_of_record(&inner, "t1", 0).await, "2026-01");

    // Rotated: the new key is current, the old one still opens.
    let rotated_keys = keys("2026-06", 2).with_old_key("2026-01", [1; 32]).unwrap();
    let rotated = Runner::builder(desk())
        .stores(SealedStore::new(inner.clone(), rotated_keys))
        .build();
    assert_eq!(messages(&rotated, "t1").await, before);
    let turn = rotated
        .turn(TurnRequest::new("t1", Message::user("and one more")))
        .await
        .unwrap();
    assert!(matches!(
        turn.finish().await,
        TurnOutcome::Interrupted { .. }
    ));
    let records = inner.read("t1", 0..u64::MAX).await.unwrap();
    let last = records.last().unwrap().seq;
    assert_eq!(key_of_record(&inner, "t1", last).await, "2026-06");
    assert_eq!(key_of_record(&inner, "t1", 0).await, "2026-01");

    // Without the old key, the old records are an error naming the missing key, and nothing
    // is lost: with it, they open again.
    let only_new = SealedStore::new(inner.clone(), keys("2026-06", 2));
    let err = only_new.read("t1", 0..u64::MAX).await.unwrap_err();
    match &err {
        ThreadError::Store(StoreError::Sealed(SealError::UnknownKey { key_id, what, .. })) => {
            assert_eq!(key_id, "2026-01");
            assert!(what.contains("thread 't1'"), "{what}");
        }
        other => panic!("an unknown key error, not {other:?}"),
    }
    assert!(err.to_string().contains("with_old_key"), "{err}");
    assert!(messages(&rotated, "t1").await.starts_with(&before));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn the_wrong_key_or_altered_bytes_are_typed_errors_and_change_nothing() {
    let dir = temp("tamper");
    let inner = FileStore::new(&dir).unwrap();
    let runner = Runner::builder(desk())
        .stores(SealedStore::new(inner.clone(), keys("k1", 1)))
        .build();
    let turn = runner
        .turn(TurnRequest::new("t1", Message::user(SECRET_MESSAGE)))
        .await
        .unwrap();
    let TurnOutcome::Interrupted { checkpoint_id, .. } = turn.finish().await else {
        panic!("the turn waits for approval");
    };

    // Same key id, other key bytes: neither the thread nor the checkpoint opens.
    let wrong = SealedStore::new(inner.clone(), keys("k1", 9));
    let err = wrong.head("t1").await.unwrap_err();
    assert!(
        matches!(
            &err,
            ThreadError::Store(StoreError::Sealed(SealError::Tampered { key_id, .. })) if key_id == "k1"
        ),
        "{err:?}"
    );
    let err = CheckpointStore::get(&wrong, &checkpoint_id)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, StoreError::Sealed(SealError::Tampered { .. })),
        "{err:?}"
    );
    // A claim that does not open is given back: the right key still claims it.
    let err = wrong
        .claim(&checkpoint_id, std::time::Duration::from_secs(30))
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::Sealed(_)), "{err:?}");

    // A flipped character inside a stored record's sealed text.
    let record_file = find_file_containing(&dir.join("threads"), "\"sealed\"").expect("a record");
    let original = std::fs::read_to_string(&record_file).unwrap();
    let start = original.find("\"sealed\":\"").unwrap() + 10;
    let at = start + original[start..].find('"').unwrap() - 10;
    let mut altered = original.clone().into_bytes();
    altered[at] = if altered[at] == b'A' { b'B' } else { b'A' };
    std::fs::write(&record_file, &altered).unwrap();
    let sealed = SealedStore::new(inner.clone(), keys("k1", 1));
    let err = sealed.read("t1", 0..u64::MAX).await.unwrap_err();
    assert!(
        matches!(
            err,
            ThreadError::Store(StoreError::Sealed(SealError::Tampered { .. }))
        ),
        "{err:?}"
    );
    // Put back, everything opens and the turn resumes: nothing was lost.
    std::fs::write(&record_file, original).unwrap();
    let head = sealed.head("t1").await.unwrap().unwrap();
    let agentweave_runtime::store::RecordEnd::Interrupted { interrupts, .. } = &head.last.end
    else {
        panic!("the thread waits");
    };
    assert_eq!(interrupts[0].info["question"], SECRET_QUESTION);
    let targets = HashMap::from([(interrupts[0].id.clone(), json!({ "approve": true }))]);
    let resumed = runner
        .turn(TurnRequest::resume("t1", targets))
        .await
        .unwrap();
    assert!(matches!(
        resumed.finish().await,
        TurnOutcome::Completed { .. }
    ));
    std::fs::remove_dir_all(&dir).unwrap();
}

fn find_file_containing(dir: &Path, needle: &str) -> Option<PathBuf> {
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).ok()? {
            let path = entry.ok()?.path();
            if path.is_dir() {
                stack.push(path);
            } else if std::fs::read_to_string(&path).is_ok_and(|t| t.contains(needle)) {
                return Some(path);
            }
        }
    }
    None
}

#[tokio::test]
async fn a_sealed_store_keeps_the_thread_and_journal_contracts() {
    let dir = temp("contract");
    let a = SealedStore::new(FileStore::new(&dir).unwrap(), keys("k1", 1));
    let b = SealedStore::new(FileStore::new(&dir).unwrap(), keys("k1", 1));
    thread_contract::appends_reads_list_delete(&a, &b, "").await;
    thread_contract::leases(&a, "").await;
    journal_contract::appends_reads_truncates_deletes(&a, &b, "").await;
    journal_contract::one_append_among_tasks(vec![Arc::new(a.clone()), Arc::new(b)], "").await;
    // Checkpoints: claims, pending lists and purges (sizes in the history are the sealed
    // bytes', so the lifecycle's size checks do not apply).
    support::contract::pending_and_purge(&a, "").await;
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn a_runner_without_the_keys_gets_a_typed_error_not_an_empty_thread() {
    let dir = temp("nokeys");
    let inner = FileStore::new(&dir).unwrap();
    let sealed = Runner::builder(desk())
        .stores(SealedStore::new(inner.clone(), keys("k1", 1)))
        .build();
    let turn = sealed
        .turn(TurnRequest::new("t1", Message::user(SECRET_MESSAGE)))
        .await
        .unwrap();
    let TurnOutcome::Interrupted { checkpoint_id, .. } = turn.finish().await else {
        panic!("the turn waits for approval");
    };

    let plain = Runner::builder(desk()).stores(inner.clone()).build();
    let err = plain.thread("t1").messages().await.unwrap_err();
    assert!(
        matches!(
            &err,
            ThreadError::Store(StoreError::Sealed(SealError::NoKeys { key_id, .. })) if key_id == "k1"
        ),
        "{err:?}"
    );
    assert!(err.to_string().contains("SealedStore"), "{err}");
    let Err(err) = plain
        .turn(TurnRequest::new("t1", Message::user("hello")))
        .await
    else {
        panic!("no turn on a thread it cannot read");
    };
    assert!(
        matches!(err, ThreadError::Store(StoreError::Sealed(_))),
        "{err:?}"
    );
    let bytes = CheckpointStore::get(&inner, &checkpoint_id)
        .await
        .unwrap()
        .unwrap();
    let err = agentweave_runtime::store::CheckpointCodec::default()
        .decode(&checkpoint_id, &bytes)
        .unwrap_err();
    assert!(
        matches!(
            err,
            agentweave_runtime::CheckpointError::Store(StoreError::Sealed(
                SealError::NoKeys { .. }
            ))
        ),
        "{err:?}"
    );
    // Nothing was lost: with the keys, the thread reads.
    assert!(messages(&sealed, "t1").await.contains(SECRET_MESSAGE));
    std::fs::remove_dir_all(&dir).unwrap();
}
