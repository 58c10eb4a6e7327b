//! The checks of the run queue contract ([`RunQueue`]), each on a queue given (see
//! [`run_queue`](super::run_queue)).

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use crate::store::{CancelState, Enqueue, NewRun, QueueCap, QueueError, QueueStatus, RunQueue};
use serde_json::json;

const LEASE: Duration = Duration::from_secs(60);

fn run(id: &str, thread: &str) -> NewRun {
    NewRun {
        run_id: id.into(),
        flow: "desk".into(),
        thread: thread.into(),
        input: json!({ "message": format!("pay {id}") }),
    }
}

/// Enqueue, per-thread order, claim, complete, get, list; typed errors for bad input.
pub async fn queue_lifecycle(q: &dyn RunQueue, p: &str) {
    let (a, b) = (format!("{p}thread-a"), format!("{p}thread-b"));
    let id = |s: &str| format!("{p}{s}");
    let first = q
        .enqueue(run(&id("a1"), &a), Enqueue::Always)
        .await
        .unwrap();
    assert_eq!(first.status, QueueStatus::Pending);
    assert_eq!(first.attempt, 0);
    assert_eq!(
        first.input,
        json!({ "message": format!("pay {}", id("a1")) })
    );
    q.enqueue(run(&id("a2"), &a), Enqueue::Always)
        .await
        .unwrap();
    q.enqueue(run(&id("b1"), &b), Enqueue::Always)
        .await
        .unwrap();

    // Bad input: each a typed error, nothing queued.
    assert!(matches!(
        q.enqueue(run(&id("a1"), &a), Enqueue::Always).await,
        Err(QueueError::Duplicate { .. })
    ));
    assert!(matches!(
        q.enqueue(run(&id("a3"), &a), Enqueue::IfIdle).await,
        Err(QueueError::Busy { run_id, .. }) if run_id == id("a1")
    ));
    assert!(matches!(
        q.enqueue(run("../escape", &a), Enqueue::Always).await,
        Err(QueueError::InvalidId { what: "run id", .. })
    ));
    assert!(matches!(
        q.enqueue(run(&id("x"), "bad/thread"), Enqueue::Always)
            .await,
        Err(QueueError::InvalidId {
            what: "thread id",
            ..
        })
    ));
    let mut big = run(&id("big"), &b);
    big.input = json!("x".repeat(crate::store::MAX_QUEUED_INPUT_BYTES + 1));
    assert!(matches!(
        q.enqueue(big, Enqueue::Always).await,
        Err(QueueError::TooLarge { .. })
    ));
    assert!(matches!(
        q.claim("", LEASE).await,
        Err(QueueError::InvalidId {
            what: "worker name",
            ..
        })
    ));
    assert!(q.get(&id("a3")).await.unwrap().is_none());

    // Oldest first; a2 waits behind a1 (same thread), so b1 comes next.
    let c1 = q.claim("w1", LEASE).await.unwrap().unwrap();
    assert_eq!(c1.run.run_id, id("a1"));
    assert_eq!((c1.attempt, c1.takeover), (1, false));
    assert_eq!(c1.run.worker.as_deref(), Some("w1"));
    let c2 = q.claim("w2", LEASE).await.unwrap().unwrap();
    assert_eq!(c2.run.run_id, id("b1"));
    assert!(q.claim("w3", LEASE).await.unwrap().is_none());

    q.renew(&c1, LEASE).await.unwrap();
    q.complete(&c1, json!({"status": "success"})).await.unwrap();
    // A completed claim is no longer held.
    assert!(matches!(
        q.complete(&c1, json!({})).await,
        Err(QueueError::ClaimLost { attempt: 1, .. })
    ));
    assert!(matches!(
        q.renew(&c1, LEASE).await,
        Err(QueueError::ClaimLost { .. })
    ));
    let done = q.get(&id("a1")).await.unwrap().unwrap();
    assert_eq!(done.status, QueueStatus::Done);
    assert_eq!(done.outcome, Some(json!({"status": "success"})));
    assert!(done.ended_ms.is_some() && done.started_ms.is_some());

    let c3 = q.claim("w1", LEASE).await.unwrap().unwrap();
    assert_eq!(c3.run.run_id, id("a2"));
    // Released: pending again, first in its thread, claimed with the next attempt.
    q.release(&c3).await.unwrap();
    assert_eq!(
        q.get(&id("a2")).await.unwrap().unwrap().status,
        QueueStatus::Pending
    );
    assert!(matches!(
        q.complete(&c3, json!({})).await,
        Err(QueueError::ClaimLost { .. })
    ));
    let c4 = q.claim("w2", LEASE).await.unwrap().unwrap();
    assert_eq!(c4.run.run_id, id("a2"));
    assert_eq!((c4.attempt, c4.takeover), (2, false));
    q.complete(&c4, json!({"status": "success"})).await.unwrap();
    q.complete(&c2, json!({"status": "error"})).await.unwrap();

    let listed: Vec<(String, QueueStatus)> = q
        .thread_runs(&a)
        .await
        .unwrap()
        .into_iter()
        .map(|r| (r.run_id, r.status))
        .collect();
    assert_eq!(
        listed,
        vec![(id("a1"), QueueStatus::Done), (id("a2"), QueueStatus::Done)]
    );
    // Now the thread is idle: IfIdle takes it.
    q.enqueue(run(&id("a3"), &a), Enqueue::IfIdle)
        .await
        .unwrap();
    let c5 = q.claim("w1", LEASE).await.unwrap().unwrap();
    q.complete(&c5, json!({"status": "success"})).await.unwrap();
    assert!(q.claim("w1", LEASE).await.unwrap().is_none());
}

