//! The workers of one server process: claim loops that take queued runs, run them with the
//! flow's runner, keep their lease, and record their outcome.
//!
//! A run taken from a worker that died (its lease ran out) is recovered from its turn's
//! journal when the turn was journaled ([`start`](agentweave_runtime::Runner::start));
//! if its turn was already recorded it is only reported; otherwise it runs again from its
//! start. Its outcome says which (`recovery`: `journal`, `recorded`, `rerun`), and its tool
//! calls keep their idempotency keys (the run id is their scope).

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agentweave_runtime::store::{QueueClaim, QueueError};
use agentweave_runtime::{CancelMode, Message, RunHandle, ThreadError, TurnRequest};
use serde_json::{json, Value};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::QueueSettings;
use crate::state::AppState;

/// The claim loops of one process, started by [`serve_until`](crate::serve_until) (or
/// [`run_workers`]); [`stop`](Workers::stop) ends them gracefully.
#[derive(Debug)]
pub struct Workers {
    stop: watch::Sender<bool>,
    tasks: Vec<JoinHandle<()>>,
}

impl Workers {
    /// Starts the workers of `state`'s run queue; `None` without a queue or with 0 workers.
    pub fn start(state: &AppState) -> Option<Workers> {
        let settings = state.queue_settings()?.clone();
        if settings.options.workers == 0 {
            return None;
        }
        let (stop, watching) = watch::channel(false);
        let mut tasks: Vec<JoinHandle<()>> = (0..settings.options.workers)
            .map(|_| {
                tokio::spawn(claim_loop(
                    state.clone(),
                    settings.clone(),
                    watching.clone(),
                ))
            })
            .collect();
        if settings.queue.schedules().is_some() {
            tasks.push(tokio::spawn(crate::schedules::fire_loop(
                state.clone(),
                watching.clone(),
            )));
        }
        tasks.push(tokio::spawn(super::events::trim_loop(
            settings.clone(),
            watching,
        )));
        Some(Workers { stop, tasks })
    }

    /// Stops claiming; waits for the running runs to end (up to
    /// [`QueueOptions::drain`](super::QueueOptions::drain), after which they are cancelled and
    /// handed back to the queue for another process).
    pub async fn stop(self) {
        let _ = self.stop.send(true);
        for task in self.tasks {
            let _ = task.await;
        }
    }
}

/// Runs `state`'s queue workers until `shutdown` completes, then stops them gracefully: the
/// `worker` mode of a server process that serves no API.
pub async fn run_workers(state: AppState, shutdown: impl Future<Output = ()>) {
    let workers = Workers::start(&state);
    shutdown.await;
    if let Some(workers) = workers {
        workers.stop().await;
    }
}

/// Waits for the stop signal (at once if it was given).
async fn stopped(stop: &mut watch::Receiver<bool>) {
    let _ = stop.wait_for(|s| *s).await;
}

async fn claim_loop(state: AppState, settings: QueueSettings, mut stop: watch::Receiver<bool>) {
    let options = settings.options.clone();
    // Only runs of the flows this process serves: another process takes the others.
    let flows: Vec<String> = state.flows().map(|f| f.name().to_owned()).collect();
    loop {
        if *stop.borrow() {
            return;
        }
        let claimed = settings
            .queue
            .claim_among(&settings.worker, options.lease, &flows)
            .await;
        let pause = match claimed {
            Ok(Some(claim)) => {
                execute(&state, &settings, claim, stop.clone()).await;
                continue;
            }
            Ok(None) => options.poll,
            Err(e) => {
                tracing::error!(error = %e, "the run queue failed to claim");
                options.poll.max(Duration::from_millis(500))
            }
        };
        tokio::select! {
            _ = tokio::time::sleep(pause) => {}
            _ = stopped(&mut stop) => return,
        }
    }
}

