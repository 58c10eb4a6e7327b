//! [`Keep`]: how the front reaches what it keeps. Every rule of the front is written once over
//! three typed operations (view a value, change it atomically, go through a table); two kinds
//! of keeper answer them:
//!
//! - any [`KeyValueBackend`]: each value is encoded to bytes ([`Value::encode`]), and a change
//!   is a read, the change, and a compare-and-swap write, retried when another writer won;
//! - [`InMemory`](super::InMemory): the values themselves in maps under a lock, changed in
//!   place (nothing is encoded, and journal steps handed over unencoded stay so until read).

use std::collections::HashMap;
use std::future::Future;
use std::sync::Mutex;

use super::{BackendError, Entry, KeyValueBackend, Table};
use crate::store::StoreError;

/// How many times a change whose compare-and-swap lost to another writer is tried before the
/// contention is reported.
pub(super) const MAX_RETRIES: usize = 10_000;

/// A kind of value the front keeps (a run's checkpoints, a thread, a turn lease, a journal):
/// its table, its encoding for byte backends, and its map in memory.
pub trait Value: Default + Send + Sync + 'static + sealed::Sealed {
    /// The table it is kept in.
    const TABLE: Table;

    /// Its bytes, for a [`KeyValueBackend`].
    fn encode(&self) -> Vec<u8>;

    /// The value of the bytes `key` holds; an error if they do not read back.
    fn decode(key: &str, bytes: &[u8]) -> Result<Self, StoreError>;

    /// Its map in the in-memory keeper.
    fn map(memory: &super::InMemory) -> &Mutex<HashMap<String, Self>>;
}

/// What a change decided: its answer, and whether the value changed (and must be written).
pub type Changed<T> = (T, bool);

/// How the front reaches what it keeps: implemented for every [`KeyValueBackend`] and for the
/// in-memory keeper; not for implementing elsewhere (write a [`KeyValueBackend`]).
pub trait Keep: Send + Sync + 'static + sealed::Sealed {
    /// Whether journal steps handed over unencoded are kept so, to be encoded when read.
    const KEEPS_DEFERRED: bool;

    /// Calls `f` with the value under `key` (`None`: there is none), as one consistent read.
    fn view<V: Value, T: Send>(
        &self,
        key: &str,
        f: impl FnOnce(Option<&V>) -> Result<T, StoreError> + Send,
    ) -> impl Future<Output = Result<T, StoreError>> + Send;

    /// Applies `f` to the value under `key` (`None`: there is none; setting `None` removes
    /// it) atomically: what `f` decided is kept only if nothing changed the value meanwhile,
    /// else `f` is called again on the new value. `f` must leave the value as it found it
    /// when it fails or reports no change.
    fn update<V: Value, T: Send, E: From<StoreError> + Send>(
        &self,
        operation: &'static str,
        key: &str,
        f: impl FnMut(&mut Option<V>) -> Result<Changed<T>, E> + Send,
    ) -> impl Future<Output = Result<T, E>> + Send;

    /// What `f` picks from each value of the table (in any order).
    fn each<V: Value, T: Send>(
        &self,
        f: impl FnMut(&str, &V) -> Result<Option<T>, StoreError> + Send,
    ) -> impl Future<Output = Result<Vec<T>, StoreError>> + Send;
}

/// A backend's error as the front reports it: a seal that does not open
/// ([`SealedBackend`](super::SealedBackend)) is [`StoreError::Sealed`]; anything else the
/// backend's failure while doing `operation` on `id`.
pub(super) fn failed(operation: &'static str, id: &str, source: BackendError) -> StoreError {
    match source.downcast::<crate::store::SealError>() {
        Ok(sealed) => StoreError::Sealed(*sealed),
        Err(source) => StoreError::Database {
            operation,
            id: id.to_owned(),
            source: std::sync::Arc::from(source),
        },
    }
}

/// What keeps [`Keep`] and [`Value`] to this crate's implementations.
mod sealed {
    pub trait Sealed {}
    impl<B: super::KeyValueBackend> Sealed for B {}
    impl Sealed for super::super::InMemory {}
    impl Sealed for super::super::checkpoints::Run {}
    impl Sealed for super::super::threads::Thread {}
    impl Sealed for super::super::threads::Lease {}
    impl Sealed for super::super::journals::Journal {}
}

/// The error of a change that lost its compare-and-swap [`MAX_RETRIES`] times.
fn contended(operation: &'static str, id: &str) -> StoreError {
    StoreError::Other {
        id: id.to_owned(),
        message: format!(
            "could not {operation}: {MAX_RETRIES} writes in a row lost to other writers; the \
             backend's conditional write may never succeed (check that write bumps the \
             revision it compares)"
        ),
    }
}

impl<B: KeyValueBackend> Keep for B {
    const KEEPS_DEFERRED: bool = false;

    async fn view<V: Value, T: Send>(
        &self,
        key: &str,
        f: impl FnOnce(Option<&V>) -> Result<T, StoreError> + Send,
    ) -> Result<T, StoreError> {
        let entry = self
            .read(V::TABLE, key)
            .await
            .map_err(|e| failed("read", key, e))?;
        let value = entry.map(|e| V::decode(key, &e.value)).transpose()?;
        f(value.as_ref())
    }

    async fn update<V: Value, T: Send, E: From<StoreError> + Send>(
        &self,
        operation: &'static str,
        key: &str,
        mut f: impl FnMut(&mut Option<V>) -> Result<Changed<T>, E> + Send,
    ) -> Result<T, E> {
        for _ in 0..MAX_RETRIES {
            let entry = self
                .read(V::TABLE, key)
                .await
                .map_err(|e| failed("read", key, e))?;
            let revision = entry.as_ref().map(|e| e.revision);
            let mut value = entry.map(|e| V::decode(key, &e.value)).transpose()?;
            let (answer, changed) = f(&mut value)?;
            if !changed || (value.is_none() && revision.is_none()) {
                return Ok(answer);
            }
            let bytes = value.map(|v| v.encode());
            let written = self
                .write(V::TABLE, key, revision, bytes)
                .await
                .map_err(|e| failed(operation, key, e))?;
            if written {
                return Ok(answer);
            }
        }
        Err(contended(operation, key).into())
    }

    async fn each<V: Value, T: Send>(
        &self,
        mut f: impl FnMut(&str, &V) -> Result<Option<T>, StoreError> + Send,
    ) -> Result<Vec<T>, StoreError> {
        let entries: Vec<(String, Entry)> = self
            .scan(V::TABLE)
            .await
            .map_err(|e| failed("list", V::TABLE.name(), e))?;
        let mut picked = Vec::new();
        for (key, entry) in entries {
            if let Some(t) = f(&key, &V::decode(&key, &entry.value)?)? {
                picked.push(t);
            }
        }
        Ok(picked)
    }
}
