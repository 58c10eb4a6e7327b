//! The checks of the [`ScheduleStore`](crate::store::ScheduleStore) contract, the schedules a
//! run queue's store keeps (through [`RunQueue::schedules`]), each on a queue given (see
//! [`schedules`](super::schedules)).

use std::sync::Arc;

use serde_json::json;

use crate::store::{MissedPolicy, QueueError, RunQueue, Schedule, ScheduleFilter};

fn schedule(id: &str, tenant: &str, thread: Option<&str>, next_due_ms: u64) -> Schedule {
    Schedule {
        id: id.into(),
        flow: "desk".into(),
        tenant: tenant.into(),
        thread: thread.map(str::to_owned),
        cron: "0 * * * *".into(),
        input: json!({"message": "report"}),
        by: "ana".into(),
        grants: vec!["chat".into(), "read".into()],
        missed: MissedPolicy::CatchUp,
        paused: false,
        next_due_ms,
        last_due_ms: None,
        created_ms: next_due_ms,
        updated_ms: next_due_ms,
        metadata: json!({"team": "ops"}),
    }
}

/// Create, read, list and count one tenant's, change, delete, the due ones, and the
/// compare-and-swap that moves a schedule on, on the schedules `q` keeps.
pub async fn schedule_contract(q: &dyn RunQueue) {
    let s = q.schedules().expect("this queue keeps schedules");
    let first = schedule("s1", "acme", None, 1_000);
    s.create_schedule(&first).await.unwrap();
    s.create_schedule(&schedule("s2", "acme", Some("t-1"), 2_000))
        .await
        .unwrap();
    s.create_schedule(&schedule("s3", "globex", None, 500))
        .await
        .unwrap();
    assert!(matches!(
        s.create_schedule(&first).await,
        Err(QueueError::Duplicate { .. })
    ));
    assert!(matches!(
        s.create_schedule(&schedule(".bad", "acme", None, 1)).await,
        Err(QueueError::InvalidId {
            what: "schedule id",
            ..
        })
    ));
    assert_eq!(s.schedule("s1").await.unwrap(), Some(first.clone()));
    assert_eq!(s.schedule("nope").await.unwrap(), None);

    // One tenant's, by flow and thread, oldest first, paged.
    let acme = ScheduleFilter {
        tenant: "acme".into(),
        ..ScheduleFilter::default()
    };
    let ids = |v: Vec<Schedule>| v.into_iter().map(|s| s.id).collect::<Vec<_>>();
    assert_eq!(
        ids(s.list_schedules(&acme, 10, 0).await.unwrap()),
        ["s1", "s2"]
    );
    assert_eq!(ids(s.list_schedules(&acme, 1, 1).await.unwrap()), ["s2"]);
    assert_eq!(s.count_schedules(&acme).await.unwrap(), 2);
    let thread = ScheduleFilter {
        thread: Some("t-1".into()),
        ..acme.clone()
    };
    assert_eq!(ids(s.list_schedules(&thread, 10, 0).await.unwrap()), ["s2"]);
    let other_flow = ScheduleFilter {
        flow: Some("other".into()),
        ..acme.clone()
    };
    assert_eq!(s.count_schedules(&other_flow).await.unwrap(), 0);

    // Due: not paused, at or before now, the most overdue first.
    assert_eq!(ids(s.due_schedules(1_000, 10).await.unwrap()), ["s3", "s1"]);
    let mut paused = first.clone();
    paused.paused = true;
    paused.cron = "30 * * * *".into();
    paused.missed = MissedPolicy::Skip;
    paused.updated_ms = 1_500;
    assert!(s.update_schedule(&paused).await.unwrap());
    assert_eq!(s.schedule("s1").await.unwrap(), Some(paused.clone()));
    assert_eq!(ids(s.due_schedules(5_000, 10).await.unwrap()), ["s3", "s2"]);
    assert!(!s
        .update_schedule(&schedule("nope", "acme", None, 1))
        .await
        .unwrap());

    // Moved on once from a due time; a stale due time changes nothing.
    assert!(s
        .advance_schedule("s3", 500, 3_600_500, Some(500))
        .await
        .unwrap());
    assert!(!s
        .advance_schedule("s3", 500, 7_200_500, Some(500))
        .await
        .unwrap());
    let moved = s.schedule("s3").await.unwrap().unwrap();
    assert_eq!(
        (moved.next_due_ms, moved.last_due_ms),
        (3_600_500, Some(500))
    );
    // Moved on without a firing (skipped): the last firing stays.
    assert!(s
        .advance_schedule("s3", 3_600_500, 7_200_500, None)
        .await
        .unwrap());
    assert_eq!(
        s.schedule("s3").await.unwrap().unwrap().last_due_ms,
        Some(500)
    );

    assert!(s.delete_schedule("s2").await.unwrap());
    assert!(!s.delete_schedule("s2").await.unwrap());
    assert_eq!(s.count_schedules(&acme).await.unwrap(), 1);
}

/// Three queues on one store move one schedule on from each of 20 due times at once: each
/// time, exactly one wins.
pub async fn one_advance_each(queues: Vec<Arc<dyn RunQueue>>) {
    let hour = 3_600_000;
    queues[0]
        .schedules()
        .unwrap()
        .create_schedule(&schedule("race", "acme", None, hour))
        .await
        .unwrap();
    for n in 1..=20u64 {
        let wins = futures::future::join_all(queues.iter().map(|q| {
            let q = Arc::clone(q);
            async move {
                q.schedules()
                    .unwrap()
                    .advance_schedule("race", n * hour, (n + 1) * hour, Some(n * hour))
                    .await
                    .unwrap()
            }
        }))
        .await;
        assert_eq!(
            wins.iter().filter(|w| **w).count(),
            1,
            "due time {n}: {wins:?}"
        );
    }
}