/// Runs one claimed run to its end and records its outcome, or hands it back.
async fn execute(
    state: &AppState,
    settings: &QueueSettings,
    claim: QueueClaim,
    stop: watch::Receiver<bool>,
) {
    let lost = Arc::new(AtomicBool::new(false));
    let current: Arc<Mutex<Option<RunHandle>>> = Arc::default();
    let renewer = {
        let queue = settings.queue.clone();
        let claim = claim.clone();
        let lease = settings.options.lease;
        let check = settings
            .options
            .poll
            .max(Duration::from_millis(100))
            .min(lease / 3);
        let (lost, current) = (lost.clone(), current.clone());
        tokio::spawn(async move {
            let mut renewed = tokio::time::Instant::now();
            let mut cancelled = false;
            loop {
                tokio::time::sleep(check).await;
                if !cancelled {
                    // A cancel recorded in the queue (by any process) is applied here.
                    let run = current.lock().unwrap_or_else(|p| p.into_inner()).clone();
                    if let Some(run) = run {
                        if let Ok(Some(request)) = queue.cancel_requested(&claim).await {
                            cancelled = true;
                            apply_cancel(&run, &request);
                        }
                    }
                }
                if renewed.elapsed() < lease / 3 {
                    continue;
                }
                renewed = tokio::time::Instant::now();
                match queue.renew(&claim, lease).await {
                    Ok(()) => {}
                    Err(QueueError::ClaimLost { .. }) => {
                        // Another process took the run over: stop running it here.
                        lost.store(true, Ordering::SeqCst);
                        let run = current.lock().unwrap_or_else(|p| p.into_inner()).clone();
                        if let Some(run) = run {
                            let _ = run.cancel(CancelMode::IMMEDIATE, None);
                        }
                        tracing::warn!(run = %claim.run.run_id, "lost the claim on a queued run");
                        return;
                    }
                    Err(e) => tracing::warn!(error = %e, "could not renew a queued run's lease"),
                }
            }
        })
    };
    let ended = run_claimed(state, settings, &claim, &current, stop).await;
    renewer.abort();
    let _ = renewer.await;
    if lost.load(Ordering::SeqCst) {
        return;
    }
    let result = match &ended {
        Some(outcome) => {
            // The row's end and the run's `done` event, in one step.
            let completed = settings.queue.complete(&claim, outcome.clone()).await;
            settings.appended.send_modify(|n| *n = n.wrapping_add(1));
            completed
        }
        None => settings.queue.release(&claim).await,
    };
    match (result, ended) {
        (Ok(()), Some(outcome)) => super::http::send_webhook(state, &claim.run, &outcome),
        (Ok(()), None) => {}
        (Err(e), _) => {
            tracing::warn!(error = %e, run = %claim.run.run_id, "could not record a queued run's end")
        }
    }
}

/// Applies a cancel request recorded in the queue (`{"mode", "timeout_ms"}`) to `run`.
fn apply_cancel(run: &RunHandle, request: &Value) {
    let mode = serde_json::from_value::<CancelMode>(request["mode"].clone())
        .unwrap_or(CancelMode::IMMEDIATE);
    let timeout = request["timeout_ms"].as_u64().map(Duration::from_millis);
    if let Err(e) = run.cancel(mode, timeout) {
        tracing::debug!(error = %e, run = %run.id(), "a queued run's cancel was not applied");
    }
}

fn failed(run_id: &str, message: impl Into<String>) -> Value {
    json!({ "run_id": run_id, "status": "error", "error": message.into() })
}

