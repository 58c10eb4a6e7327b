//! [`SealedBackend`]: encryption at rest as a layer under the front, so any
//! [`KeyValueBackend`] (ours or yours) keeps only sealed bytes.

use async_trait::async_trait;

use super::{BackendError, Entry, KeyValueBackend, Table};
use crate::store::SealingKeys;

/// A [`KeyValueBackend`] that seals every value it writes to `inner` with [`SealingKeys`]
/// (AES-256-GCM, bound to its table and key, so sealed bytes moved elsewhere do not open) and
/// opens what it reads with the key the bytes name. Values written before the backend was
/// sealed are read as they are. A value that does not open is
/// [`StoreError::Sealed`](crate::store::StoreError::Sealed) from the front, and stays as it
/// was for the right key to open.
///
/// What stays in the clear: the tables and keys (checkpoint, thread and run ids) and the
/// revisions. Everything the front keeps under them (a run's history and bytes, a thread's
/// records, a lease, a journal's steps) is sealed.
///
/// ```
/// use agentweave_runtime::store::backend::{KeyValueStore, MemoryBackend, SealedBackend};
/// use agentweave_runtime::store::{CheckpointStore, SaveMode, SealingKeys};
/// # futures::executor::block_on(async {
/// let keys = SealingKeys::new("2026-06", [7u8; 32]).unwrap();
/// let store = KeyValueStore::new(SealedBackend::new(MemoryBackend::default(), keys));
/// store.save("order-7", b"card 4242".to_vec(), SaveMode::Create).await.unwrap();
/// assert_eq!(store.get("order-7").await.unwrap().unwrap(), b"card 4242");
/// # });
/// ```
#[derive(Debug)]
pub struct SealedBackend<B> {
    inner: B,
    keys: SealingKeys,
}

impl<B> SealedBackend<B> {
    /// `inner`, sealing with `keys`.
    pub fn new(inner: B, keys: SealingKeys) -> Self {
        SealedBackend { inner, keys }
    }

    /// The backend it wraps (whose values are sealed).
    pub fn inner(&self) -> &B {
        &self.inner
    }

    /// Opens `entry`, kept under `key` of `table`.
    fn open(&self, table: Table, key: &str, mut entry: Entry) -> Result<Entry, BackendError> {
        if SealingKeys::is_sealed(&entry.value) {
            let place = place(table, key);
            let what = format!("the {} entry '{key}'", table.name());
            entry.value = self.keys.open_named(&what, &place, &entry.value)?;
        }
        Ok(entry)
    }
}

/// Where a value is kept, as its seal binds it.
fn place(table: Table, key: &str) -> String {
    format!("{} '{key}'", table.name())
}

#[async_trait]
impl<B: KeyValueBackend> KeyValueBackend for SealedBackend<B> {
    async fn read(&self, table: Table, key: &str) -> Result<Option<Entry>, BackendError> {
        let entry = self.inner.read(table, key).await?;
        entry.map(|e| self.open(table, key, e)).transpose()
    }

    async fn write(
        &self,
        table: Table,
        key: &str,
        expected: Option<u64>,
        value: Option<Vec<u8>>,
    ) -> Result<bool, BackendError> {
        let sealed = value.map(|v| self.keys.seal(&place(table, key), &v));
        self.inner.write(table, key, expected, sealed).await
    }

    async fn scan(&self, table: Table) -> Result<Vec<(String, Entry)>, BackendError> {
        let entries = self.inner.scan(table).await?;
        entries
            .into_iter()
            .map(|(key, entry)| {
                let entry = self.open(table, &key, entry)?;
                Ok((key, entry))
            })
            .collect()
    }
}
