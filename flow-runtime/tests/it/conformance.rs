//! The public conformance suite (`store::conformance`) on the in-process stores: in memory,
//! files, and each sealed (encrypted at rest); the SQL stores run it in `tests/store_sql.rs`.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use agentweave_runtime::store::conformance;
use agentweave_runtime::store::memory_items::TransientMemoryStore;
use agentweave_runtime::store::{
    FileRunQueue, FileStore, InMemoryRunQueue, InMemoryStore, SealedStore, SealingKeys,
};

/// A new empty directory on each call, for a factory of fresh file stores.
fn fresh(area: &'static str) -> impl FnMut() -> PathBuf {
    let n = AtomicUsize::new(0);
    move || crate::support::dirs::fresh_dir(area, &n.fetch_add(1, Ordering::SeqCst).to_string())
}

fn keys() -> SealingKeys {
    SealingKeys::new("k1", [7; 32]).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn in_memory_store_passes_the_suite() {
    conformance::checkpoints(|| async { InMemoryStore::new() }).await;
    conformance::threads(|| async { InMemoryStore::new() }).await;
    conformance::journals(|| async { InMemoryStore::new() }).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn file_store_passes_the_suite() {
    let mut dir = fresh("conformance-file");
    conformance::checkpoints(|| std::future::ready(FileStore::new(dir()).unwrap())).await;
    conformance::threads(|| std::future::ready(FileStore::new(dir()).unwrap())).await;
    conformance::journals(|| std::future::ready(FileStore::new(dir()).unwrap())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sealed_in_memory_store_passes_the_suite() {
    let sealed = || async { SealedStore::new(InMemoryStore::new(), keys()) };
    conformance::checkpoints(sealed).await;
    conformance::threads(sealed).await;
    conformance::journals(sealed).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sealed_file_store_passes_the_suite() {
    let mut dir = fresh("conformance-sealed-file");
    let mut sealed =
        || std::future::ready(SealedStore::new(FileStore::new(dir()).unwrap(), keys()));
    conformance::checkpoints(&mut sealed).await;
    conformance::threads(&mut sealed).await;
    conformance::journals(&mut sealed).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn in_memory_and_file_queues_pass_the_suite() {
    conformance::run_queue(|| async { InMemoryRunQueue::new() }).await;
    let mut dir = fresh("conformance-queue");
    conformance::run_queue(|| std::future::ready(FileRunQueue::new(dir()).unwrap())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn transient_memory_store_passes_the_suite() {
    conformance::memory(|| async { TransientMemoryStore::new() }).await;
}

/// A store that breaks a rule (here: every claim succeeds) fails the suite with a message
/// naming the rule and how to fix the backend.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_store_that_breaks_a_rule_is_told_which() {
    use agentweave_runtime::store::{
        CheckpointMeta, CheckpointStore, Claim, Completion, PendingCheckpoint, SaveMode, StoreError,
    };
    use async_trait::async_trait;
    use std::time::Duration;

    /// Claims without checking the head's state: two claimants both win.
    struct DoubleClaims(InMemoryStore);

    #[async_trait]
    impl CheckpointStore for DoubleClaims {
        async fn get(&self, id: &str) -> Result<Option<Vec<u8>>, StoreError> {
            self.0.get(id).await
        }
        async fn save(&self, id: &str, b: Vec<u8>, m: SaveMode) -> Result<u64, StoreError> {
            self.0.save(id, b, m).await
        }
        async fn claim(&self, id: &str, lease: Duration) -> Result<Claim, StoreError> {
            match self.0.claim(id, lease).await {
                Err(StoreError::Claimed { attempt, .. }) => Ok(Claim {
                    id: id.into(),
                    version: 1,
                    attempt,
                    bytes: self.0.get(id).await?.unwrap_or_default(),
                }),
                other => other,
            }
        }
        async fn renew(&self, c: &Claim, lease: Duration) -> Result<(), StoreError> {
            self.0.renew(c, lease).await
        }
        async fn release(&self, c: &Claim) -> Result<(), StoreError> {
            self.0.release(c).await
        }
        async fn complete(&self, c: &Claim, done: Completion) -> Result<u64, StoreError> {
            self.0.complete(c, done).await
        }
        async fn history(&self, id: &str) -> Result<Vec<CheckpointMeta>, StoreError> {
            self.0.history(id).await
        }
        async fn pending(&self, limit: usize) -> Result<Vec<PendingCheckpoint>, StoreError> {
            self.0.pending(limit).await
        }
        async fn purge_finished(&self, age: Duration) -> Result<usize, StoreError> {
            self.0.purge_finished(age).await
        }
        async fn delete(&self, id: &str) -> Result<(), StoreError> {
            self.0.delete(id).await
        }
    }

    let failed = tokio::spawn(conformance::checkpoints(|| async {
        DoubleClaims(InMemoryStore::new())
    }))
    .await
    .unwrap_err();
    let panic = failed.into_panic();
    let message = panic
        .downcast_ref::<String>()
        .expect("the suite panics with a message");
    assert!(
        message.contains("store conformance: the rule")
            && message.contains("how to fix the backend"),
        "{message}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn key_value_front_over_the_memory_backend_passes_the_suite() {
    use agentweave_runtime::store::backend::{KeyValueStore, MemoryBackend};
    let fresh = || async { KeyValueStore::new(MemoryBackend::default()) };
    conformance::checkpoints(fresh).await;
    conformance::threads(fresh).await;
    conformance::journals(fresh).await;
    // Sealing is a layer over any store, the front's too.
    let sealed =
        || async { SealedStore::new(KeyValueStore::new(MemoryBackend::default()), keys()) };
    conformance::checkpoints(sealed).await;
    conformance::threads(sealed).await;
    conformance::journals(sealed).await;
}

/// Sealing as a layer under the front: any backend wrapped in `SealedBackend` passes the suite
/// and keeps no value in the clear.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sealed_backend_under_the_front_passes_the_suite_and_keeps_nothing_plain() {
    use agentweave_runtime::store::backend::{
        KeyValueBackend, KeyValueStore, MemoryBackend, SealedBackend, Table,
    };
    use agentweave_runtime::store::{
        CheckpointStore, JournalStore, SaveMode, StoreError, StoredStep,
    };
    let fresh =
        || async { KeyValueStore::new(SealedBackend::new(MemoryBackend::default(), keys())) };
    conformance::checkpoints(fresh).await;
    conformance::threads(fresh).await;
    conformance::journals(fresh).await;

    let kept = Arc::new(MemoryBackend::default());
    let store = KeyValueStore::new(SealedBackend::new(Shared(kept.clone()), keys()));
    store
        .save("order-7", b"card 4242".to_vec(), SaveMode::Create)
        .await
        .unwrap();
    let step = StoredStep {
        seq: 0,
        at_ms: 1,
        kind: "tool_result".into(),
        bytes: b"paid 4242".to_vec(),
    };
    store.append_steps("order-7", 0, vec![step]).await.unwrap();
    for table in [Table::Checkpoints, Table::Journals] {
        let entry = kept.read(table, "order-7").await.unwrap().unwrap();
        assert!(SealingKeys::is_sealed(&entry.value), "{table:?} is sealed");
        assert!(
            !entry.value.windows(4).any(|w| w == b"4242"),
            "{table:?} holds the plain text"
        );
    }
    assert_eq!(store.get("order-7").await.unwrap().unwrap(), b"card 4242");

    // Another key does not open it: a typed error, and the value stays for the right key.
    let other = SealingKeys::new("k1", [9u8; 32]).unwrap();
    let wrong = KeyValueStore::new(SealedBackend::new(Shared(kept.clone()), other));
    let err = wrong.get("order-7").await.unwrap_err();
    assert!(matches!(err, StoreError::Sealed(_)), "{err:?}");
    assert_eq!(store.get("order-7").await.unwrap().unwrap(), b"card 4242");
}

/// One backend's entries read by two fronts (what two processes on one database see).
struct Shared(Arc<agentweave_runtime::store::backend::MemoryBackend>);

#[async_trait::async_trait]
impl agentweave_runtime::store::backend::KeyValueBackend for Shared {
    async fn read(
        &self,
        table: agentweave_runtime::store::backend::Table,
        key: &str,
    ) -> Result<
        Option<agentweave_runtime::store::backend::Entry>,
        agentweave_runtime::store::backend::BackendError,
    > {
        self.0.read(table, key).await
    }
    async fn write(
        &self,
        table: agentweave_runtime::store::backend::Table,
        key: &str,
        expected: Option<u64>,
        value: Option<Vec<u8>>,
    ) -> Result<bool, agentweave_runtime::store::backend::BackendError> {
        self.0.write(table, key, expected, value).await
    }
    async fn scan(
        &self,
        table: agentweave_runtime::store::backend::Table,
    ) -> Result<
        Vec<(String, agentweave_runtime::store::backend::Entry)>,
        agentweave_runtime::store::backend::BackendError,
    > {
        self.0.scan(table).await
    }
}

/// The front's size limit holds for checkpoints and thread records, written and read.
#[tokio::test]
async fn key_value_front_keeps_its_size_limit() {
    use agentweave_runtime::store::backend::{KeyValueStore, MemoryBackend};
    let open = KeyValueStore::new(MemoryBackend::default());
    conformance::size_limit(&open, &open.clone().max_checkpoint_bytes(16), "").await;
    conformance::thread_size_limit(&open, &open.clone().max_checkpoint_bytes(64), "").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn in_memory_queue_passes_the_schedules_and_spending_suites() {
    conformance::schedules(|| async { InMemoryRunQueue::new() }).await;
    conformance::spending(|| async { InMemoryRunQueue::new() }).await;
}
