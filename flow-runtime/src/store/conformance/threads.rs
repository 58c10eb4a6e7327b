//! The checks of the thread store contract ([`ThreadStore`]), each on a store given (see
//! [`threads`](super::threads)): compare-and-swap
//! appends, reads by turn, list, delete, size limits, and the turn lease.

use std::sync::Arc;
use std::time::Duration;

use crate::store::{RecordEnd, RecordStart, ThreadRecord, ThreadStore};
use crate::{Message, RunPath, StoreError, ThreadError};

const MINUTE: Duration = Duration::from_secs(60);

/// A completed record of turn `turn` whose user said `text`.
pub fn record(turn: u64, text: &str) -> ThreadRecord {
    ThreadRecord {
        seq: 0,
        turn,
        at_ms: 0,
        start: RecordStart::Turn {
            input: vec![Message::user(text)],
        },
        started_at: RunPath::root("bot"),
        events: vec![],
        end: RecordEnd::Completed {
            answered_by: "bot".into(),
        },
        by: None,
        values: None,
        run_id: None,
        sealed: None,
    }
}

fn said(r: &ThreadRecord) -> &str {
    match &r.start {
        RecordStart::Turn { input } => &input[0].content,
        RecordStart::Resume { .. } => "(resume)",
        RecordStart::Values { .. } => "(values)",
    }
}

/// Ids that cannot name a thread: every method refuses them with `InvalidId`.
pub async fn refuses_bad_ids(store: &dyn ThreadStore) {
    for id in ["", "../x", "a/b", "/abs", "a\0b", ".hidden", "a b", "ü"]
        .into_iter()
        .map(str::to_owned)
        .chain([
            "x".repeat(crate::store::MAX_THREAD_ID_LEN + 1),
            "x".repeat(100_000),
        ])
    {
        let shown: String = id.chars().take(20).collect();
        let invalid = |r: Result<(), ThreadError>, what: &str| {
            assert!(
                matches!(r, Err(ThreadError::InvalidId { .. })),
                "{what} of {shown:?} was not refused: {r:?}"
            );
        };
        invalid(store.head(&id).await.map(|_| ()), "head");
        invalid(store.read(&id, 0..10).await.map(|_| ()), "read");
        invalid(
            store.append(&id, 0, record(0, "x")).await.map(|_| ()),
            "append",
        );
        invalid(store.delete(&id).await.map(|_| ()), "delete");
        invalid(store.lease_thread(&id, "me", MINUTE).await, "lease");
        invalid(store.renew_thread_lease(&id, "me", MINUTE).await, "renew");
        invalid(store.release_thread_lease(&id, "me").await, "release");
    }
}

/// Appends through two handles `a` and `b` on one store: compare-and-swap on the version
/// (a stale or a future version is a `Conflict` that stores nothing), the store numbers the
/// records, reads by turn window, head, list and delete.
pub async fn appends_reads_list_delete(a: &dyn ThreadStore, b: &dyn ThreadStore, p: &str) {
    let t = format!("{p}t");
    assert!(a.head(&t).await.unwrap().is_none());
    assert!(a.read(&t, 0..u64::MAX).await.unwrap().is_empty());
    let mut first = record(0, "one");
    first.seq = 77; // The store sets it.
    assert_eq!(a.append(&t, 0, first).await.unwrap(), 1);
    for (expected, found) in [(0, 1), (5, 1)] {
        let refused = b.append(&t, expected, record(1, "stale")).await;
        assert!(
            matches!(&refused, Err(ThreadError::Conflict { expected: e, found: f, .. }) if *e == expected && *f == found),
            "{refused:?}"
        );
    }
    assert_eq!(b.append(&t, 1, record(1, "two")).await.unwrap(), 2);
    // A continuation of turn 1 (same turn number), then turn 2.
    let mut resumed = record(1, "");
    resumed.start = RecordStart::Resume {
        checkpoint_id: "c".into(),
        targets: Default::default(),
    };
    assert_eq!(a.append(&t, 2, resumed).await.unwrap(), 3);
    assert_eq!(a.append(&t, 3, record(2, "three")).await.unwrap(), 4);

    let head = b.head(&t).await.unwrap().unwrap();
    assert_eq!((head.id.as_str(), head.version, head.turns), (&t[..], 4, 3));
    assert_eq!((head.last.seq, said(&head.last)), (3, "three"));
    let all = a.read(&t, 0..u64::MAX).await.unwrap();
    let shown: Vec<(u64, u64, &str)> = all.iter().map(|r| (r.seq, r.turn, said(r))).collect();
    assert_eq!(
        shown,
        [
            (0, 0, "one"),
            (1, 1, "two"),
            (2, 1, "(resume)"),
            (3, 2, "three")
        ]
    );
    let window = b.read(&t, 1..2).await.unwrap();
    assert_eq!(
        window.iter().map(|r| r.seq).collect::<Vec<_>>(),
        [1, 2],
        "a turn's continuation belongs to it"
    );
    assert!(a.read(&t, 3..10).await.unwrap().is_empty());
    assert_eq!(a.read(&t, 2..u64::MAX).await.unwrap().len(), 1);

    let u = format!("{p}u");
    a.append(&u, 0, record(0, "other")).await.unwrap();
    let listed = b.list().await.unwrap();
    let ours: Vec<&String> = listed.iter().filter(|id| id.starts_with(p)).collect();
    assert_eq!(ours, [&t, &u]);
    assert!(a.delete(&t).await.unwrap());
    assert!(
        !b.delete(&t).await.unwrap(),
        "a second delete finds nothing"
    );
    assert!(b.head(&t).await.unwrap().is_none());
    assert!(b.read(&t, 0..u64::MAX).await.unwrap().is_empty());
    assert_eq!(b.head(&u).await.unwrap().unwrap().version, 1, "others stay");
    // A deleted thread starts again at version 0.
    assert_eq!(b.append(&t, 0, record(0, "again")).await.unwrap(), 1);
    a.delete(&t).await.unwrap();
    a.delete(&u).await.unwrap();
}

