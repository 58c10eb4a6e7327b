//! A thread's earlier turns for the engine ([`EarlierTurns`]), read from the runner's
//! [`ThreadStore`].

use std::ops::Range;
use std::sync::Arc;

use async_trait::async_trait;

use crate::history::{EarlierTurn, EarlierTurns};
use crate::store::{RecordStart, ThreadStore};

/// The earlier turns of one thread, as its store keeps them.
pub(crate) struct StoreTurns {
    store: Arc<dyn ThreadStore>,
    id: String,
}

impl StoreTurns {
    /// The earlier turns of thread `id` of `store`, for a turn's history.
    pub(crate) fn shared(store: &Arc<dyn ThreadStore>, id: &str) -> Arc<dyn EarlierTurns> {
        Arc::new(StoreTurns {
            store: Arc::clone(store),
            id: id.to_owned(),
        })
    }
}

#[async_trait]
impl EarlierTurns for StoreTurns {
    async fn read(&self, turns: Range<u64>) -> Result<Vec<EarlierTurn>, String> {
        let records = self
            .store
            .read(&self.id, turns)
            .await
            .map_err(|e| e.to_string())?;
        Ok(records
            .into_iter()
            .map(|record| EarlierTurn {
                turn: record.turn,
                input: match record.start {
                    RecordStart::Turn { input } => input,
                    _ => Vec::new(),
                },
                events: record.events,
            })
            .collect())
    }

    fn thread_id(&self) -> &str {
        &self.id
    }
}
