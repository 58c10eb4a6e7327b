//! A store of your own in three methods: the [`KeyValueBackend`] trait of primitives (read a
//! key, write it if its revision is the expected one, scan a table) and [`KeyValueStore`],
//! the front that keeps every rule of the store contracts over it.
//!
//! The front owns the rules: id validation, size limits, the checkpoint state machine
//! (pending, claimed with a lease, taken over when the lease runs out, resumed, finished,
//! replaced), the thread and journal compare-and-swap, the turn lease, retention. A backend
//! only keeps bytes under keys, each with a revision it bumps on every write, and refuses a
//! write whose expected revision is not the current one: that one compare-and-swap is what
//! makes claims exactly-once across processes. Any key-value service with a conditional write
//! fits (a SQL table with a version column, Redis `WATCH`/`MULTI`, DynamoDB condition
//! expressions, etcd transactions).
//!
//! ```
//! use agentweave_runtime::store::backend::{KeyValueStore, MemoryBackend};
//! use agentweave_runtime::store::{CheckpointStore, SaveMode};
//! # futures::executor::block_on(async {
//! let store = KeyValueStore::new(MemoryBackend::default());
//! store.save("order-7", b"waiting".to_vec(), SaveMode::Create).await.unwrap();
//! assert_eq!(store.get("order-7").await.unwrap().unwrap(), b"waiting");
//! # });
//! ```
//!
//! Check a backend with the [conformance suite](super::conformance):
//! `conformance::checkpoints(|| async { KeyValueStore::new(MyBackend::new()) })`, and the
//! same for `threads` and `journals`.
//!
//! Encryption at rest is a layer any backend gets: [`SealedBackend`] wraps a backend and seals
//! every value it keeps (`KeyValueStore::new(SealedBackend::new(backend, keys))`).
//!
//! - `mod.rs`: the trait, the front and [`MemoryBackend`] (bytes in a `BTreeMap`);
//! - `keep.rs`: [`Keep`], the typed operations the front's rules are written over (view,
//!   change atomically, go through a table; and for a [`Log`], append under a
//!   compare-and-swap on its length, read a window, cut, remove), for any backend (encoded,
//!   with compare-and-swap), for [`InMemory`], for the File store's [`FileDir`] and for the
//!   SQL stores' rows (`SqlRows`);
//! - `front.rs`: [`Front`], the stores whose contracts are the front's alone (the front itself,
//!   [`InMemoryStore`](super::InMemoryStore), [`FileStore`](super::FileStore), the SQL
//!   stores): each contract is implemented once, for them;
//! - `memory.rs`: [`InMemory`], values kept as they are, what
//!   [`InMemoryStore`](super::InMemoryStore) is the front over;
//! - `checkpoints.rs`, `threads.rs`, `journals.rs`: the front's rules of each contract and the
//!   values it keeps for them;
//! - `sealed.rs`: [`SealedBackend`].

mod checkpoints;
mod front;
mod journals;
mod keep;
mod memory;
mod sealed;
mod threads;

use std::collections::BTreeMap;
use std::error::Error as StdError;
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;

pub use super::file::FileDir;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub use super::sql::SqlRows;
use super::{Claim, StoreError, DEFAULT_MAX_CHECKPOINT_BYTES};
pub(crate) use checkpoints::{Head, Run, RunPart};
pub use front::Front;
pub(crate) use keep::clamp;
pub use keep::{Changed, Heads, Keep, Listed, Log, Value};
pub use memory::InMemory;
pub use sealed::SealedBackend;
pub(crate) use threads::Lease;

/// The tables a [`KeyValueStore`] keeps its data in, each a map of keys to bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum Table {
    /// A run's checkpoint history and its head's bytes, keyed by checkpoint id.
    Checkpoints,
    /// A thread's records, keyed by thread id.
    Threads,
    /// A thread's turn lease, keyed by thread id.
    ThreadLeases,
    /// A run's journal of steps, keyed by run id.
    Journals,
}

impl Table {
    /// The table's name, for a backend that maps tables to names (`checkpoints`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Table::Checkpoints => "checkpoints",
            Table::Threads => "threads",
            Table::ThreadLeases => "thread_leases",
            Table::Journals => "journals",
        }
    }
}

