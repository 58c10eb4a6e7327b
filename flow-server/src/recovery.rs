//! Recovery at start-up: the server finishes every turn whose process died.
//!
//! A journaled turn writes a start mark before it runs anything (`THREAD.turn-N.start`, or
//! `THREAD.turn-N.resume` for the continuation of an interrupted turn), and the mark stays
//! open until the turn is recorded, fails or is cancelled. [`recover_dead_turns`] lists the
//! open marks of the served flows' threads in the journal store and recovers each thread
//! with its flow's runner ([`Runner::recover`](agentweave_runtime::Runner::recover)): the turn
//! runs again from its journal (model replies and tool results journaled are not asked or
//! run again; a tool call in flight runs again under the same idempotency key) and is
//! recorded as the uninterrupted turn would have been. A client that never comes back still
//! gets its turn completed and recorded; one that comes back reads it in the thread, or sends
//! its request again with the same `Idempotency-Key` and gets the recorded turn.
//!
//! A thread still leased by the dead process is retried until its lease runs out; a thread
//! leased by a live process (another server on the same store) is left to that process once
//! its turn ends (its mark is then closed or gone).

use std::time::Duration;

use agentweave_runtime::RecoverError;

use crate::state::AppState;

/// What [`recover_dead_turns`] did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RecoveryReport {
    /// The store ids (`FLOW.TENANT.THREAD`) of the threads whose dead turn was recovered and
    /// recorded.
    pub recovered: Vec<String>,
    /// Threads whose open mark needed nothing (another process finished the turn first).
    pub nothing: usize,
    /// Threads whose dead turn could not be recovered (a corrupt journal, a turn superseded
    /// by another writer, a store failure): each is logged with its error.
    pub failed: usize,
}

/// How long to wait between two tries of a thread whose dead worker's lease has not run out.
const RETRY: Duration = Duration::from_millis(100);
/// The longest wait between two tries.
const MAX_RETRY: Duration = Duration::from_secs(2);

/// Recovers every turn of the served flows whose process died (its start mark open in the
/// journal store), waiting for each dead worker's lease to run out, and returns what it did.
/// [`serve_until`](crate::serve_until) runs it in the background when the server starts;
/// call it yourself when you serve the router some other way.
///
/// It lists every journal of the store once (`JournalStore::idle_journals`), so its cost at
/// start-up grows with the number of journals kept (see `Runner::purge` for their
/// retention). A turn whose flow is no longer served is left as it is.
pub async fn recover_dead_turns(state: &AppState) -> RecoveryReport {
    let mut report = RecoveryReport::default();
    // Every journal, including those appended a moment ago.
    let until = now_ms().saturating_add(3_600_000);
    let journals = match state.journal().idle_journals(until).await {
        Ok(journals) => journals,
        Err(e) => {
            tracing::error!(error = %e, "could not list the journals to recover dead turns");
            report.failed += 1;
            return report;
        }
    };
    let mut threads: Vec<String> = journals
        .iter()
        .filter_map(|j| marked_thread(&j.run))
        .map(str::to_owned)
        .collect();
    threads.sort();
    threads.dedup();
    let tries = threads.into_iter().filter_map(|thread| {
        let flow = thread.split('.').next()?;
        let served = state.flow(flow).ok()?.clone();
        Some(async move {
            let outcome = recover_one(&served, &thread).await;
            (thread, outcome)
        })
    });
    for (thread, outcome) in futures::future::join_all(tries).await {
        match outcome {
            Some(true) => report.recovered.push(thread),
            Some(false) => report.nothing += 1,
            None => report.failed += 1,
        }
    }
    if !report.recovered.is_empty() || report.failed > 0 {
        tracing::info!(
            recovered = report.recovered.len(),
            failed = report.failed,
            "recovered the turns whose process died"
        );
    }
    report
}

/// Recovers `thread`'s dead turn: `Some(true)` recovered and recorded, `Some(false)` nothing
/// to recover, `None` failed.
async fn recover_one(served: &crate::state::ServedFlow, thread: &str) -> Option<bool> {
    let mut wait = RETRY;
    loop {
        match served.runner().recover(thread).await {
            Ok(Some(turn)) => {
                let outcome = turn.finish().await;
                tracing::info!(thread, outcome = ?outcome_name(&outcome), "a dead turn was recovered");
                return Some(matches!(
                    outcome,
                    agentweave_runtime::TurnOutcome::Completed { .. }
                        | agentweave_runtime::TurnOutcome::Interrupted { .. }
                ));
            }
            Ok(None) => return Some(false),
            Err(RecoverError::Leased { .. }) => {
                tokio::time::sleep(wait).await;
                wait = (wait * 2).min(MAX_RETRY);
            }
            Err(e) => {
                tracing::error!(thread, error = %e, "a dead turn could not be recovered");
                return None;
            }
        }
    }
}

fn outcome_name(outcome: &agentweave_runtime::TurnOutcome) -> &'static str {
    match outcome {
        agentweave_runtime::TurnOutcome::Completed { .. } => "completed",
        agentweave_runtime::TurnOutcome::Interrupted { .. } => "interrupted",
        agentweave_runtime::TurnOutcome::Failed(_) => "failed",
    }
}

/// The thread of a start mark's journal id (`THREAD.turn-N.start` or `THREAD.turn-N.resume`).
fn marked_thread(journal: &str) -> Option<&str> {
    let rest = journal
        .strip_suffix(".start")
        .or_else(|| journal.strip_suffix(".resume"))?;
    let (thread, number) = rest.rsplit_once(".turn-")?;
    (!number.is_empty() && number.bytes().all(|b| b.is_ascii_digit())).then_some(thread)
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

#[cfg(test)]
mod tests {
    use super::marked_thread;

    #[test]
    fn start_marks_name_their_thread() {
        assert_eq!(marked_thread("desk._.ada.turn-3.start"), Some("desk._.ada"));
        assert_eq!(
            marked_thread("desk._.ada.turn-0.resume"),
            Some("desk._.ada")
        );
        assert_eq!(marked_thread("desk._.ada.turn-3"), None);
        assert_eq!(marked_thread("desk._.ada.turn-3.nested-4"), None);
        assert_eq!(marked_thread("desk._.ada.turn-x.start"), None);
        assert_eq!(marked_thread("idem-0123.start"), None);
    }
}
