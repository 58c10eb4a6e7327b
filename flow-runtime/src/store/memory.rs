//! [`InMemoryStore`]: the front ([`KeyValueStore`]) over values kept in memory
//! ([`InMemory`]), for tests and runs that need not survive the process.

use super::backend::{InMemory, KeyValueStore};
pub(crate) use super::backend::{lease_end, lost};

/// A store in memory: for tests, and for runs that need not survive the process. Clones share
/// the same checkpoints, threads and journals; claims are atomic across the tasks and threads
/// of the process.
///
/// It is the [`KeyValueStore`] front over [`InMemory`], so it keeps every rule of the
/// contracts exactly as a durable store does. It keeps checkpoints and thread records in their
/// encoded form (as a durable store would), so what it hands back was decoded, never shared
/// with the writer; journal steps handed over unencoded are encoded when read.
///
/// ```
/// use agentweave_runtime::store::{CheckpointStore, InMemoryStore, SaveMode};
/// # futures::executor::block_on(async {
/// let store = InMemoryStore::new().max_checkpoint_bytes(1024);
/// store.save("order-7", b"waiting".to_vec(), SaveMode::Create).await.unwrap();
/// assert_eq!(store.get("order-7").await.unwrap().unwrap(), b"waiting");
/// # });
/// ```
pub type InMemoryStore = KeyValueStore<InMemory>;

impl KeyValueStore<InMemory> {
    /// An empty store.
    pub fn new() -> Self {
        KeyValueStore::over(InMemory::default())
    }
}

impl Default for KeyValueStore<InMemory> {
    fn default() -> Self {
        Self::new()
    }
}