/// A value kept under a key, with its revision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Bumped by the backend on every write of the key (any number that differs from the
    /// previous one's: a counter, a row version, a database's modification index).
    pub revision: u64,
    /// The bytes written.
    pub value: Vec<u8>,
}

/// What a backend's error is: any error, boxed.
pub type BackendError = Box<dyn StdError + Send + Sync>;

/// The primitives a [`KeyValueStore`] needs from where it keeps its data: three methods.
/// Every rule of the contracts is the front's; a backend keeps bytes.
///
/// ```
/// use agentweave_runtime::store::backend::{BackendError, Entry, KeyValueBackend, Table};
/// use std::collections::BTreeMap;
/// use std::sync::Mutex;
///
/// /// The entries, and the last revision given (never reused, even after a removal).
/// #[derive(Default)]
/// struct Map(Mutex<(BTreeMap<(Table, String), Entry>, u64)>);
///
/// #[async_trait::async_trait]
/// impl KeyValueBackend for Map {
///     async fn read(&self, table: Table, key: &str) -> Result<Option<Entry>, BackendError> {
///         Ok(self.0.lock().unwrap().0.get(&(table, key.to_owned())).cloned())
///     }
///     async fn write(
///         &self,
///         table: Table,
///         key: &str,
///         expected: Option<u64>,
///         value: Option<Vec<u8>>,
///     ) -> Result<bool, BackendError> {
///         let (map, last) = &mut *self.0.lock().unwrap();
///         let slot = (table, key.to_owned());
///         if map.get(&slot).map(|e| e.revision) != expected {
///             return Ok(false);
///         }
///         match value {
///             Some(value) => {
///                 *last += 1;
///                 map.insert(slot, Entry { revision: *last, value });
///             }
///             None => {
///                 map.remove(&slot);
///             }
///         }
///         Ok(true)
///     }
///     async fn scan(&self, table: Table) -> Result<Vec<(String, Entry)>, BackendError> {
///         let map = &self.0.lock().unwrap().0;
///         Ok(map
///             .iter()
///             .filter(|((t, _), _)| *t == table)
///             .map(|((_, k), e)| (k.clone(), e.clone()))
///             .collect())
///     }
/// }
/// ```
#[async_trait]
pub trait KeyValueBackend: Send + Sync + 'static {
    /// The entry under `key` in `table`, if any.
    async fn read(&self, table: Table, key: &str) -> Result<Option<Entry>, BackendError>;

    /// Writes `value` under `key` in `table` (`None`: removes the key) if the key's current
    /// revision is `expected` (`None`: the key is absent), and bumps the revision; returns
    /// whether it wrote. Atomic: of concurrent writers expecting the same revision, at most one
    /// writes. A revision is never given twice to one key, even after the key was removed
    /// and written again (else a writer that read before the removal could overwrite). This
    /// compare-and-swap is the one guarantee the front builds every rule on.
    async fn write(
        &self,
        table: Table,
        key: &str,
        expected: Option<u64>,
        value: Option<Vec<u8>>,
    ) -> Result<bool, BackendError>;

    /// Every entry of `table`, in any order: what listings (pending checkpoints, threads,
    /// idle journals) and retention read.
    async fn scan(&self, table: Table) -> Result<Vec<(String, Entry)>, BackendError>;
}

/// The front over a [`KeyValueBackend`]: a [`CheckpointStore`](super::CheckpointStore), a
/// [`ThreadStore`](super::ThreadStore) and a [`JournalStore`](super::JournalStore) that keep
/// every rule of their contracts, with the backend's compare-and-swap for what must be
/// atomic. Cheap to clone (shared).
///
/// [`InMemoryStore`](super::InMemoryStore) is this front over values kept in memory as they
/// are ([`InMemory`]); every other `B` is a [`KeyValueBackend`].
pub struct KeyValueStore<B> {
    backend: Arc<B>,
    max_bytes: u64,
}

impl<B> Clone for KeyValueStore<B> {
    fn clone(&self) -> Self {
        KeyValueStore {
            backend: Arc::clone(&self.backend),
            max_bytes: self.max_bytes,
        }
    }
}

impl<B> fmt::Debug for KeyValueStore<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyValueStore")
            .field("backend", &std::any::type_name::<B>())
            .field("max_bytes", &self.max_bytes)
            .finish()
    }
}

