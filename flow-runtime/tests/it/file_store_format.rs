//! The File store's on-disk format is kept: a directory written by the File store before it
//! became the key-value front's keeper (`tests/fixtures/file_store_v1`: two runs, a thread of
//! two records with a turn lease, two journals, one ending in a torn frame) opens and reads
//! back through today's store, and what today's store writes has the same layout.

use std::fs;
use std::path::Path;
use std::time::Duration;

use agentweave_runtime::store::conformance::{record, step};
use agentweave_runtime::store::{
    CheckpointStore, FileStore, JournalStore, RecordStart, ThreadStore,
};
use agentweave_runtime::{SaveMode, ThreadError};

/// Copies the directory `from` into `to`.
fn copy(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy(&entry.path(), &target);
        } else {
            fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// A copy of the fixture, opened.
fn fixture(name: &str) -> (FileStore, std::path::PathBuf) {
    let dir = crate::support::dirs::temp_dir("file-format", name);
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/file_store_v1");
    copy(&fixture, &dir);
    (FileStore::new(&dir).unwrap(), dir)
}

/// The user's words in a record that starts a turn.
fn said(start: &RecordStart) -> String {
    match start {
        RecordStart::Turn { input } => input[0].content.clone(),
        other => panic!("a turn's record, not {other:?}"),
    }
}

#[tokio::test]
async fn checkpoints_written_by_the_old_layout_read_back_and_resume() {
    let (store, _) = fixture("checkpoints");
    assert_eq!(
        store.get("order-7").await.unwrap().unwrap(),
        b"waits for approval"
    );
    assert_eq!(store.get("done-1").await.unwrap().unwrap(), b"answered");
    let history = store.history("order-7").await.unwrap();
    assert_eq!(
        history.iter().map(|m| m.version).collect::<Vec<_>>(),
        [1, 2]
    );
    assert_eq!(history[1].parent, Some(1));

    // Only the interrupted run waits; it is claimed with its head's bytes.
    let pending = store.pending(10).await.unwrap();
    assert_eq!(pending.len(), 1);
    assert_eq!((pending[0].id.as_str(), pending[0].version), ("order-7", 2));
    let claim = store
        .claim("order-7", Duration::from_secs(60))
        .await
        .unwrap();
    assert_eq!(
        (claim.version, &claim.bytes[..]),
        (2, &b"waits for approval"[..])
    );
}

#[tokio::test]
async fn threads_and_their_lease_written_by_the_old_layout_read_back() {
    let (store, _) = fixture("threads");
    assert_eq!(store.list().await.unwrap(), ["chat-1"]);
    let head = store.head("chat-1").await.unwrap().unwrap();
    assert_eq!((head.version, head.turns), (2, 2));
    let records = store.read("chat-1", 0..u64::MAX).await.unwrap();
    let words: Vec<String> = records.iter().map(|r| said(&r.start)).collect();
    assert_eq!(words, ["My kettle broke", "It is a Brewmaster 3000"]);
    assert_eq!(store.read("chat-1", 1..2).await.unwrap()[0].seq, 1);

    // worker-a's lease (for a century) is still held; the thread goes on at version 2.
    let busy = store
        .lease_thread("chat-1", "worker-b", Duration::from_secs(60))
        .await;
    assert!(matches!(busy, Err(ThreadError::Busy { .. })), "{busy:?}");
    assert_eq!(
        store
            .append("chat-1", 2, record(2, "Thanks"))
            .await
            .unwrap(),
        3
    );
}

#[tokio::test]
async fn journals_written_by_the_old_layout_read_back_past_a_torn_frame() {
    let (store, dir) = fixture("journals");
    let log = dir.join("journals/order-7/steps.log");
    let torn_size = fs::metadata(&log).unwrap().len();

    // The torn last frame (a crash during an append) is not a step.
    assert_eq!(store.journal_len("order-7").await.unwrap(), 3);
    let steps = store.read_steps("order-7", 0).await.unwrap();
    let read: Vec<(u64, &str, &[u8])> = steps
        .iter()
        .map(|s| (s.seq, s.kind.as_str(), &s.bytes[..]))
        .collect();
    assert_eq!(
        read,
        [
            (0, "model", &b"a"[..]),
            (1, "tool", &b"bb"[..]),
            (2, "model", &b"ccc"[..])
        ]
    );
    let idle = store.idle_journals(u64::MAX).await.unwrap();
    let runs: Vec<(&str, u64)> = idle.iter().map(|j| (j.run.as_str(), j.steps)).collect();
    assert_eq!(runs, [("done-1", 1), ("order-7", 3)]);

    // The next append cuts the torn frame off and goes on at step 3.
    let appended = store
        .append_steps("order-7", 3, vec![step("tool", "dddd")])
        .await
        .unwrap();
    assert_eq!(appended, 4);
    let last = store.read_steps("order-7", 3).await.unwrap();
    assert_eq!((last[0].seq, &last[0].bytes[..]), (3, &b"dddd"[..]));
    let frame = 4 + 8 + 8 + 1 + 4 + "tool".len() as u64 + 4 + 8 + 4;
    assert_eq!(fs::metadata(&log).unwrap().len(), torn_size - 16 + frame);
}

#[tokio::test]
async fn what_the_store_writes_has_the_old_layout() {
    let (store, dir) = fixture("layout");
    store
        .save("new-1", b"fresh".to_vec(), SaveMode::Create)
        .await
        .unwrap();
    assert_eq!(fs::read(dir.join("runs/new-1/1.ckpt")).unwrap(), b"fresh");
    let index = fs::read_to_string(dir.join("runs/new-1/records.json")).unwrap();
    assert!(index.starts_with(r#"{"records":[{"version":1,"parent":null,"state":"pending""#));

    store.append("chat-2", 0, record(0, "Hello")).await.unwrap();
    let first = fs::read(dir.join("threads/chat-2/00000000000000000000.json")).unwrap();
    assert!(first.starts_with(br#"{"seq":0,"turn":0"#));

    store
        .lease_thread("chat-2", "worker-c", Duration::from_secs(60))
        .await
        .unwrap();
    let lease = fs::read_to_string(dir.join("thread-leases/chat-2/lease.json")).unwrap();
    assert!(lease.starts_with(r#"{"owner":"worker-c","until_ms":"#));

    store
        .append_steps("new-1", 0, vec![step("model", "x")])
        .await
        .unwrap();
    let log = fs::read(dir.join("journals/new-1/steps.log")).unwrap();
    assert!(log.starts_with(b"AFJ1"));
}