/// A run whose lease ran out is taken over; the old holder can no longer write.
pub async fn queue_takeover(q: &dyn RunQueue, p: &str) {
    let thread = format!("{p}thread-t");
    let id = format!("{p}t1");
    q.enqueue(run(&id, &thread), Enqueue::Always).await.unwrap();
    q.enqueue(run(&format!("{p}t2"), &thread), Enqueue::Always)
        .await
        .unwrap();
    let dead = q.claim("dies", Duration::ZERO).await.unwrap().unwrap();
    q.note(&dead, json!({"turn": 3})).await.unwrap();
    // Wait until the lease of zero length is behind every clock.
    loop {
        tokio::time::sleep(Duration::from_millis(5)).await;
        let row = q.get(&id).await.unwrap().unwrap();
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as u64;
        if row.lease_until_ms + 2 < now {
            break;
        }
    }
    let taken = q.claim("lives", LEASE).await.unwrap().unwrap();
    // What the dead worker noted reaches the one taking over.
    assert_eq!(taken.run.note, Some(json!({"turn": 3})));
    // The expired run comes first: t2 still waits behind it.
    assert_eq!(taken.run.run_id, id);
    assert_eq!((taken.attempt, taken.takeover), (2, true));
    assert!(q.claim("lives", LEASE).await.unwrap().is_none());
    assert!(matches!(
        q.renew(&dead, LEASE).await,
        Err(QueueError::ClaimLost { attempt: 1, .. })
    ));
    assert!(matches!(
        q.note(&dead, json!({})).await,
        Err(QueueError::ClaimLost { .. })
    ));
    assert!(matches!(
        q.complete(&dead, json!({})).await,
        Err(QueueError::ClaimLost { .. })
    ));
    q.complete(&taken, json!({"status": "success"}))
        .await
        .unwrap();
    let next = q.claim("lives", LEASE).await.unwrap().unwrap();
    assert_eq!(next.run.run_id, format!("{p}t2"));
    q.complete(&next, json!({"status": "success"}))
        .await
        .unwrap();
}