/// Runs the claimed run; its outcome, or `None` to hand it back (shutdown before it ended, a
/// store failure).
async fn run_claimed(
    state: &AppState,
    settings: &QueueSettings,
    claim: &QueueClaim,
    current: &Mutex<Option<RunHandle>>,
    mut stop: watch::Receiver<bool>,
) -> Option<Value> {
    let run_id = claim.run.run_id.as_str();
    let Ok(served) = state.flow(&claim.run.flow) else {
        return Some(failed(
            run_id,
            format!(
                "this server does not serve flow '{}'; serve it on every process of the queue",
                claim.run.flow
            ),
        ));
    };
    let Some(message) = claim.run.input["message"].as_str() else {
        return Some(failed(run_id, "the queued run has no message"));
    };
    let thread = claim.run.thread.as_str();
    let runner = served.runner();
    let turns = match state.threads().head(thread).await {
        Ok(head) => head.map_or(0, |h| h.turns),
        Err(e) => {
            tracing::warn!(error = %e, "the thread store failed; handing a queued run back");
            return None;
        }
    };
    let retaken = claim.attempt > 1;
    if retaken {
        let noted = claim.run.note.as_ref().and_then(|n| n["turn"].as_u64());
        if noted.is_some_and(|n| turns > n) {
            // The worker that died recorded the turn but not the run's end.
            return Some(json!({
                "run_id": run_id,
                "status": "success",
                "recovery": "recorded",
                "note": "the run's turn was recorded by a worker that stopped before reporting \
                         it; it was not run again",
            }));
        }
    }
    if settings
        .queue
        .note(claim, json!({ "turn": turns, "worker": settings.worker }))
        .await
        .is_err()
    {
        return None;
    }
    // The run starts as the principal who queued it (the record names them as the
    // requester, so the approval rules apply to them as on every other door). Sent again
    // under its id after its worker died, the engine recovers the dead turn from its journal
    // (the tool calls keep their idempotency keys) instead of running it twice.
    let mut request = TurnRequest::new(thread, Message::user(message)).run_id(run_id.to_owned());
    // A schedule's run has the grants its creator had when it created the schedule.
    if let Some(by) = claim.run.input["by"].as_str() {
        request = match claim.run.input["grants"].as_array() {
            Some(grants) => request.by(agentweave_runtime::Caller::new(by)
                .grants(grants.iter().filter_map(|g| g.as_str()))),
            None => request.by(by),
        };
    }
    let run = loop {
        if *stop.borrow() {
            return None;
        }
        // Cancelled before it started (it was waiting for its thread): it does not start.
        if let Ok(Some(request)) = settings.queue.cancel_requested(claim).await {
            return Some(json!({
                "run_id": run_id,
                "status": "cancelled",
                "cancel_mode": request["mode"],
                "at_safe_point": true,
                "before_start": true,
                "note": "cancelled before its turn started",
            }));
        }
        let started = runner.start(request.clone()).await.map_err(|e| match e {
            // The thread is busy here or elsewhere (a dead worker's lease that has not run
            // out yet): wait.
            ThreadError::Busy { .. } => None,
            other => Some(other.to_string()),
        });
        match started {
            Ok(run) => break run,
            Err(Some(error)) => return Some(failed(run_id, error)),
            Err(None) => {
                tokio::select! {
                    _ = tokio::time::sleep(settings.options.poll.max(Duration::from_millis(20))) => {}
                    _ = stopped(&mut stop) => return None,
                }
            }
        }
    };
    let recovery = match (retaken, run.recovered()) {
        (false, _) => None,
        (true, true) => Some("journal"),
        (true, false) => Some("rerun"),
    };
    *current.lock().unwrap_or_else(|p| p.into_inner()) = Some(run.clone());
    let drain = settings.options.drain;
    let thread_id = super::http::thread_id(&claim.run);
    let max_bytes = state.limits().max_event_bytes;
    let stored = super::events::store_events(settings, claim, &run, &thread_id, max_bytes);
    let ran = async {
        tokio::select! {
            outcome = run.wait() => Some(outcome),
            _ = async { stopped(&mut stop).await; tokio::time::sleep(drain).await } => {
                // Shutdown and the run did not end in time: stop it and hand it back.
                let _ = run.cancel(CancelMode::IMMEDIATE, None);
                run.wait().await;
                None
            }
        }
    };
    let (outcome, stored) = futures::join!(ran, stored);
    let outcome = outcome?;
    if let Err(e) = stored {
        // The claim was lost (another process runs it now) or the queue failed: the run's
        // end is recorded (or not) as for any run; its events stopped here.
        tracing::warn!(error = %e, run = %run_id, "could not store a queued run's events");
    }
    let mut body = crate::runs::outcome_json(run.id(), &outcome, run.failure().as_ref());
    body["worker"] = Value::String(settings.worker.clone());
    if let Some(recovery) = recovery {
        body["recovery"] = Value::String(recovery.to_owned());
        if recovery == "rerun" {
            body["note"] = Value::String(
                "the run's worker stopped during its turn and nothing of it was journaled: \
                 the turn ran again from its start"
                    .into(),
            );
        }
    }
    Some(body)
}
