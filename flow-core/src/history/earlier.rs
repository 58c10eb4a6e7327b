//! The earlier turns of a thread as history entries, read from the host's thread store (through
//! [`EarlierTurns`]) only as far back as an agent's context policy looks.

use std::ops::Range;
use std::sync::Arc;

use async_trait::async_trait;

use super::{CompactionRecord, HistoryEntry};
use crate::event::{empty_name, Action, AgentError, RecordedEvent};
use crate::message::Message;

/// One earlier part of a thread, as its host's thread store recorded it: what the orchestration
/// needs of a thread record to rebuild the history an agent sees.
#[derive(Debug, Clone)]
pub struct EarlierTurn {
    /// The turn it belongs to, from 0.
    pub turn: u64,
    /// The user's messages, when the part started a new turn (none for a resume or a change of
    /// values).
    pub input: Vec<Message>,
    /// The events the part recorded, in order.
    pub events: Vec<RecordedEvent>,
}

/// Where a turn reads its thread's earlier turns: implemented by the host over its thread
/// store (the in-process runtime reads its `ThreadStore`). The engine asks only as far back as
/// an agent's context policy looks, once per turn.
#[async_trait]
pub trait EarlierTurns: Send + Sync {
    /// The records of turns `turns` (`start..end`), in order. The error says what failed, for
    /// the agent's error event.
    async fn read(&self, turns: Range<u64>) -> Result<Vec<EarlierTurn>, String>;

    /// The thread's id, for error messages.
    fn thread_id(&self) -> &str;
}

/// The turns before the running one, loaded lazily and kept for the rest of the turn.
#[doc(hidden)]
pub struct ThreadHistory {
    store: Arc<dyn EarlierTurns>,
    /// The running turn's number: earlier turns are `0..turn`.
    turn: u64,
    loaded: futures::lock::Mutex<Loaded>,
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
    /// The history of turn `turn` of the thread `store` reads.
    pub fn new(store: Arc<dyn EarlierTurns>, turn: u64) -> Self {
        ThreadHistory {
            store,
            turn,
            loaded: futures::lock::Mutex::new(Loaded {
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
                .read(from..loaded.from)
                .await
                .map_err(|e| thread_failure(self.store.thread_id(), &e))?;
            let mut entries = Vec::new();
            for record in records {
                {
                    entries.extend(record.input.into_iter().map(|m| ThreadEntry {
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
                    let message = match (e.message, &e.action) {
                        (Some(message), _) => message,
                        // A code agent's result carries no message: its parent reads it as one.
                        (None, Some(Action::Finish(result))) => {
                            crate::context_form::result_message(result)
                        }
                        (None, _) => return None,
                    };
                    Some(ThreadEntry {
                        is_transfer: matches!(e.action, Some(Action::TransferToAgent(_))),
                        is_result: matches!(e.action, Some(Action::Finish(_))),
                        compaction: e.action.as_ref().and_then(CompactionRecord::of),
                        entry: HistoryEntry {
                            is_user_input: false,
                            message: Arc::new(message),
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

fn thread_failure(id: &str, e: &str) -> AgentError {
    AgentError::Thread {
        message: format!("could not read the earlier turns of thread '{id}': {e}").into(),
    }
}