/// The first of `queues`.
fn q0(queues: &[Arc<dyn RunQueue>]) -> &dyn RunQueue {
    queues[0].as_ref()
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// Events, cancel and claims among flows; `reader` is another handle on the same queue (as
/// another process would have), which reads what `q` wrote.
pub async fn events_cancel_flows(q: &dyn RunQueue, reader: &dyn RunQueue, p: &str) {
    let ev = |k: &str, n: u64| (k.to_owned(), json!({ "n": n }));
    // Events: numbered after the run's last, read by any handle after a number, in order.
    let e1 = format!("{p}e1");
    q.enqueue(run(&e1, &format!("{p}ev")), Enqueue::Always)
        .await
        .unwrap();
    let c1 = q.claim("w", LEASE).await.unwrap().unwrap();
    assert!(reader.events_after(&e1, 0, 10).await.unwrap().is_empty());
    assert_eq!(
        q.append_events(&c1, vec![ev("turn", 1), ev("chunk", 2)])
            .await
            .unwrap(),
        2
    );
    assert_eq!(
        q.append_events(&c1, vec![ev("chunk", 3), ev("chunk", 4)])
            .await
            .unwrap(),
        4
    );
    let all = reader.events_after(&e1, 0, 100).await.unwrap();
    let seqs: Vec<u64> = all.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, vec![1, 2, 3, 4]);
    assert_eq!(all[0].kind, "turn");
    assert!(all.iter().all(|e| e.data["n"] == e.seq));
    let some = reader.events_after(&e1, 2, 2).await.unwrap();
    assert_eq!(some.iter().map(|e| e.seq).collect::<Vec<_>>(), vec![3, 4]);
    assert!(reader.events_after(&e1, 4, 10).await.unwrap().is_empty());
    assert_eq!(reader.get(&e1).await.unwrap().unwrap().events, 4);
    // Completing appends the outcome as the last event, `done`.
    q.complete(&c1, json!({"status": "success"})).await.unwrap();
    let done = reader.events_after(&e1, 4, 10).await.unwrap();
    assert_eq!(done.len(), 1);
    assert_eq!((done[0].seq, done[0].kind.as_str()), (5, "done"));
    assert_eq!(done[0].data, json!({"status": "success"}));
    assert_eq!(reader.get(&e1).await.unwrap().unwrap().events, 5);
    // A claim no longer held writes nothing.
    assert!(matches!(
        q.append_events(&c1, vec![ev("late", 6)]).await,
        Err(QueueError::ClaimLost { .. })
    ));
    assert_eq!(reader.events_after(&e1, 0, 100).await.unwrap().len(), 5);

    // Cancel: an ended run is refused, an unknown one is none, a bad id is refused.
    assert!(matches!(
        reader.cancel(&e1, json!({}), json!({})).await,
        Err(QueueError::Ended { run_id }) if run_id == e1
    ));
    assert!(reader
        .cancel(&format!("{p}nobody"), json!({}), json!({}))
        .await
        .unwrap()
        .is_none());
    assert!(matches!(
        reader.cancel("../x", json!({}), json!({})).await,
        Err(QueueError::InvalidId { .. })
    ));
    // A waiting run ends at once, its outcome its one `done` event, and never runs.
    let e2 = format!("{p}e2");
    q.enqueue(run(&e2, &format!("{p}ev2")), Enqueue::Always)
        .await
        .unwrap();
    let cancelled = json!({"status": "cancelled"});
    match reader
        .cancel(&e2, json!({"mode": "immediate"}), cancelled.clone())
        .await
        .unwrap()
    {
        Some(CancelState::Ended(row)) => {
            assert_eq!(row.status, QueueStatus::Done);
            assert_eq!(row.outcome, Some(cancelled.clone()));
        }
        other => panic!("a waiting run ends at once: {other:?}"),
    }
    let done = q.events_after(&e2, 0, 10).await.unwrap();
    assert_eq!(done.len(), 1);
    assert_eq!((done[0].seq, done[0].kind.as_str()), (1, "done"));
    assert_eq!(done[0].data, cancelled);
    assert!(q.claim("w", LEASE).await.unwrap().is_none());
    // A running run records the request for its worker.
    let e3 = format!("{p}e3");
    q.enqueue(run(&e3, &format!("{p}ev3")), Enqueue::Always)
        .await
        .unwrap();
    let c3 = q.claim("w", LEASE).await.unwrap().unwrap();
    assert_eq!(q.cancel_requested(&c3).await.unwrap(), None);
    let request = json!({"mode": "after_tools"});
    assert!(matches!(
        reader.cancel(&e3, request.clone(), json!({})).await.unwrap(),
        Some(CancelState::Requested(row)) if row.status == QueueStatus::Running
    ));
    assert_eq!(q.cancel_requested(&c3).await.unwrap(), Some(request));
    q.append_events(&c3, vec![ev("turn", 1)]).await.unwrap();

    // Claims among flows: a run of a flow not named is left for a process that serves it,
    // and still holds its thread's later runs back.
    let other = |id: &str, thread: &str| NewRun {
        flow: "other".into(),
        ..run(id, thread)
    };
    let (x, y) = (format!("{p}fx"), format!("{p}fy"));
    q.enqueue(other(&format!("{p}f1"), &x), Enqueue::Always)
        .await
        .unwrap();
    q.enqueue(run(&format!("{p}f2"), &x), Enqueue::Always)
        .await
        .unwrap();
    q.enqueue(run(&format!("{p}f3"), &y), Enqueue::Always)
        .await
        .unwrap();
    let desk = vec!["desk".to_owned()];
    let got = q.claim_among("w", LEASE, &desk).await.unwrap().unwrap();
    assert_eq!(got.run.run_id, format!("{p}f3"));
    assert!(q.claim_among("w", LEASE, &desk).await.unwrap().is_none());
    let theirs = q
        .claim_among("w2", LEASE, &["other".to_owned(), "more".to_owned()])
        .await
        .unwrap()
        .unwrap();
    assert_eq!(theirs.run.run_id, format!("{p}f1"));
    q.complete(&theirs, json!({})).await.unwrap();
    let next = q.claim_among("w", LEASE, &desk).await.unwrap().unwrap();
    assert_eq!(next.run.run_id, format!("{p}f2"));
    for c in [&got, &next] {
        q.complete(c, json!({})).await.unwrap();
    }

    // Trim: the events of runs that ended before the time go, and the runs say so; a
    // running run's stay.
    let trimmed = reader.trim_events(now_ms() + 60_000).await.unwrap();
    assert!(trimmed >= 2, "{trimmed}");
    let row = q.get(&e1).await.unwrap().unwrap();
    assert!(row.events_trimmed);
    assert_eq!(row.events, 5);
    assert!(q.events_after(&e1, 0, 10).await.unwrap().is_empty());
    assert!(q.events_after(&e2, 0, 10).await.unwrap().is_empty());
    assert_eq!(q.events_after(&e3, 0, 10).await.unwrap().len(), 1);
    assert!(!q.get(&e3).await.unwrap().unwrap().events_trimmed);
    assert_eq!(reader.trim_events(now_ms() + 60_000).await.unwrap(), 0);
    q.complete(&c3, json!({})).await.unwrap();
}

