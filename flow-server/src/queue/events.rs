//! A queued run's events in the queue: the worker running it stores them
//! ([`store_events`]); any process streams them as SSE from the start or after a
//! `Last-Event-ID` ([`queued_sse`]), while the run goes on and after it ended, until the
//! queue's retention trims them ([`trim_loop`]).
//!
//! Ids are the queue's numbers (1, 2, ...), the same on every process. A run taken over after
//! its worker died goes on numbering after the events its first worker stored (a second
//! `turn` event, then the second attempt's). Readers look at the queue every
//! [`QueueOptions::poll`](super::QueueOptions::poll), and at once when a worker of their own
//! process stored something.

use std::collections::VecDeque;
use std::time::Duration;

use agentweave_runtime::store::{QueueClaim, QueueError, QueueStatus, QueuedEvent, QueuedRun};
use agentweave_runtime::{RunHandle, RunItem};
use futures::{Stream, StreamExt};
use serde_json::json;
use tokio::sync::watch;

use super::QueueSettings;
use crate::error::ApiError;
use crate::limits::Limits;
use crate::sse::{frame, SseBody};

/// Events read from the queue at a time.
const BATCH: usize = 256;

/// Stores `run`'s events (all but its end: completing the run in the queue stores its outcome
/// as its `done` event) in the queue under `claim`, as the caller's `thread` sees them, at most
/// [`QueueOptions::max_events`](super::QueueOptions::max_events) of them, each at most
/// `max_bytes` of JSON (a bigger one is stored as the `error` event an SSE reader would get).
/// Ends when the run's events end; an error when the claim was lost or the queue failed.
pub(crate) async fn store_events(
    settings: &QueueSettings,
    claim: &QueueClaim,
    run: &RunHandle,
    thread: &str,
    max_bytes: usize,
) -> Result<(), QueueError> {
    let Ok(events) = run.attach(None) else {
        return Ok(());
    };
    let run_id = claim.run.run_id.clone();
    // One event is kept back for the run's end.
    let room = settings.options.max_events.saturating_sub(1);
    let mut stored = claim.run.events;
    let mut ended = false;
    let mut over = false;
    let mut batches = events.ready_chunks(64);
    while let Some(batch) = batches.next().await {
        let mut parts = Vec::with_capacity(batch.len());
        for event in &batch {
            if matches!(event.item, RunItem::Ended(_)) {
                ended = true;
                continue;
            }
            if stored + (parts.len() as u64) < room {
                let (name, data) = crate::runs::event_parts(&run_id, thread, event);
                let size = data.to_string().len();
                if size > max_bytes {
                    parts.push((
                        "error".to_owned(),
                        json!({
                            "code": "event_too_large",
                            "message": format!(
                                "a `{name}` event of {size} bytes exceeds the server's event \
                                 size limit of {max_bytes} bytes and was not stored \
                                 (Limits::max_event_bytes)"
                            ),
                        }),
                    ));
                } else {
                    parts.push((name.to_owned(), data));
                }
            } else if !over {
                over = true;
                parts.push((
                    "error".to_owned(),
                    json!({
                        "code": "events_over_limit",
                        "message": format!(
                            "run '{run_id}' has more events than this server keeps for a \
                             queued run ({}, QueueOptions::max_events); the rest are not \
                             stored: wait for its outcome",
                            settings.options.max_events
                        ),
                    }),
                ));
            }
        }
        if parts.is_empty() {
            continue;
        }
        stored = settings.queue.append_events(claim, parts).await?;
        settings.appended.send_modify(|n| *n = n.wrapping_add(1));
    }
    if !ended && !over {
        // The run made events faster than they were stored and its own log dropped some.
        settings
            .queue
            .append_events(
                claim,
                vec![(
                    "error".to_owned(),
                    json!({
                        "code": "events_lost",
                        "message": format!(
                            "some events of run '{run_id}' were not stored (the queue was \
                             slower than the run); wait for its outcome"
                        ),
                    }),
                )],
            )
            .await?;
        settings.appended.send_modify(|n| *n = n.wrapping_add(1));
    }
    Ok(())
}

