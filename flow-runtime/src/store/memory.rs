//! [`InMemoryStore`]: the front ([`KeyValueStore`]) over values kept in memory
//! ([`InMemory`]), for tests and runs that need not survive the process. Every method is the
//! front's; this file only names the store.

use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

use super::backend::{InMemory, KeyValueStore};
pub(crate) use super::backend::lost;
use super::{
    CheckpointMeta, CheckpointStore, Claim, Completion, DeferredSteps, JournalError,
    JournalStore, JournalSummary, PendingCheckpoint, PendingStep, SaveMode, StoreError,
    StoredStep, ThreadError, ThreadHead, ThreadRecord, ThreadStore,
};

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
    /// bytes ([`StoreError::TooLarge`]); the default is
    /// [`DEFAULT_MAX_CHECKPOINT_BYTES`](super::DEFAULT_MAX_CHECKPOINT_BYTES).
    pub fn max_checkpoint_bytes(self, limit: u64) -> Self {
        InMemoryStore(self.0.max_checkpoint_bytes(limit))
    }
}

#[async_trait]
impl CheckpointStore for InMemoryStore {
    async fn get(&self, id: &str) -> Result<Option<Vec<u8>>, StoreError> {
        self.0.get(id).await
    }
    async fn save(&self, id: &str, bytes: Vec<u8>, mode: SaveMode) -> Result<u64, StoreError> {
        self.0.save(id, bytes, mode).await
    }
    async fn claim(&self, id: &str, lease: Duration) -> Result<Claim, StoreError> {
        self.0.claim(id, lease).await
    }
    async fn renew(&self, claim: &Claim, lease: Duration) -> Result<(), StoreError> {
        self.0.renew(claim, lease).await
    }
    async fn release(&self, claim: &Claim) -> Result<(), StoreError> {
        self.0.release(claim).await
    }
    async fn complete(&self, claim: &Claim, completion: Completion) -> Result<u64, StoreError> {
        self.0.complete(claim, completion).await
    }
    async fn history(&self, id: &str) -> Result<Vec<CheckpointMeta>, StoreError> {
        self.0.history(id).await
    }
    async fn pending(&self, limit: usize) -> Result<Vec<PendingCheckpoint>, StoreError> {
        self.0.pending(limit).await
    }
    async fn claim_pending(&self, limit: usize, lease: Duration) -> Result<Vec<Claim>, StoreError> {
        self.0.claim_pending(limit, lease).await
    }
    async fn purge_finished(&self, age: Duration) -> Result<usize, StoreError> {
        self.0.purge_finished(age).await
    }
    async fn delete(&self, id: &str) -> Result<(), StoreError> {
        CheckpointStore::delete(&self.0, id).await
    }
}

#[async_trait]
impl ThreadStore for InMemoryStore {
    async fn head(&self, id: &str) -> Result<Option<ThreadHead>, ThreadError> {
        self.0.head(id).await
    }
    async fn read(&self, id: &str, turns: Range<u64>) -> Result<Vec<ThreadRecord>, ThreadError> {
        self.0.read(id, turns).await
    }
    async fn append(
        &self,
        id: &str,
        expected_version: u64,
        record: ThreadRecord,
    ) -> Result<u64, ThreadError> {
        self.0.append(id, expected_version, record).await
    }
    async fn list(&self) -> Result<Vec<String>, ThreadError> {
        self.0.list().await
    }
    async fn delete(&self, id: &str) -> Result<bool, ThreadError> {
        ThreadStore::delete(&self.0, id).await
    }
    async fn lease_thread(&self, id: &str, owner: &str, lease: Duration) -> Result<(), ThreadError> {
        self.0.lease_thread(id, owner, lease).await
    }
    async fn renew_thread_lease(
        &self,
        id: &str,
        owner: &str,
        lease: Duration,
    ) -> Result<(), ThreadError> {
        self.0.renew_thread_lease(id, owner, lease).await
    }
    async fn release_thread_lease(&self, id: &str, owner: &str) -> Result<(), ThreadError> {
        self.0.release_thread_lease(id, owner).await
    }
}

#[async_trait]
impl JournalStore for InMemoryStore {
    async fn append_steps(
        &self,
        run: &str,
        expected: u64,
        steps: Vec<StoredStep>,
    ) -> Result<u64, JournalError> {
        self.0.append_steps(run, expected, steps).await
    }
    /// Kept as handed over: encoded (and its kind and size checked) when read.
    fn keeps_deferred(&self) -> bool {
        self.0.keeps_deferred()
    }
    async fn append_deferred(
        &self,
        run: &str,
        expected: u64,
        steps: Vec<PendingStep>,
    ) -> Result<u64, JournalError> {
        self.0.append_deferred(run, expected, steps).await
    }
    async fn append_deferred_batch(
        &self,
        run: &str,
        expected: u64,
        at_ms: u64,
        steps: Arc<dyn DeferredSteps>,
    ) -> Result<u64, JournalError> {
        self.0.append_deferred_batch(run, expected, at_ms, steps).await
    }
    async fn read_steps(&self, run: &str, from: u64) -> Result<Vec<StoredStep>, JournalError> {
        self.0.read_steps(run, from).await
    }
    async fn journal_len(&self, run: &str) -> Result<u64, JournalError> {
        self.0.journal_len(run).await
    }
    async fn truncate_steps(&self, run: &str, len: u64) -> Result<(), JournalError> {
        self.0.truncate_steps(run, len).await
    }
    async fn delete_journal(&self, run: &str) -> Result<bool, JournalError> {
        self.0.delete_journal(run).await
    }
    async fn idle_journals(&self, at_ms: u64) -> Result<Vec<JournalSummary>, JournalError> {
        self.0.idle_journals(at_ms).await
    }
}