impl<B: KeyValueBackend> KeyValueStore<B> {
    /// The front over `backend`, reading checkpoints, records and steps up to
    /// [`DEFAULT_MAX_CHECKPOINT_BYTES`].
    pub fn new(backend: B) -> Self {
        KeyValueStore::over(backend)
    }
}

impl<B> KeyValueStore<B> {
    pub(crate) fn over(backend: B) -> Self {
        KeyValueStore {
            backend: Arc::new(backend),
            max_bytes: DEFAULT_MAX_CHECKPOINT_BYTES,
        }
    }

    /// Refuses checkpoints, thread records and steps larger than `limit` bytes, written or
    /// read ([`StoreError::TooLarge`]); the default is [`DEFAULT_MAX_CHECKPOINT_BYTES`].
    pub fn max_checkpoint_bytes(mut self, limit: u64) -> Self {
        self.max_bytes = limit;
        self
    }

    /// The largest checkpoint, record or step written or read, in bytes.
    #[cfg(any(feature = "postgres", test))]
    pub(crate) fn max_bytes(&self) -> u64 {
        self.max_bytes
    }

    /// The backend.
    pub fn backend(&self) -> &B {
        &self.backend
    }
}

/// The error of a claim no longer held.
pub(crate) fn lost(claim: &Claim) -> StoreError {
    StoreError::ClaimLost {
        id: claim.id.clone(),
        version: claim.version,
        attempt: claim.attempt,
    }
}

/// When a lease of `lease` taken at `now` (ms) runs out.
pub(crate) fn lease_end(now: u64, lease: Duration) -> u64 {
    now.saturating_add(lease.as_millis().min(u64::MAX as u128) as u64)
}

/// The error of a stored value that does not read back.
fn corrupt(id: &str, what: &str) -> StoreError {
    StoreError::Other {
        id: id.to_owned(),
        message: format!("the stored {what} does not read back (damaged or foreign bytes)"),
    }
}

/// A stored value: a JSON header line, then a body of raw bytes.
fn pack<T: serde::Serialize>(header: &T, body: &[&[u8]]) -> Vec<u8> {
    let mut out = serde_json::to_vec(header).expect("headers serialize");
    out.push(b'\n');
    for part in body {
        out.extend_from_slice(part);
    }
    out
}

/// A stored value's header and body.
fn unpack<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Option<(T, &[u8])> {
    let end = bytes.iter().position(|&b| b == b'\n')?;
    let header = serde_json::from_slice(&bytes[..end]).ok()?;
    Some((header, &bytes[end + 1..]))
}

/// A [`KeyValueBackend`] in memory: a `BTreeMap` behind a mutex. For tests, and the model of
/// a backend's semantics.
#[derive(Debug, Default)]
pub struct MemoryBackend {
    /// The entries, and the last revision given (so none is given twice).
    entries: Mutex<(Entries, u64)>,
}

/// Entries by table and key.
type Entries = BTreeMap<(Table, String), Entry>;

#[async_trait]
impl KeyValueBackend for MemoryBackend {
    async fn read(&self, table: Table, key: &str) -> Result<Option<Entry>, BackendError> {
        let entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        Ok(entries.0.get(&(table, key.to_owned())).cloned())
    }

    async fn write(
        &self,
        table: Table,
        key: &str,
        expected: Option<u64>,
        value: Option<Vec<u8>>,
    ) -> Result<bool, BackendError> {
        let mut guard = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        let (entries, last) = &mut *guard;
        let slot = (table, key.to_owned());
        if entries.get(&slot).map(|e| e.revision) != expected {
            return Ok(false);
        }
        match value {
            Some(value) => {
                *last += 1;
                entries.insert(
                    slot,
                    Entry {
                        revision: *last,
                        value,
                    },
                );
            }
            None => {
                entries.remove(&slot);
            }
        }
        Ok(true)
    }

    async fn scan(&self, table: Table) -> Result<Vec<(String, Entry)>, BackendError> {
        let entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        Ok(entries
            .0
            .range((table, String::new())..)
            .take_while(|((t, _), _)| *t == table)
            .map(|((_, key), entry)| (key.clone(), entry.clone()))
            .collect())
    }
}