/// The SSE body of queued run `row`'s events after `after` (0: all), checked: its events
/// trimmed is [`ApiError::EventExpired`]; an id it never gave is [`ApiError::UnknownEvent`].
pub(crate) fn queued_sse(
    settings: &QueueSettings,
    row: &QueuedRun,
    after: u64,
    limits: &Limits,
) -> Result<SseBody<impl Stream<Item = Vec<u8>> + Send + 'static>, ApiError> {
    if row.events_trimmed {
        return Err(ApiError::EventExpired(format!(
            "the events of run '{}' are no longer kept: they are removed {} s after the run \
             ends (QueueOptions::event_retention); read its outcome with GET .../runs/{{run}}",
            row.run_id,
            settings.options.event_retention.as_secs()
        )));
    }
    if after > row.events {
        return Err(ApiError::UnknownEvent(format!(
            "run '{}' has no event {after} (its last event so far is {}); attach from an id it \
             gave",
            row.run_id, row.events
        )));
    }
    let reader = Reader {
        settings: settings.clone(),
        run_id: row.run_id.clone(),
        after,
        buffer: VecDeque::new(),
        done: false,
        appended: settings.appended.subscribe(),
    };
    let limit = limits.max_event_bytes;
    let frames = futures::stream::unfold(reader, move |mut reader| async move {
        let event = reader.next().await?;
        // An error of the stream itself (seq 0) is no event of the run: it has no id.
        let mut out = match event.seq {
            0 => Vec::new(),
            seq => format!("id: {seq}\n").into_bytes(),
        };
        out.extend(frame(&event.kind, &event.data, limit));
        Some((out, reader))
    });
    Ok(SseBody::new(
        frames,
        limits.sse_keep_alive,
        limits.max_turn_duration,
        crate::runs::overtime,
    ))
}

/// Reads a queued run's events from the queue, in order, until its `done` event.
struct Reader {
    settings: QueueSettings,
    run_id: String,
    after: u64,
    buffer: VecDeque<QueuedEvent>,
    done: bool,
    appended: watch::Receiver<u64>,
}

impl Reader {
    async fn next(&mut self) -> Option<QueuedEvent> {
        loop {
            if let Some(event) = self.buffer.pop_front() {
                self.after = event.seq;
                if event.kind == "done" {
                    self.done = true;
                    self.buffer.clear();
                }
                return Some(event);
            }
            if self.done {
                return None;
            }
            self.appended.borrow_and_update();
            let queue = &self.settings.queue;
            match queue.events_after(&self.run_id, self.after, BATCH).await {
                Ok(events) if !events.is_empty() => {
                    self.buffer.extend(events);
                    continue;
                }
                Ok(_) => {}
                Err(e) => {
                    self.done = true;
                    return Some(failed(&e));
                }
            }
            // Nothing new: the run may have ended without a `done` event (trimmed, or ended
            // by a build that stored none).
            match queue.get(&self.run_id).await {
                Ok(Some(row)) if row.status == QueueStatus::Done && row.events <= self.after => {
                    return None
                }
                Ok(Some(row)) if row.events_trimmed => return None,
                Ok(None) => return None,
                Ok(Some(_)) => {}
                Err(e) => {
                    self.done = true;
                    return Some(failed(&e));
                }
            }
            let poll = self.settings.options.poll.max(Duration::from_millis(10));
            tokio::select! {
                _ = self.appended.changed() => {}
                _ = tokio::time::sleep(poll) => {}
            }
        }
    }
}

/// The event that ends a stream whose queue failed.
fn failed(e: &QueueError) -> QueuedEvent {
    tracing::error!(error = %e, "the run queue failed while streaming a run");
    QueuedEvent {
        seq: 0,
        kind: "error".to_owned(),
        data: json!({
            "code": "store_unavailable",
            "message": "the run queue could not be read; attach again with Last-Event-ID",
        }),
    }
}

/// Deletes the usage report's rows older than [`QueueOptions::usage_retention_days`]
/// (counted on the queue's clock), if it is set and the queue keeps spending.
///
/// [`QueueOptions::usage_retention_days`]: super::QueueOptions::usage_retention_days
async fn trim_usage(settings: &QueueSettings) {
    let (Some(days), Some(spending)) = (
        settings.options.usage_retention_days,
        settings.queue.spending(),
    ) else {
        return;
    };
    let now = settings.options.schedule_clock.now_ms();
    let first_kept = agentweave_runtime::store::usage_kept_from(now, days);
    match spending.trim_usage(&first_kept).await {
        Ok(0) => {}
        Ok(n) => tracing::debug!(rows = n, first_kept, "trimmed the usage report"),
        Err(e) => tracing::warn!(error = %e, "could not trim the usage report"),
    }
}

/// Removes the events of runs that ended more than the retention ago, and the usage rows past
/// their retention, every so often, until `stop`.
pub(crate) async fn trim_loop(settings: QueueSettings, mut stop: watch::Receiver<bool>) {
    let retention = settings.options.event_retention;
    let every = (retention / 4).clamp(Duration::from_secs(1), Duration::from_secs(600));
    loop {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        let before = now.saturating_sub(retention.as_millis() as u64);
        if let Err(e) = settings.queue.trim_events(before).await {
            tracing::warn!(error = %e, "could not trim the queued runs' events");
        }
        trim_usage(&settings).await;
        tokio::select! {
            _ = tokio::time::sleep(every) => {}
            _ = stop.wait_for(|s| *s) => return,
        }
    }
}
