//! The [`JournalStore`] contract, checked the same way on every store.

use std::sync::Arc;

use flow_runtime::store::{JournalError, JournalStore, StoredStep};
use flow_runtime::StoreError;

/// A step of `kind` holding `body`.
pub fn step(kind: &str, body: &str) -> StoredStep {
    StoredStep {
        seq: 0,
        at_ms: 1_764_763_200_000,
        kind: kind.to_owned(),
        bytes: body.as_bytes().to_vec(),
    }
}

/// Appends, reads, lengths, the compare-and-swap, truncation and deletion; `other` is a second
/// handle on the same store (another connection or directory handle). Ids are prefixed.
pub async fn appends_reads_truncates_deletes(
    store: &impl JournalStore,
    other: &impl JournalStore,
    prefix: &str,
) {
    let run = format!("{prefix}journal-1");
    assert_eq!(store.journal_len(&run).await.unwrap(), 0);
    assert!(store.read_steps(&run, 0).await.unwrap().is_empty());
    let n = store
        .append_steps(
            &run,
            0,
            vec![step("model_reply", "a"), step("tool_result", "b")],
        )
        .await
        .unwrap();
    assert_eq!(n, 2);
    assert_eq!(
        store
            .append_steps(&run, 2, vec![step("agent_end", "c")])
            .await
            .unwrap(),
        3
    );
    // The other handle sees every step, numbered, in order.
    let read = other.read_steps(&run, 0).await.unwrap();
    let seen: Vec<(u64, &str, &[u8])> = read
        .iter()
        .map(|s| (s.seq, s.kind.as_str(), &s.bytes[..]))
        .collect();
    assert_eq!(
        seen,
        [
            (0, "model_reply", &b"a"[..]),
            (1, "tool_result", &b"b"[..]),
            (2, "agent_end", &b"c"[..])
        ]
    );
    assert_eq!(read[0].at_ms, 1_764_763_200_000);
    assert_eq!(other.journal_len(&run).await.unwrap(), 3);
    assert_eq!(other.read_steps(&run, 2).await.unwrap().len(), 1);
    assert!(other.read_steps(&run, 9).await.unwrap().is_empty());
    // A writer that expected another length is refused, and nothing is written.
    match other
        .append_steps(&run, 1, vec![step("model_reply", "x")])
        .await
    {
        Err(JournalError::Conflict {
            expected: 1,
            found: 3,
            ..
        }) => {}
        r => panic!("expected Conflict, got {r:?}"),
    }
    assert_eq!(store.journal_len(&run).await.unwrap(), 3);
    // Truncation drops the steps from a position on; appends continue from there.
    store.truncate_steps(&run, 1).await.unwrap();
    assert_eq!(other.journal_len(&run).await.unwrap(), 1);
    store.truncate_steps(&run, 5).await.unwrap();
    assert_eq!(
        other
            .append_steps(&run, 1, vec![step("interrupt", "d")])
            .await
            .unwrap(),
        2
    );
    let kinds: Vec<String> = store
        .read_steps(&run, 0)
        .await
        .unwrap()
        .into_iter()
        .map(|s| s.kind)
        .collect();
    assert_eq!(kinds, ["model_reply", "interrupt"]);
    // An empty append changes nothing.
    assert_eq!(store.append_steps(&run, 2, vec![]).await.unwrap(), 2);
    // Journals are apart.
    let second = format!("{prefix}journal-2");
    store
        .append_steps(&second, 0, vec![step("model_reply", "z")])
        .await
        .unwrap();
    assert_eq!(store.journal_len(&run).await.unwrap(), 2);
    // Deletion removes every step.
    assert!(store.delete_journal(&run).await.unwrap());
    assert!(!store.delete_journal(&run).await.unwrap());
    assert_eq!(other.journal_len(&run).await.unwrap(), 0);
    assert!(other.read_steps(&run, 0).await.unwrap().is_empty());
    assert_eq!(store.journal_len(&second).await.unwrap(), 1);
}

/// Ids that could escape the store and bad kinds are refused before anything is written.
pub async fn refuses_bad_ids_and_kinds(store: &impl JournalStore) {
    for id in ["", "../x", "/etc/passwd", "a/b", ".hidden", "nul\0"] {
        assert!(
            matches!(
                store
                    .append_steps(id, 0, vec![step("model_reply", "a")])
                    .await,
                Err(JournalError::Store(StoreError::InvalidId { .. }))
            ),
            "{id:?}"
        );
        assert!(store.read_steps(id, 0).await.is_err(), "{id:?}");
    }
    for kind in ["", "Model", "a b", "x/../y"] {
        assert!(
            matches!(
                store.append_steps("kinds", 0, vec![step(kind, "a")]).await,
                Err(JournalError::InvalidKind { .. })
            ),
            "{kind:?}"
        );
    }
    assert_eq!(store.journal_len("kinds").await.unwrap(), 0);
}

/// Of 8 tasks appending at position 0 at once, through `handles`, exactly one succeeds.
pub async fn one_append_among_tasks(handles: Vec<Arc<dyn JournalStore>>, prefix: &str) {
    let run = format!("{prefix}journal-race");
    let tasks: Vec<_> = (0..8)
        .map(|k| {
            let store = Arc::clone(&handles[k % handles.len()]);
            let run = run.clone();
            tokio::spawn(async move {
                store
                    .append_steps(&run, 0, vec![step("model_reply", &k.to_string())])
                    .await
            })
        })
        .collect();
    let mut won = 0;
    for task in tasks {
        match task.await.unwrap() {
            Ok(1) => won += 1,
            Err(JournalError::Conflict { .. }) => {}
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(won, 1);
    assert_eq!(handles[0].journal_len(&run).await.unwrap(), 1);
}
