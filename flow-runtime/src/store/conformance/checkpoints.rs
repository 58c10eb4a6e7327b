//! The checks of the checkpoint store contract ([`CheckpointStore`]: checkpoints and their
//! claims), each on a store given (see [`checkpoints`](super::checkpoints)).

use std::sync::Arc;
use std::time::Duration;

use crate::store::{CheckpointState, CheckpointStore, Completion, SaveMode, StoreError};

const MINUTE: Duration = Duration::from_secs(60);

/// Ids that try to escape a store, each refused by every method.
pub fn hostile_ids() -> Vec<String> {
    vec![
        "../x".into(),
        "a/../../x".into(),
        "/etc/passwd".into(),
        "a\0b".into(),
        "x".repeat(161),
        "x".repeat(100_000),
        String::new(),
        ".hidden".into(),
        "..".into(),
        "a b".into(),
        "ü".into(),
    ]
}

/// Every method refuses every hostile id with `InvalidId`.
pub async fn refuses_escaping_ids(store: &dyn CheckpointStore) {
    for id in hostile_ids() {
        let invalid = |r: Result<(), StoreError>, what: &str| {
            assert!(
                matches!(r, Err(StoreError::InvalidId { .. })),
                "{what} of {:?} was not refused: {r:?}",
                id.chars().take(20).collect::<String>()
            );
        };
        invalid(store.get(&id).await.map(|_| ()), "get");
        invalid(
            store
                .save(&id, b"x".to_vec(), SaveMode::Create)
                .await
                .map(|_| ()),
            "save",
        );
        invalid(
            store
                .save(&id, b"x".to_vec(), SaveMode::Replace)
                .await
                .map(|_| ()),
            "replace",
        );
        invalid(store.claim(&id, MINUTE).await.map(|_| ()), "claim");
        invalid(store.history(&id).await.map(|_| ()), "history");
        invalid(store.delete(&id).await, "delete");
    }
}

/// Create, replace, claim, complete, history, takeover, release, pending, purge, delete.
pub async fn lifecycle(store: &dyn CheckpointStore, p: &str) {
    let id = format!("{p}life");
    assert_eq!(store.get(&id).await.unwrap(), None);
    assert!(matches!(
        store.claim(&id, MINUTE).await,
        Err(StoreError::NotFound { .. })
    ));
    assert_eq!(
        store
            .save(&id, b"one".to_vec(), SaveMode::Create)
            .await
            .unwrap(),
        1
    );
    // A waiting run is not silently replaced.
    let err = store
        .save(&id, b"two".to_vec(), SaveMode::Create)
        .await
        .unwrap_err();
    assert!(
        matches!(err, StoreError::Pending { version: 1, .. }),
        "{err}"
    );
    assert_eq!(store.get(&id).await.unwrap().unwrap(), b"one");
    // Replacing is explicit, and kept in the history.
    assert_eq!(
        store
            .save(&id, b"two".to_vec(), SaveMode::Replace)
            .await
            .unwrap(),
        2
    );
    assert_eq!(store.get(&id).await.unwrap().unwrap(), b"two");

    let claim = store.claim(&id, MINUTE).await.unwrap();
    assert_eq!((claim.version, claim.attempt), (2, 1));
    assert_eq!(claim.bytes, b"two");
    let err = store.claim(&id, MINUTE).await.unwrap_err();
    assert!(
        matches!(err, StoreError::Claimed { attempt: 1, .. }),
        "{err}"
    );
    store.renew(&claim, MINUTE).await.unwrap();
    // Interrupted again: a new pending record, child of the claimed one.
    assert_eq!(
        store
            .complete(&claim, Completion::Interrupted(b"three".to_vec()))
            .await
            .unwrap(),
        3
    );
    // The completed claim is spent.
    assert!(matches!(
        store
            .complete(&claim, Completion::Finished(b"x".to_vec()))
            .await,
        Err(StoreError::ClaimLost { .. })
    ));
    assert!(matches!(
        store.renew(&claim, MINUTE).await,
        Err(StoreError::ClaimLost { .. })
    ));

    // A lease that ran out is taken over; the old holder can no longer complete.
    let dying = store.claim(&id, Duration::ZERO).await.unwrap();
    assert_eq!((dying.version, dying.attempt), (3, 1));
    let taker = store.claim(&id, MINUTE).await.unwrap();
    assert_eq!((taker.version, taker.attempt), (3, 2));
    assert_eq!(taker.bytes, b"three");
    assert!(matches!(
        store
            .complete(&dying, Completion::Finished(b"late".to_vec()))
            .await,
        Err(StoreError::ClaimLost { attempt: 1, .. })
    ));
    // Releasing a lost claim does nothing; releasing a held one makes it claimable again.
    store.release(&dying).await.unwrap();
    assert!(matches!(
        store.claim(&id, MINUTE).await,
        Err(StoreError::Claimed { .. })
    ));
    store.release(&taker).await.unwrap();
    let last = store.claim(&id, MINUTE).await.unwrap();
    assert_eq!((last.version, last.attempt), (3, 3));
    assert_eq!(
        store
            .complete(&last, Completion::Finished(b"four".to_vec()))
            .await
            .unwrap(),
        4
    );
    assert!(matches!(
        store.claim(&id, MINUTE).await,
        Err(StoreError::AlreadyResumed { .. })
    ));
    assert_eq!(store.get(&id).await.unwrap().unwrap(), b"four");

    let history = store.history(&id).await.unwrap();
    let shape: Vec<(u64, Option<u64>, CheckpointState)> = history
        .iter()
        .map(|m| (m.version, m.parent, m.state))
        .collect();
    assert_eq!(
        shape,
        [
            (1, None, CheckpointState::Replaced),
            (2, Some(1), CheckpointState::Resumed),
            (3, Some(2), CheckpointState::Resumed),
            (4, Some(3), CheckpointState::Finished),
        ]
    );
    // Sizes are the stored bytes': the saved ones, plus what a layer (sealing) adds to each.
    let sizes: Vec<u64> = history.iter().map(|m| m.size).collect();
    let overhead = sizes[0]
        .checked_sub(3)
        .expect("a record is as large as its bytes");
    assert_eq!(
        sizes,
        [3, 3, 5, 4].map(|n| n + overhead),
        "each record's size is its bytes' length (plus the same overhead for each)"
    );
    assert!(history.iter().all(|m| m.id == id));
    assert!(history
        .windows(2)
        .all(|w| w[0].created_at <= w[1].created_at));

    // A finished run's id can start a new run.
    assert_eq!(
        store
            .save(&id, b"again".to_vec(), SaveMode::Create)
            .await
            .unwrap(),
        5
    );
    assert_eq!(store.history(&id).await.unwrap()[4].parent, None);

    store.delete(&id).await.unwrap();
    store.delete(&id).await.unwrap();
    assert_eq!(store.get(&id).await.unwrap(), None);
    assert!(store.history(&id).await.unwrap().is_empty());
    assert!(matches!(
        store.claim(&id, MINUTE).await,
        Err(StoreError::NotFound { .. })
    ));
}