/// Many workers claiming at once, through several handles on one queue: each run is claimed
/// exactly once, and a thread's runs one at a time in order.
pub async fn one_claim_each(queues: Vec<Arc<dyn RunQueue>>, p: &str) {
    let runs = 40;
    for i in 0..runs {
        // Four threads of ten runs each.
        q0(&queues)
            .enqueue(
                run(&format!("{p}r{i:03}"), &format!("{p}race-{}", i % 4)),
                Enqueue::Always,
            )
            .await
            .unwrap();
    }
    let mut tasks = Vec::new();
    for w in 0..6 {
        let q = queues[w % queues.len()].clone();
        tasks.push(tokio::spawn(async move {
            let mut mine = Vec::new();
            let mut idle = 0;
            while idle < 50 {
                match q.claim(&format!("w{w}"), LEASE).await.unwrap() {
                    Some(c) => {
                        idle = 0;
                        // Nothing else of its thread is running now.
                        let running: Vec<_> = q
                            .thread_runs(&c.run.thread)
                            .await
                            .unwrap()
                            .into_iter()
                            .filter(|r| r.status == QueueStatus::Running)
                            .map(|r| r.run_id)
                            .collect();
                        assert_eq!(running, vec![c.run.run_id.clone()]);
                        mine.push(c.run.run_id.clone());
                        q.complete(&c, json!({"worker": w})).await.unwrap();
                    }
                    None => {
                        idle += 1;
                        tokio::task::yield_now().await;
                        tokio::time::sleep(Duration::from_millis(2)).await;
                    }
                }
            }
            mine
        }));
    }
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.unwrap());
    }
    assert_eq!(all.len(), runs, "every run claimed once: {all:?}");
    assert_eq!(all.iter().collect::<HashSet<_>>().len(), runs);
    for t in 0..4 {
        let rows = q0(&queues)
            .thread_runs(&format!("{p}race-{t}"))
            .await
            .unwrap();
        assert!(rows
            .iter()
            .all(|r| r.status == QueueStatus::Done && r.attempt == 1));
        // In order: each run started no earlier than the previous one ended.
        for pair in rows.windows(2) {
            assert!(pair[1].started_ms.unwrap() >= pair[0].ended_ms.unwrap());
        }
    }
}