/// `limited` refuses records over 64 bytes, written or read (what `open` wrote).
pub async fn size_limit(open: &dyn ThreadStore, limited: &dyn ThreadStore, p: &str) {
    let t = format!("{p}big");
    let big = record(0, &"x".repeat(100));
    let too_large = |r: Result<(), ThreadError>| {
        assert!(
            matches!(
                r,
                Err(ThreadError::Store(StoreError::TooLarge { limit: 64, .. }))
            ),
            "{r:?}"
        );
    };
    too_large(limited.append(&t, 0, big.clone()).await.map(|_| ()));
    assert!(open.head(&t).await.unwrap().is_none(), "nothing was stored");
    open.append(&t, 0, big).await.unwrap();
    too_large(limited.head(&t).await.map(|_| ()));
    too_large(limited.read(&t, 0..1).await.map(|_| ()));
    open.delete(&t).await.unwrap();
}

/// The lease: one owner at a time, renewable by its owner only, given back, and taken over
/// once it runs out.
pub async fn leases(store: &dyn ThreadStore, p: &str) {
    let t = format!("{p}leased");
    store.lease_thread(&t, "a", MINUTE).await.unwrap();
    assert!(matches!(
        store.lease_thread(&t, "b", MINUTE).await,
        Err(ThreadError::Busy { id }) if id == t
    ));
    store.renew_thread_lease(&t, "a", MINUTE).await.unwrap();
    assert!(matches!(
        store.renew_thread_lease(&t, "b", MINUTE).await,
        Err(ThreadError::LeaseLost { .. })
    ));
    // Another thread is not held up.
    store
        .lease_thread(&format!("{p}other"), "b", MINUTE)
        .await
        .unwrap();
    // A release by someone else changes nothing; the owner's frees the thread.
    store.release_thread_lease(&t, "b").await.unwrap();
    assert!(store.lease_thread(&t, "b", MINUTE).await.is_err());
    store.release_thread_lease(&t, "a").await.unwrap();
    store.lease_thread(&t, "b", MINUTE).await.unwrap();
    assert!(matches!(
        store.renew_thread_lease(&t, "a", MINUTE).await,
        Err(ThreadError::LeaseLost { .. })
    ));
    store.release_thread_lease(&t, "b").await.unwrap();

    // A short lease whose holder goes silent is taken over once it runs out.
    let short = Duration::from_millis(50);
    store.lease_thread(&t, "dead", short).await.unwrap();
    let mut taken = false;
    for _ in 0..400 {
        match store.lease_thread(&t, "alive", MINUTE).await {
            Ok(()) => {
                taken = true;
                break;
            }
            Err(ThreadError::Busy { .. }) => tokio::time::sleep(short / 5).await,
            Err(e) => panic!("{e}"),
        }
    }
    assert!(taken, "an expired lease was never taken over");
    assert!(matches!(
        store.renew_thread_lease(&t, "dead", MINUTE).await,
        Err(ThreadError::LeaseLost { .. })
    ));
    store.release_thread_lease(&t, "alive").await.unwrap();
    store
        .release_thread_lease(&format!("{p}other"), "b")
        .await
        .unwrap();
}

/// 16 tasks append at one position, and 16 take one lease, at once: exactly one of each wins.
pub async fn one_winner_among_tasks(handles: Vec<Arc<dyn ThreadStore>>, p: &str) {
    for trial in 0..5 {
        let t = format!("{p}race-{trial}");
        handles[0].append(&t, 0, record(0, "first")).await.unwrap();
        let appends: Vec<_> = (0..16)
            .map(|k| {
                let store = Arc::clone(&handles[k % handles.len()]);
                let t = t.clone();
                tokio::spawn(async move { store.append(&t, 1, record(1, &format!("{k}"))).await })
            })
            .collect();
        let mut won = 0;
        for task in appends {
            match task.await.unwrap() {
                Ok(2) => won += 1,
                Err(ThreadError::Conflict { expected: 1, .. }) => {}
                other => panic!("unexpected: {other:?}"),
            }
        }
        assert_eq!(won, 1, "trial {trial}: appends");
        assert_eq!(handles[0].read(&t, 0..9).await.unwrap().len(), 2);

        let leases: Vec<_> = (0..16)
            .map(|k| {
                let store = Arc::clone(&handles[k % handles.len()]);
                let t = t.clone();
                tokio::spawn(async move { store.lease_thread(&t, &format!("w{k}"), MINUTE).await })
            })
            .collect();
        let mut holders = 0;
        for task in leases {
            match task.await.unwrap() {
                Ok(()) => holders += 1,
                Err(ThreadError::Busy { .. }) => {}
                Err(e) => panic!("unexpected: {e}"),
            }
        }
        assert_eq!(holders, 1, "trial {trial}: leases");
        handles[0].delete(&t).await.unwrap();
    }
}