/// `pending` lists waiting heads oldest first; `purge_finished` deletes finished runs only.
/// Expects a store with no other checkpoints.
pub async fn pending_and_purge(store: &dyn CheckpointStore, p: &str) {
    let ids: Vec<String> = (0..3).map(|k| format!("{p}pend-{k}")).collect();
    for id in &ids {
        store
            .save(id, id.as_bytes().to_vec(), SaveMode::Create)
            .await
            .unwrap();
        // Distinct creation times, so the order is defined.
        tokio::time::sleep(Duration::from_millis(3)).await;
    }
    let pending = store.pending(10).await.unwrap();
    let listed: Vec<&str> = pending.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(listed, ids.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(pending[1].bytes, ids[1].as_bytes());
    assert_eq!(pending[1].version, 1);
    assert_eq!(store.pending(2).await.unwrap().len(), 2);

    // Finish the first; the second stays claimed (still listed: a claim may be lost).
    let c = store.claim(&ids[0], MINUTE).await.unwrap();
    store
        .complete(&c, Completion::Finished(b"done".to_vec()))
        .await
        .unwrap();
    let _held = store.claim(&ids[1], MINUTE).await.unwrap();
    let listed: Vec<String> = store
        .pending(10)
        .await
        .unwrap()
        .into_iter()
        .map(|c| c.id)
        .collect();
    assert_eq!(listed, [ids[1].clone(), ids[2].clone()]);

    // Retention: a run finished less than an hour ago is kept; with no age it goes.
    assert_eq!(
        store
            .purge_finished(Duration::from_secs(3600))
            .await
            .unwrap(),
        0
    );
    assert_eq!(store.purge_finished(Duration::ZERO).await.unwrap(), 1);
    assert!(store.history(&ids[0]).await.unwrap().is_empty());
    assert_eq!(store.history(&ids[1]).await.unwrap().len(), 1);
    for id in &ids {
        store.delete(id).await.unwrap();
    }
}

/// `limited` refuses checkpoints over 16 bytes (reading what `open` wrote, and writing).
pub async fn size_limit(open: &dyn CheckpointStore, limited: &dyn CheckpointStore, p: &str) {
    let id = format!("{p}big");
    open.save(&id, vec![7; 17], SaveMode::Create).await.unwrap();
    for result in [
        limited.get(&id).await.map(|_| ()),
        limited.claim(&id, MINUTE).await.map(|_| ()),
        limited
            .save(&format!("{p}big2"), vec![7; 17], SaveMode::Create)
            .await
            .map(|_| ()),
    ] {
        assert!(
            matches!(
                result,
                Err(StoreError::TooLarge {
                    size: 17,
                    limit: 16,
                    ..
                })
            ),
            "{result:?}"
        );
    }
    // The refused claim took nothing.
    assert!(open.claim(&id, MINUTE).await.is_ok());
    open.delete(&id).await.unwrap();
}

/// 32 tasks claim one checkpoint at once: exactly one wins, every other is told `Claimed`.
pub async fn one_claim_among_tasks(store: Arc<dyn CheckpointStore>, p: &str) {
    for trial in 0..10 {
        let id = format!("{p}race-{trial}");
        store
            .save(&id, b"x".to_vec(), SaveMode::Create)
            .await
            .unwrap();
        let tasks: Vec<_> = (0..32)
            .map(|_| {
                let store = Arc::clone(&store);
                let id = id.clone();
                tokio::spawn(async move { store.claim(&id, MINUTE).await })
            })
            .collect();
        let mut won = 0;
        for t in tasks {
            match t.await.unwrap() {
                Ok(_) => won += 1,
                Err(StoreError::Claimed { .. }) => {}
                Err(e) => panic!("unexpected error: {e}"),
            }
        }
        assert_eq!(won, 1, "trial {trial}");
        store.delete(&id).await.unwrap();
    }
}

/// A claim whose lease ran out (a lease of zero) is taken over by exactly one of 16 tasks
/// claiming at once (claim 2; the others are told `Claimed`); the old holder's renew and
/// complete are then refused with `ClaimLost` and write nothing; the winner completes.
pub async fn takeover_among_tasks(store: Arc<dyn CheckpointStore>, p: &str) {
    for trial in 0..5 {
        let id = format!("{p}takeover-{trial}");
        store
            .save(&id, b"x".to_vec(), SaveMode::Create)
            .await
            .unwrap();
        let dying = store.claim(&id, Duration::ZERO).await.unwrap();
        assert_eq!(
            dying.attempt, 1,
            "trial {trial}: the first claim is claim 1"
        );
        let tasks: Vec<_> = (0..16)
            .map(|_| {
                let store = Arc::clone(&store);
                let id = id.clone();
                tokio::spawn(async move { store.claim(&id, MINUTE).await })
            })
            .collect();
        let mut winners = Vec::new();
        for t in tasks {
            match t.await.unwrap() {
                Ok(claim) => winners.push(claim),
                Err(StoreError::Claimed { .. }) => {}
                Err(e) => panic!("trial {trial}: a claimant got an unexpected error: {e}"),
            }
        }
        assert_eq!(
            winners.len(),
            1,
            "trial {trial}: {} of 16 claimants took the expired lease over",
            winners.len()
        );
        let taker = winners.pop().unwrap();
        assert_eq!(taker.attempt, 2, "trial {trial}: a takeover is claim 2");
        assert!(
            matches!(
                store.renew(&dying, MINUTE).await,
                Err(StoreError::ClaimLost { attempt: 1, .. })
            ),
            "trial {trial}: the old holder renewed a lease taken over"
        );
        assert!(
            matches!(
                store
                    .complete(&dying, Completion::Finished(b"late".to_vec()))
                    .await,
                Err(StoreError::ClaimLost { attempt: 1, .. })
            ),
            "trial {trial}: the old holder completed a claim taken over"
        );
        let head = store.history(&id).await.unwrap();
        assert_eq!(head.len(), 1, "trial {trial}: the refused completion wrote");
        assert!(
            matches!(head[0].state, CheckpointState::Claimed { attempt: 2, .. }),
            "trial {trial}: the head is {:?}, not claim 2's",
            head[0].state
        );
        store
            .complete(&taker, Completion::Finished(b"done".to_vec()))
            .await
            .unwrap();
        store.delete(&id).await.unwrap();
    }
}

/// 4 workers drain 24 pending heads with `claim_pending(5)` at once: every head is claimed
/// exactly once, and nothing is left to claim.
pub async fn batch_claims_are_disjoint(store: Arc<dyn CheckpointStore>, p: &str) {
    let ids: Vec<String> = (0..24).map(|k| format!("{p}batch-{k:02}")).collect();
    for id in &ids {
        store
            .save(id, id.as_bytes().to_vec(), SaveMode::Create)
            .await
            .unwrap();
    }
    let workers: Vec<_> = (0..4)
        .map(|_| {
            let store = Arc::clone(&store);
            tokio::spawn(async move {
                let mut mine = Vec::new();
                loop {
                    let batch = store.claim_pending(5, MINUTE).await.unwrap();
                    if batch.is_empty() {
                        return mine;
                    }
                    for claim in batch {
                        assert_eq!(
                            claim.bytes,
                            claim.id.as_bytes(),
                            "a claim carries its head's bytes"
                        );
                        store
                            .complete(&claim, Completion::Finished(b"done".to_vec()))
                            .await
                            .unwrap();
                        mine.push(claim.id);
                    }
                }
            })
        })
        .collect();
    let mut claimed = Vec::new();
    for w in workers {
        claimed.extend(w.await.unwrap());
    }
    claimed.sort();
    assert_eq!(
        claimed, ids,
        "the heads claimed by the workers (sorted) are not each pending head once"
    );
    assert!(store.claim_pending(5, MINUTE).await.unwrap().is_empty());
    for id in &ids {
        store.delete(id).await.unwrap();
    }
}
