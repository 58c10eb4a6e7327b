//! Helpers shared by the integration tests.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use flow_runtime::{CheckpointStore, InMemoryStore, StoreError};

/// A store whose writes fail ("disk full") after the first `ok_writes`.
#[derive(Clone)]
pub struct FailingStore {
    /// Where the writes that succeed go.
    pub inner: InMemoryStore,
    /// How many writes may still succeed.
    pub ok_writes: Arc<AtomicUsize>,
}

#[async_trait]
impl CheckpointStore for FailingStore {
    async fn get(&self, id: &str) -> Result<Option<Vec<u8>>, StoreError> {
        self.inner.get(id).await
    }
    async fn set(&self, id: &str, bytes: Vec<u8>) -> Result<(), StoreError> {
        if self
            .ok_writes
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_err()
        {
            return Err(StoreError::Other {
                id: id.into(),
                message: "disk full".into(),
            });
        }
        self.inner.set(id, bytes).await
    }
    async fn delete(&self, id: &str) -> Result<(), StoreError> {
        self.inner.delete(id).await
    }
}