/// Runs not ended, counted by thread prefix (what a server bounds a tenant's queue with).
pub async fn counts(q: &dyn RunQueue, p: &str) {
    for i in 0..5 {
        q.enqueue(
            run(&format!("{p}cnt-a{i}"), &format!("{p}f.ta.t{i}")),
            Enqueue::Always,
        )
        .await
        .unwrap();
    }
    q.enqueue(
        run(&format!("{p}cnt-b0"), &format!("{p}f.tb.t0")),
        Enqueue::Always,
    )
    .await
    .unwrap();
    // `_` and `%` are not wildcards: a thread named `f.t_.x` is not of tenant `ta`.
    q.enqueue(
        run(&format!("{p}cnt-c0"), &format!("{p}f.t_.x")),
        Enqueue::Always,
    )
    .await
    .unwrap();
    assert_eq!(
        q.unfinished_with_prefix(&format!("{p}f.ta."))
            .await
            .unwrap(),
        5
    );
    assert_eq!(
        q.unfinished_with_prefix(&format!("{p}f.tb."))
            .await
            .unwrap(),
        1
    );
    assert_eq!(
        q.unfinished_with_prefix(&format!("{p}f.t_."))
            .await
            .unwrap(),
        1
    );
    assert_eq!(
        q.unfinished_with_prefix(&format!("{p}f.nobody."))
            .await
            .unwrap(),
        0
    );
}

/// A group (`FLOW.TENANT`) that queued many runs does not hold another group's back: the
/// claim takes the group with the fewest runs running.
pub async fn fair(q: &dyn RunQueue) {
    for i in 0..50 {
        q.enqueue(
            run(&format!("flood-{i}"), &format!("f.flood.t{i}")),
            Enqueue::Always,
        )
        .await
        .unwrap();
    }
    for i in 0..3 {
        q.enqueue(
            run(&format!("calm-{i}"), &format!("f.calm.t{i}")),
            Enqueue::Always,
        )
        .await
        .unwrap();
    }
    let mut claimed = Vec::new();
    for _ in 0..6 {
        let c = q.claim("w", LEASE).await.unwrap().unwrap();
        claimed.push(c.run.run_id);
    }
    // Alternating: flood, calm, flood, calm, ... while the calm tenant has runs.
    assert_eq!(
        claimed,
        ["flood-0", "calm-0", "flood-1", "calm-1", "flood-2", "calm-2"]
    );
}

