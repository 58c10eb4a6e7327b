//! [`InMemoryStore`]: the front ([`KeyValueStore`]) over values kept in memory
//! ([`InMemory`]), for tests and runs that need not survive the process. Every method of its
//! contracts is the front's ([`Front`]); this file only names the store.

use super::backend::{Front, InMemory, KeyValueStore};

/// A store in memory: for tests, and for runs that need not survive the process. Clones share
/// the same checkpoints, threads and journals; claims are atomic across the tasks and threads
/// of the process.
///
/// It is the [`KeyValueStore`] front over [`InMemory`], so it keeps every rule of the
/// contracts exactly as the front does over any backend. It keeps checkpoints and thread
/// records in their encoded form (as a durable store would), so what it hands back was
/// decoded, never shared with the writer; journal steps handed over unencoded are encoded
/// when read.
///
/// ```
/// use agentweave_runtime::store::{CheckpointStore, InMemoryStore, SaveMode};
/// # futures::executor::block_on(async {
/// let store = InMemoryStore::new().max_checkpoint_bytes(1024);
/// store.save("order-7", b"waiting".to_vec(), SaveMode::Create).await.unwrap();
/// assert_eq!(store.get("order-7").await.unwrap().unwrap(), b"waiting");
/// # });
/// ```
#[derive(Debug, Clone)]
pub struct InMemoryStore(KeyValueStore<InMemory>);

impl Default for InMemoryStore {
    fn default() -> Self {
        InMemoryStore(KeyValueStore::over(InMemory::default()))
    }
}

impl InMemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// The same store, refusing checkpoints, thread records and journal steps over `limit`
    /// bytes ([`StoreError::TooLarge`](super::StoreError::TooLarge)); the default is
    /// [`DEFAULT_MAX_CHECKPOINT_BYTES`](super::DEFAULT_MAX_CHECKPOINT_BYTES).
    pub fn max_checkpoint_bytes(self, limit: u64) -> Self {
        InMemoryStore(self.0.max_checkpoint_bytes(limit))
    }
}

impl Front for InMemoryStore {
    type Keep = InMemory;

    #[inline]
    fn front(&self) -> &KeyValueStore<InMemory> {
        &self.0
    }
}
