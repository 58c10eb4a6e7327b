//! Firing due schedules: the loop every process with queue workers runs, and one pass of it
//! ([`fire_due`]).
//!
//! A pass reads the schedules due on the [`ScheduleClock`](super::ScheduleClock) and, for
//! each, decides which firing to run: the latest due time at or before now. With
//! [`MissedPolicy::CatchUp`] (the default) it is run even after a downtime that missed several
//! (once: the earlier missed ones are not run); with [`MissedPolicy::Skip`] it is run only if
//! it is found within [`ON_TIME_MS`] of its due time, else none is. The run is enqueued under
//! the id `sched-{SCHEDULE}-{DUE_MS}`: the queue refuses a second run of that id
//! ([`QueueError::Duplicate`]), so of any number of processes firing the same due time, one
//! enqueues it. Then the schedule is moved on to its next due time after now by a
//! compare-and-swap on the due time it was read with. Nothing is coordinated in memory.

use agentweave_runtime::store::{Enqueue, MissedPolicy, NewRun, QueueError, Schedule};
use serde_json::json;
use tokio::sync::watch;

use super::cron::When;
use crate::queue::QueueSettings;
use crate::state::AppState;
use crate::thread::ThreadKey;

/// How late a firing may be found and still count as on time for [`MissedPolicy::Skip`]:
/// one minute.
pub const ON_TIME_MS: u64 = 60_000;

/// The most schedules one pass fires (the most overdue first); the next pass takes the rest.
const PASS: usize = 100;

/// Fires `state`'s due schedules once (see the module's guide): answers how many runs this
/// call enqueued (a due time another process enqueued first is not counted). Servers call it
/// in their queue workers' loop every
/// [`QueueOptions::schedule_poll`](crate::QueueOptions::schedule_poll); a test may call it
/// from many states at once. Without a run queue keeping schedules it does nothing.
pub async fn fire_due(state: &AppState) -> Result<usize, QueueError> {
    let Some(settings) = state.queue_settings() else {
        return Ok(0);
    };
    let Some(schedules) = settings.queue.schedules() else {
        return Ok(0);
    };
    let now = settings.options.schedule_clock.now_ms();
    let mut fired = 0;
    for schedule in schedules.due_schedules(now, PASS).await? {
        let when = match When::parse(&schedule.cron, None) {
            Ok(when) => when,
            Err(e) => {
                // Only a row changed by hand gets here: it is left out of the passes.
                tracing::error!(schedule = %schedule.id, error = %e, "a stored schedule's cron expression does not parse; it is not fired");
                schedules
                    .advance_schedule(&schedule.id, schedule.next_due_ms, u64::MAX, None)
                    .await?;
                continue;
            }
        };
        let latest = when
            .latest_until(now)
            .unwrap_or(schedule.next_due_ms)
            .max(schedule.next_due_ms);
        let fire_at = match schedule.missed {
            MissedPolicy::CatchUp => Some(latest),
            MissedPolicy::Skip => (now.saturating_sub(latest) <= ON_TIME_MS).then_some(latest),
        };
        if let Some(at) = fire_at {
            match enqueue_firing(settings, &schedule, at).await {
                Ok(true) => fired += 1,
                Ok(false) => {}
                Err(e) => {
                    // Left due: the next pass (of any process) tries again.
                    tracing::warn!(schedule = %schedule.id, error = %e, "could not enqueue a schedule's run");
                    continue;
                }
            }
        }
        let next = when.next_after(now.max(latest)).unwrap_or(u64::MAX);
        schedules
            .advance_schedule(&schedule.id, schedule.next_due_ms, next, fire_at)
            .await?;
    }
    Ok(fired)
}

/// Enqueues `schedule`'s run for due time `at`: `false` if another process enqueued it first.
async fn enqueue_firing(
    settings: &QueueSettings,
    schedule: &Schedule,
    at: u64,
) -> Result<bool, QueueError> {
    let thread = match &schedule.thread {
        Some(thread) => thread.clone(),
        // A new thread each firing (the run's id, not the thread's, is what is unique).
        None => format!("cron-{}", &uuid::Uuid::new_v4().simple().to_string()[..24]),
    };
    let key = ThreadKey::new(&schedule.flow, &schedule.tenant, &thread).map_err(|_| {
        QueueError::InvalidId {
            what: "thread id",
            id: thread.clone(),
            rule: "a thread id is 1 to 40 characters of A-Z, a-z, 0-9, '_' or '-'",
        }
    })?;
    let run = NewRun {
        run_id: format!("sched-{}-{at}", schedule.id),
        flow: schedule.flow.clone(),
        thread: key.store_id(),
        input: json!({
            "message": schedule.input["message"],
            "by": schedule.by,
            "grants": schedule.grants,
            "thread_id": thread,
            "webhook": null,
            "schedule": { "id": schedule.id, "due_ms": at },
        }),
    };
    match settings.queue.enqueue(run, Enqueue::Always).await {
        Ok(_) => Ok(true),
        Err(QueueError::Duplicate { .. }) => Ok(false),
        Err(e) => Err(e),
    }
}

/// Fires due schedules every [`schedule_poll`](crate::QueueOptions::schedule_poll) until
/// `stop` says so.
pub(crate) async fn fire_loop(state: AppState, mut stop: watch::Receiver<bool>) {
    let Some(poll) = state.queue_settings().map(|s| {
        s.options
            .schedule_poll
            .max(std::time::Duration::from_millis(5))
    }) else {
        return;
    };
    loop {
        if *stop.borrow() {
            return;
        }
        if let Err(e) = fire_due(&state).await {
            tracing::error!(error = %e, "could not fire the due schedules");
        }
        tokio::select! {
            _ = tokio::time::sleep(poll) => {}
            _ = stop.wait_for(|s| *s) => return,
        }
    }
}
