//! The earlier turns of a thread as history entries, read from the thread store only as far
//! back as an agent's context policy looks.

use std::sync::Arc;

use super::{CompactionRecord, HistoryEntry};
use crate::event::{empty_name, Action, AgentError};
use crate::store::{RecordStart, ThreadError, ThreadStore};

/// The turns before the running one, loaded lazily and kept for the rest of the turn.
pub(crate) struct ThreadHistory {
    store: Arc<dyn ThreadStore>,
    id: String,
    /// The running turn's number: earlier turns are `0..turn`.
    turn: u64,
    loaded: tokio::sync::Mutex<Loaded>,
}

struct Loaded {
    /// The first turn `entries` holds (equal to `turn` while nothing is loaded).
    from: u64,
    entries: Vec<ThreadEntry>,
}

/// An entry of an earlier turn, and whether its event carried a transfer (for
/// `skip_transfer_messages`).
#[derive(Clone)]
pub(crate) struct ThreadEntry {
    pub(crate) entry: HistoryEntry,
    pub(crate) is_transfer: bool,
    /// Whether its event finished a delegated task (its message is the task's result).
    pub(crate) is_result: bool,
    /// The compaction its event records (its message is the summary), if it records one.
    pub(crate) compaction: Option<CompactionRecord>,
}

impl ThreadHistory {
    pub(crate) fn new(store: Arc<dyn ThreadStore>, id: String, turn: u64) -> Self {
        ThreadHistory {
            store,
            id,
            turn,
            loaded: tokio::sync::Mutex::new(Loaded {
                from: turn,
                entries: Vec::new(),
            }),
        }
    }

    /// The entries of the last `window` earlier turns (all of them for `None`), in order.
    pub(crate) async fn entries(
        &self,
        window: Option<u64>,
    ) -> Result<Vec<ThreadEntry>, AgentError> {
        let from = window.map_or(0, |w| self.turn.saturating_sub(w));
        let mut loaded = self.loaded.lock().await;
        if from < loaded.from {
            let records = self
                .store
                .read(&self.id, from..loaded.from)
                .await
                .map_err(|e| thread_failure(&self.id, &e))?;
            let mut entries = Vec::new();
            for record in records {
                if let RecordStart::Turn { input } = record.start {
                    entries.extend(input.into_iter().map(|m| ThreadEntry {
                        entry: HistoryEntry {
                            is_user_input: true,
                            agent_name: empty_name(),
                            message: Arc::new(m),
                            turn: record.turn,
                        },
                        is_transfer: false,
                        is_result: false,
                        compaction: None,
                    }));
                }
                entries.extend(record.events.into_iter().filter_map(|e| {
                    Some(ThreadEntry {
                        is_transfer: matches!(e.action, Some(Action::TransferToAgent(_))),
                        is_result: matches!(e.action, Some(Action::Finish(_))),
                        compaction: e.action.as_ref().and_then(CompactionRecord::of),
                        entry: HistoryEntry {
                            is_user_input: false,
                            message: Arc::new(e.message?),
                            agent_name: e.agent_name,
                            turn: record.turn,
                        },
                    })
                }));
            }
            entries.append(&mut loaded.entries);
            loaded.entries = entries;
            loaded.from = from;
        }
        let start = loaded.entries.partition_point(|e| e.entry.turn < from);
        Ok(loaded.entries[start..].to_vec())
    }

    /// The running turn's number.
    pub(crate) fn turn(&self) -> u64 {
        self.turn
    }
}

fn thread_failure(id: &str, e: &ThreadError) -> AgentError {
    AgentError::Thread {
        message: format!("could not read the earlier turns of thread '{id}': {e}").into(),
    }
}
