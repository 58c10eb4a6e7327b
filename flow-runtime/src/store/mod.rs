//! Checkpoints and threads, and where they are kept: the [`Checkpoint`] format, the
//! [`CheckpointStore`] trait, the [`ThreadStore`] contract of conversations, and the stores
//! that ship with the runtime ([`InMemoryStore`], [`FileStore`]; both implement both traits).
//!
//! A checkpoint is what an interrupted run saves so it can resume, even in another process.
//!
//! A checkpoint holds the run's input, its session (events and values), the interrupts it
//! stopped at and the fingerprint of the flow's shape. It is encoded as
//!
//! ```text
//! agentflow-checkpoint <version>\n
//! <FNV-1a 64 of the body, 16 hex digits>\n
//! <body: JSON>
//! ```
//!
//! so foreign bytes, an unknown version, a truncated or corrupted file and a checkpoint of a
//! different flow are each told apart and reported as a [`CheckpointError`].

mod checkpoint;
mod file;
mod memory;
mod thread;

use std::io;
use std::sync::Arc;

use async_trait::async_trait;

pub(crate) use checkpoint::record_events;
pub use checkpoint::{
    Checkpoint, CheckpointError, CheckpointStatus, RecordedEvent, FORMAT_VERSION,
};
pub use file::{FileStore, DEFAULT_CHECKPOINT_DIR};
pub use memory::InMemoryStore;
pub(crate) use thread::now_ms;
pub use thread::{
    turn_checkpoint_id, validate_thread_id, RecordEnd, RecordStart, ThreadError, ThreadHead,
    ThreadRecord, ThreadStore, MAX_THREAD_ID_LEN,
};

/// A failure of a [`CheckpointStore`].
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The id cannot name a checkpoint (ids are 1 to 128 characters of `A-Z a-z 0-9 . _ -`,
    /// not starting with `.`).
    #[error(
        "checkpoint id '{id}' is not valid: use 1 to 128 characters of A-Z, a-z, 0-9, '.', \
         '_' or '-', not starting with '.'"
    )]
    InvalidId {
        /// The id given.
        id: String,
    },
    /// Reading or writing failed.
    #[error("checkpoint store could not {operation} '{id}': {source}")]
    Io {
        /// What the store was doing: `read`, `write` or `delete`.
        operation: &'static str,
        /// The checkpoint id.
        id: String,
        /// The underlying error.
        #[source]
        source: Arc<io::Error>,
    },
    /// Any other failure of a store of your own.
    #[error("checkpoint store failed on '{id}': {message}")]
    Other {
        /// The checkpoint id.
        id: String,
        /// What went wrong.
        message: String,
    },
}

/// Async get, set and delete of checkpoint bytes by id.
///
/// `set` must be atomic: after it returns `Ok`, `get` returns the new bytes; if it fails, `get`
/// returns the old bytes (or nothing), never a mix.
#[async_trait]
pub trait CheckpointStore: Send + Sync + 'static {
    /// The bytes stored under `id`, if any.
    async fn get(&self, id: &str) -> Result<Option<Vec<u8>>, StoreError>;
    /// Stores `bytes` under `id`, replacing what was there.
    async fn set(&self, id: &str, bytes: Vec<u8>) -> Result<(), StoreError>;
    /// Removes `id`; removing a missing id is not an error.
    async fn delete(&self, id: &str) -> Result<(), StoreError>;
}

/// Checks that `id` is a valid checkpoint id (see [`StoreError::InvalidId`]).
pub fn validate_id(id: &str) -> Result<(), StoreError> {
    let ok = !id.is_empty()
        && id.len() <= 128
        && !id.starts_with('.')
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    if ok {
        Ok(())
    } else {
        Err(StoreError::InvalidId { id: id.to_owned() })
    }
}