/// Many enqueuers at once, each with its own handle on one queue (as processes on one
/// database would be), racing past a group's cap round after round: each round exactly the
/// cap gets in and every other is refused with [`QueueError::Full`], the group never holds
/// more than its cap, and another group's enqueue, in the same race, is unaffected.
pub async fn capped_race(queues: Vec<Arc<dyn RunQueue>>, p: &str) {
    const CAP: usize = 5;
    const ENQUEUERS: usize = 8;
    const EACH: usize = 3;
    let flood = QueueCap {
        prefix: format!("{p}f.ta."),
        limit: CAP,
    };
    let calm = QueueCap {
        prefix: format!("{p}f.tb."),
        limit: CAP,
    };
    // A run of another group, or none of the cap's: refused before anything is counted.
    assert!(matches!(
        q0(&queues)
            .enqueue_within(
                run(&format!("{p}cap-x"), &format!("{p}f.tb.t")),
                Enqueue::Always,
                &flood
            )
            .await,
        Err(QueueError::InvalidId {
            what: "thread id",
            ..
        })
    ));
    for round in 0..12 {
        let start = Arc::new(tokio::sync::Barrier::new(ENQUEUERS + 1));
        let mut tasks = Vec::new();
        for e in 0..ENQUEUERS {
            let q = queues[e % queues.len()].clone();
            let (start, flood, p) = (start.clone(), flood.clone(), p.to_owned());
            tasks.push(tokio::spawn(async move {
                start.wait().await;
                let mut admitted = Vec::new();
                for i in 0..EACH {
                    // Threads of the group: several, so the thread's own lock cannot be what
                    // keeps the cap.
                    let thread = format!("{p}f.ta.t{}", (e + i) % 4);
                    let id = format!("{p}cap-{round}-{e}-{i}");
                    match q
                        .enqueue_within(run(&id, &thread), Enqueue::Always, &flood)
                        .await
                    {
                        Ok(row) => admitted.push(row.run_id),
                        Err(QueueError::Full { limit, prefix }) => {
                            assert_eq!((limit, prefix.as_str()), (CAP, flood.prefix.as_str()));
                        }
                        Err(other) => panic!("enqueue {id}: {other}"),
                    }
                }
                admitted
            }));
        }
        // The other group enqueues in the same race, through another handle.
        let other = queues[queues.len() - 1].clone();
        let calm_id = format!("{p}calm-{round}");
        let calm_run = run(&calm_id, &format!("{p}f.tb.t{round}"));
        start.wait().await;
        let calm_row = other
            .enqueue_within(calm_run, Enqueue::Always, &calm)
            .await
            .expect("another group's run is not held back by a full group");
        let mut admitted = Vec::new();
        for t in tasks {
            admitted.extend(t.await.unwrap());
        }
        let q = q0(&queues);
        assert_eq!(
            q.unfinished_with_prefix(&flood.prefix).await.unwrap(),
            CAP,
            "round {round}: the group holds its cap, no more: admitted {admitted:?}"
        );
        assert_eq!(admitted.len(), CAP, "round {round}: {admitted:?}");
        assert_eq!(q.unfinished_with_prefix(&calm.prefix).await.unwrap(), 1);
        // Empty both groups for the next round: the waiting runs are cancelled.
        for id in admitted.iter().chain([&calm_row.run_id]) {
            let cancelled = q
                .cancel(id, json!({}), json!({"status": "cancelled"}))
                .await
                .unwrap();
            assert!(matches!(cancelled, Some(CancelState::Ended(_))));
        }
        assert_eq!(q.unfinished_with_prefix(&flood.prefix).await.unwrap(), 0);
    }
}
