//! A journaled turn's start mark: what [`Runner::recover`](crate::Runner::recover) needs to
//! run the turn again after its worker died (see `runner::recover`), written before the turn
//! runs anything, closed if the turn fails or is cancelled. A new turn writes a [`TurnStart`]
//! (`THREAD.turn-N.start`); the resume of an interrupted turn writes a [`ResumeStart`]
//! (`THREAD.turn-N.resume`: the checkpoint it resumed and the answers).

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::message::Message;
use crate::run_path::RunPath;
use crate::store::{JournalError, JournalStore, StoredStep};

/// The label of a turn's start mark.
pub(super) const MARK_KIND: &str = "turn_start";
/// The label of a resumed turn's start mark.
pub(super) const RESUME_KIND: &str = "turn_resume";
/// The label of the step that closes a mark (the turn failed or was cancelled).
const CLOSED_KIND: &str = "turn_closed";

/// The id of the journal holding the start mark of turn `turn` of thread `thread`.
pub fn turn_mark_id(thread: &str, turn: u64) -> String {
    // `turn_journal_id(thread, turn)`, then `.start`.
    format!("{thread}.turn-{turn}.start")
}

/// The id of the journal holding the start mark of the latest resume of turn `turn` of
/// thread `thread`.
pub(super) fn resume_mark_id(thread: &str, turn: u64) -> String {
    format!("{thread}.turn-{turn}.resume")
}

/// The id of the journal of the nested steps (see `journal_nested`) of the part of the turn
/// whose journal is `turn_journal` that started at the thread's version `version`.
pub(crate) fn nested_journal_id(turn_journal: &str, version: u64) -> String {
    format!("{turn_journal}.nested-{version}")
}

/// What the resume of an interrupted journaled turn writes before it runs: what its recovery
/// needs to resume it again with the same answers.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct ResumeStart {
    /// The flow's fingerprint.
    pub(super) flow: String,
    /// The thread.
    pub(super) thread: String,
    /// The turn's number.
    pub(super) turn: u64,
    /// The thread's version the resume loaded.
    pub(super) version: u64,
    /// The checkpoint it resumed.
    pub(super) checkpoint_id: String,
    /// The answers, by interrupt id.
    pub(super) targets: serde_json::Map<String, serde_json::Value>,
    /// Who answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) by: Option<Arc<str>>,
    /// The run id it was requested under, if one was given (recorded with the turn).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) run_id: Option<String>,
}

/// What a journaled turn writes before it runs: what its recovery needs to start it again.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct TurnStart {
    /// The flow's fingerprint.
    pub(super) flow: String,
    /// The thread.
    pub(super) thread: String,
    /// The turn's number.
    pub(super) turn: u64,
    /// The thread's version the turn loaded.
    pub(super) version: u64,
    /// The turn's input.
    pub(super) input: Vec<Message>,
    /// Where it started.
    pub(super) started_at: RunPath,
    /// Its idempotency scope.
    pub(super) scope: String,
    /// Who started it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) by: Option<Arc<str>>,
    /// The run id it was requested under, if one was given (recorded with the turn).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) run_id: Option<String>,
    /// The id the turn saves its checkpoint under if it is interrupted (drawn before it runs),
    /// so that a recovery can withdraw a checkpoint the dead worker saved but never recorded:
    /// left pending, an approvals screen would list it and its approval would pay again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) checkpoint_id: Option<String>,
}

/// A new turn's start mark: written before it runs; closed if the turn fails or is cancelled
/// (dropped); left open when it is recorded (the thread has moved on) or its worker dies.
pub(super) struct TurnMark {
    store: Arc<dyn JournalStore>,
    id: String,
    armed: bool,
}

impl TurnMark {
    /// Writes the start mark `start` of a new turn in `store`.
    pub(super) async fn write(
        store: Arc<dyn JournalStore>,
        start: &TurnStart,
    ) -> Result<TurnMark, JournalError> {
        let id = turn_mark_id(&start.thread, start.turn);
        let bytes = serde_json::to_vec(start).expect("a turn start always serialises");
        Self::write_step(store, id, MARK_KIND, bytes).await
    }

    /// Writes the start mark `start` of the resume of an interrupted turn in `store`.
    pub(super) async fn write_resume(
        store: Arc<dyn JournalStore>,
        start: &ResumeStart,
    ) -> Result<TurnMark, JournalError> {
        let id = resume_mark_id(&start.thread, start.turn);
        let bytes = serde_json::to_vec(start).expect("a resume start always serialises");
        Self::write_step(store, id, RESUME_KIND, bytes).await
    }

    async fn write_step(
        store: Arc<dyn JournalStore>,
        id: String,
        kind: &str,
        bytes: Vec<u8>,
    ) -> Result<TurnMark, JournalError> {
        // A mark left by an earlier attempt of this turn number (failed, cancelled, or
        // crashed and not recovered) is replaced.
        if store.journal_len(&id).await? > 0 {
            store.truncate_steps(&id, 0).await?;
        }
        let step = StoredStep {
            seq: 0,
            at_ms: crate::store::now_ms(),
            kind: kind.into(),
            bytes,
        };
        store.append_steps(&id, 0, vec![step]).await?;
        Ok(TurnMark {
            store,
            id,
            armed: true,
        })
    }

    /// Leaves the mark as it is (the turn was recorded, or another worker owns it now).
    pub(super) fn leave(mark: Option<TurnMark>) {
        if let Some(mut mark) = mark {
            mark.armed = false;
        }
    }

    /// Closes the mark now (the turn failed or was cancelled: nothing to recover), unless it
    /// was left. A failure is logged: a recovery then finds the turn and runs it again.
    pub(super) async fn close(mut self) {
        if !self.armed {
            return;
        }
        self.armed = false;
        close_mark(&*self.store, &self.id).await;
    }
}

/// Appends the closing step of mark `id`.
async fn close_mark(store: &dyn JournalStore, id: &str) {
    let step = StoredStep {
        seq: 1,
        at_ms: crate::store::now_ms(),
        kind: CLOSED_KIND.into(),
        bytes: b"{}".to_vec(),
    };
    if let Err(e) = store.append_steps(id, 1, vec![step]).await {
        tracing::debug!(mark = %id, error = %e, "could not close a turn's start mark");
    }
}

impl Drop for TurnMark {
    /// Closes the mark of a turn that failed or was cancelled: there is nothing to recover.
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let store = Arc::clone(&self.store);
        let id = std::mem::take(&mut self.id);
        handle.spawn(async move { close_mark(&*store, &id).await });
    }
}
