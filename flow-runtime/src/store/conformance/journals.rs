//! The checks of the [`JournalStore`] contract, each on a store given (see
//! [`journals`](super::journals)).

use std::sync::Arc;

use crate::store::{JournalError, JournalStore, StoredStep};
use crate::StoreError;

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

/// A worker appends to a run's journal; its claim is taken over, and the new holder appends
/// at the same length first: the old worker's append (and its unsynced append) is refused
/// with `Conflict` and writes nothing.
pub async fn append_after_takeover(store: &impl JournalStore, prefix: &str) {
    let run = format!("{prefix}journal-takeover");
    let old_len = store
        .append_steps(&run, 0, vec![step("model_reply", "old-1")])
        .await
        .unwrap();
    // The new holder reads the journal and continues it.
    let taken_at = store.journal_len(&run).await.unwrap();
    assert_eq!(taken_at, old_len);
    store
        .append_steps(&run, taken_at, vec![step("tool_result", "new-2")])
        .await
        .unwrap();
    for unsynced in [false, true] {
        let late = vec![step("tool_result", "old-2")];
        let refused = if unsynced {
            store.append_steps_unsynced(&run, old_len, late).await
        } else {
            store.append_steps(&run, old_len, late).await
        };
        assert!(
            matches!(
                refused,
                Err(JournalError::Conflict {
                    expected: 1,
                    found: 2,
                    ..
                })
            ),
            "the old holder's append (unsynced: {unsynced}) after a takeover was not refused: \
             {refused:?}"
        );
    }
    let bodies: Vec<Vec<u8>> = store
        .read_steps(&run, 0)
        .await
        .unwrap()
        .into_iter()
        .map(|s| s.bytes)
        .collect();
    assert_eq!(bodies, [b"old-1".to_vec(), b"new-2".to_vec()]);
    store.delete_journal(&run).await.unwrap();
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

/// 8 tasks, each appending 12 steps one by one to a run of its own through `handles` (so a
/// store that commits waiting appends together groups them), while a ninth appends at a stale
/// position: every run holds its steps in order, and only the stale append is refused.
pub async fn many_runs_append_at_once(handles: Vec<Arc<dyn JournalStore>>, prefix: &str) {
    let tasks: Vec<_> = (0..8)
        .map(|k| {
            let store = Arc::clone(&handles[k % handles.len()]);
            let run = format!("{prefix}journal-group-{k}");
            tokio::spawn(async move {
                for n in 0..12u64 {
                    let len = store
                        .append_steps(&run, n, vec![step("event", &format!("{k}-{n}"))])
                        .await
                        .unwrap();
                    assert_eq!(len, n + 1);
                }
            })
        })
        .collect();
    let stale = {
        let store = Arc::clone(&handles[0]);
        let run = format!("{prefix}journal-group-0");
        tokio::spawn(async move {
            // Waits until the run has steps, then appends as if it held none.
            while store.journal_len(&run).await.unwrap() == 0 {
                tokio::task::yield_now().await;
            }
            store
                .append_steps(&run, 0, vec![step("event", "stale")])
                .await
        })
    };
    for task in tasks {
        task.await.unwrap();
    }
    assert!(matches!(
        stale.await.unwrap(),
        Err(JournalError::Conflict { expected: 0, .. })
    ));
    for k in 0..8 {
        let run = format!("{prefix}journal-group-{k}");
        let steps = handles[0].read_steps(&run, 0).await.unwrap();
        let bodies: Vec<String> = steps
            .iter()
            .map(|s| String::from_utf8(s.bytes.clone()).unwrap())
            .collect();
        let expected: Vec<String> = (0..12).map(|n| format!("{k}-{n}")).collect();
        assert_eq!(bodies, expected, "run {k}");
        assert!(steps.iter().enumerate().all(|(n, s)| s.seq == n as u64));
    }
}

/// A step made when it is read.
struct Deferred(&'static str, &'static str);

impl crate::store::DeferredStep for Deferred {
    fn kind(&self) -> &str {
        self.0
    }

    fn encode(&self) -> Vec<u8> {
        self.1.as_bytes().to_vec()
    }
}

/// Deferred steps ([`JournalStore::append_deferred`]) read back as the steps they encode to,
/// numbered with the others, whether the store keeps them deferred or encodes them at once;
/// one with an invalid kind is refused (at the append, or at the read of a store that keeps
/// it deferred).
pub async fn deferred_steps_are_encoded_when_read(store: &impl JournalStore) {
    use crate::store::PendingStep;
    let pending = |kind, body| PendingStep {
        at_ms: 7,
        step: Arc::new(Deferred(kind, body)),
    };
    let run = "journal-deferred";
    store
        .append_steps(run, 0, vec![step("model_reply", "a")])
        .await
        .unwrap();
    let len = store
        .append_deferred(
            run,
            1,
            vec![pending("tool_result", "b"), pending("event", "c")],
        )
        .await
        .unwrap();
    assert_eq!(len, 3);
    assert!(matches!(
        store
            .append_deferred(run, 1, vec![pending("event", "d")])
            .await,
        Err(JournalError::Conflict {
            expected: 1,
            found: 3,
            ..
        })
    ));
    let steps = store.read_steps(run, 1).await.unwrap();
    let read: Vec<(u64, u64, &str, &[u8])> = steps
        .iter()
        .map(|s| (s.seq, s.at_ms, s.kind.as_str(), &s.bytes[..]))
        .collect();
    assert_eq!(
        read,
        vec![(1, 7, "tool_result", &b"b"[..]), (2, 7, "event", &b"c"[..])]
    );
    let bad = "journal-deferred-bad";
    let refused = match store
        .append_deferred(bad, 0, vec![pending("Not A Kind", "x")])
        .await
    {
        Err(e) => Some(e),
        Ok(_) => store.read_steps(bad, 0).await.err(),
    };
    assert!(
        matches!(refused, Some(JournalError::InvalidKind { .. })),
        "{refused:?}"
    );
    store.delete_journal(run).await.unwrap();
    store.delete_journal(bad).await.unwrap();
}

/// A batch of steps made when they are read.
struct Batch(Vec<(&'static str, &'static str)>);

impl crate::store::DeferredSteps for Batch {
    fn len(&self) -> usize {
        self.0.len()
    }

    fn kind(&self, index: usize) -> &str {
        self.0[index].0
    }

    fn encode(&self, index: usize) -> Vec<u8> {
        self.0[index].1.as_bytes().to_vec()
    }
}

/// Deferred batches ([`JournalStore::append_deferred_batch`]) read back as the steps they
/// encode to, numbered with the others and stamped with the batch's time, under the same
/// condition as any append; a read or a truncation that starts inside a batch sees or keeps
/// exactly the steps before or after its position.
pub async fn deferred_batches_read_back_and_cut(store: &impl JournalStore) {
    let run = "journal-batches";
    let batch = |steps: Vec<(&'static str, &'static str)>| -> Arc<dyn crate::store::DeferredSteps> {
        Arc::new(Batch(steps))
    };
    store
        .append_steps(run, 0, vec![step("model_reply", "a")])
        .await
        .unwrap();
    let len = store
        .append_deferred_batch(
            run,
            1,
            9,
            batch(vec![
                ("tool_result", "b"),
                ("event", "c"),
                ("transfer", "d"),
            ]),
        )
        .await
        .unwrap();
    assert_eq!(len, 4);
    assert!(matches!(
        store
            .append_deferred_batch(run, 1, 9, batch(vec![("event", "x")]))
            .await,
        Err(JournalError::Conflict {
            expected: 1,
            found: 4,
            ..
        })
    ));
    assert_eq!(
        store
            .append_deferred_batch(run, 4, 10, batch(vec![("agent_end", "e")]))
            .await
            .unwrap(),
        5
    );
    let read = |steps: Vec<StoredStep>| -> Vec<(u64, u64, String, Vec<u8>)> {
        steps
            .into_iter()
            .map(|s| (s.seq, s.at_ms, s.kind, s.bytes))
            .collect()
    };
    let owned = |seq, at_ms, kind: &str, body: &str| {
        (seq, at_ms, kind.to_owned(), body.as_bytes().to_vec())
    };
    // From the middle of the first batch.
    assert_eq!(
        read(store.read_steps(run, 2).await.unwrap()),
        vec![
            owned(2, 9, "event", "c"),
            owned(3, 9, "transfer", "d"),
            owned(4, 10, "agent_end", "e")
        ]
    );
    // Cut inside the first batch: its first step stays, the rest and the next batch go.
    store.truncate_steps(run, 2).await.unwrap();
    assert_eq!(store.journal_len(run).await.unwrap(), 2);
    assert_eq!(
        read(store.read_steps(run, 1).await.unwrap()),
        vec![owned(1, 9, "tool_result", "b")]
    );
    assert_eq!(
        store
            .append_deferred_batch(run, 2, 11, batch(vec![("event", "f")]))
            .await
            .unwrap(),
        3
    );
    assert_eq!(
        read(store.read_steps(run, 2).await.unwrap()),
        vec![owned(2, 11, "event", "f")]
    );
    // An empty batch appends nothing and keeps the condition.
    assert_eq!(
        store
            .append_deferred_batch(run, 3, 12, batch(Vec::new()))
            .await
            .unwrap(),
        3
    );
    assert!(store.delete_journal(run).await.unwrap());
    assert_eq!(store.journal_len(run).await.unwrap(), 0);
}

/// [`JournalStore::append_steps_unsynced`] keeps the contract of `append_steps`: the same
/// condition, the same numbering, read back the same.
pub async fn unsynced_appends_keep_the_condition(store: &impl JournalStore) {
    let run = "journal-unsynced";
    assert_eq!(
        store
            .append_steps_unsynced(run, 0, vec![step("model_reply", "a"), step("event", "b")])
            .await
            .unwrap(),
        2
    );
    assert!(matches!(
        store
            .append_steps_unsynced(run, 1, vec![step("event", "x")])
            .await,
        Err(JournalError::Conflict {
            expected: 1,
            found: 2,
            ..
        })
    ));
    store
        .append_steps(run, 2, vec![step("event", "c")])
        .await
        .unwrap();
    let bodies: Vec<(u64, Vec<u8>)> = store
        .read_steps(run, 0)
        .await
        .unwrap()
        .into_iter()
        .map(|s| (s.seq, s.bytes))
        .collect();
    assert_eq!(
        bodies,
        vec![(0, b"a".to_vec()), (1, b"b".to_vec()), (2, b"c".to_vec())]
    );
    store.delete_journal(run).await.unwrap();
}
