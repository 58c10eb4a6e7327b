//! Threads as the server keeps them: one record per (flow, tenant, thread id) in the store.
//!
//! A record holds the conversation's messages (each user message and the answer its turn
//! ended with) and the interrupt the thread waits on, if any. A turn reads the record, runs,
//! and writes it back when the run ends or interrupts; a cancelled or failed turn writes
//! nothing, so the thread stays as it was.

use flow_runtime::{CheckpointStore, InterruptInfo, Message};
use serde::{Deserialize, Serialize};

use crate::error::ApiError;

/// The format version of a thread record.
pub const THREAD_FORMAT: u32 = 1;

/// A valid thread id: 1 to 40 characters of `A-Z a-z 0-9 _ -`.
pub fn valid_thread_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 40
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-'))
}

/// Where a thread lives: its flow, its tenant and its id. Store keys are built from the three
/// (none of which may contain `.`), so one tenant's thread id never reaches another's record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadKey {
    /// The flow's name.
    pub flow: String,
    /// The tenant.
    pub tenant: String,
    /// The thread id the caller chose.
    pub id: String,
}

impl ThreadKey {
    /// A key, after checking the thread id.
    pub fn new(flow: &str, tenant: &str, id: &str) -> Result<Self, ApiError> {
        if !valid_thread_id(id) {
            return Err(ApiError::BadRequest(
                "a thread id is 1 to 40 characters of A-Z, a-z, 0-9, '_' or '-'".into(),
            ));
        }
        Ok(ThreadKey {
            flow: flow.to_owned(),
            tenant: tenant.to_owned(),
            id: id.to_owned(),
        })
    }

    /// The store key of the thread's record.
    pub fn record_key(&self) -> String {
        format!("t.{}.{}.{}", self.flow, self.tenant, self.id)
    }

    /// The checkpoint id of the thread's `turn`-th turn (counted from 1).
    pub fn checkpoint_id(&self, turn: u64) -> String {
        format!("c.{}.{}.{}.{turn}", self.flow, self.tenant, self.id)
    }
}

/// An interrupt a thread waits on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pending {
    /// The checkpoint the interrupted turn saved.
    pub checkpoint: String,
    /// Its interrupts: resume data is addressed to their ids.
    pub interrupts: Vec<InterruptInfo>,
}

/// A thread's record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThreadRecord {
    /// [`THREAD_FORMAT`].
    pub version: u32,
    /// Turns started and finished or interrupted (the next turn is `turns + 1`).
    pub turns: u64,
    /// Each user message and the answer its turn ended with.
    pub messages: Vec<Message>,
    /// The interrupt the thread waits on: no new turn starts until it is resumed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending: Option<Pending>,
}

impl ThreadRecord {
    /// A thread with no turn yet.
    pub fn empty() -> Self {
        ThreadRecord {
            version: THREAD_FORMAT,
            turns: 0,
            messages: Vec::new(),
            pending: None,
        }
    }
}

/// Reads a thread's record, `None` if it has none.
pub async fn load(
    store: &dyn CheckpointStore,
    key: &ThreadKey,
) -> Result<Option<ThreadRecord>, ApiError> {
    let Some(bytes) = store.get(&key.record_key()).await? else {
        return Ok(None);
    };
    let record: ThreadRecord = serde_json::from_slice(&bytes).map_err(|e| {
        tracing::error!(error = %e, thread = %key.id, "thread record does not decode");
        ApiError::Internal
    })?;
    if record.version != THREAD_FORMAT {
        tracing::error!(
            version = record.version,
            "thread record of an unknown format"
        );
        return Err(ApiError::Internal);
    }
    Ok(Some(record))
}

/// Writes a thread's record.
pub async fn save(
    store: &dyn CheckpointStore,
    key: &ThreadKey,
    record: &ThreadRecord,
) -> Result<(), ApiError> {
    let bytes = serde_json::to_vec(record).map_err(|_| ApiError::Internal)?;
    store.set(&key.record_key(), bytes).await?;
    Ok(())
}

/// Deletes a thread's record and its checkpoints.
pub async fn delete(store: &dyn CheckpointStore, key: &ThreadKey) -> Result<bool, ApiError> {
    let Some(record) = load(store, key).await? else {
        return Ok(false);
    };
    for turn in 1..=record.turns {
        store.delete(&key.checkpoint_id(turn)).await?;
    }
    store.delete(&key.record_key()).await?;
    Ok(true)
}
