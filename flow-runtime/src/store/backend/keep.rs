//! [`Keep`]: how the front reaches what it keeps. Every rule of the front is written once over
//! three typed operations (view a value, change it atomically, go through a table); these
//! keepers answer them:
//!
//! - any [`KeyValueBackend`]: each value is encoded to bytes ([`Value::encode`]), and a change
//!   is a read, the change, and a compare-and-swap write, retried when another writer won;
//! - [`InMemory`](super::InMemory): the values themselves in maps under a lock, changed in
//!   place (nothing is encoded, and journal steps handed over unencoded stay so until read);
//! - the [`FileStore`](crate::store::FileStore)'s directory: each value in its files;
//! - the SQL stores' rows (`SqlRows`): each value in its rows, changed in a transaction
//!   holding its lock.
//!
//! A thread's records and a run's journal are logs ([`Log`]): the front appends to them,
//! reads a window, cuts and removes them with [`Keep`]'s log operations, which a keeper that
//! writes one entry at a time (the File store: a file per record, a frame per step; the SQL
//! stores: a row per entry) answers without touching the rest of the log; the others get
//! them from `view` and `update`. More have defaults every keeper may keep: the clock the
//! rules read (`now_ms`), an append without a sync of its own (`append_unsynced`), the
//! listings of runs by their heads (`heads`, which an indexed keeper answers without reading
//! every run), and the changes of a run's head the rules decide without reading it (a claim,
//! a renewal, a release, a completion: `swap_head`, `swap_heads`, which a SQL keeper writes
//! as one conditional statement).

use std::collections::HashMap;
use std::future::Future;
use std::ops::Range;
use std::sync::Mutex;

use super::{BackendError, Entry, Head, KeyValueBackend, Run, RunPart, Table};
use crate::store::records::{HeadIs, HeadSwap};
use crate::store::{Claim, StoreError};

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

/// A value that is a log: entries appended at its end, each at its position (a thread's
/// records, a run's journal steps).
pub trait Log: Value {
    /// One entry as a keeper that writes entries one at a time keeps it (a record's bytes, a
    /// step).
    type Entry: Send + 'static;
    /// What one append hands over.
    type Batch: Clone + Send + Sync + 'static;
    /// A window of entries, as a read hands it back.
    type Part: Default + Send + 'static;
    /// The error of its contract.
    type Error: From<StoreError> + Send + 'static;

    /// How many entries it holds.
    fn len(&self) -> usize;

    /// Whether it holds none.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Appends `batch`, which holds `count` entries.
    fn push(&mut self, batch: Self::Batch, count: usize);

    /// The entries of `window` (within its length).
    fn part(&self, window: Range<usize>) -> Self::Part;

    /// Keeps its first `len` entries.
    fn cut(&mut self, len: usize);

    /// The entries of `batch`, for a keeper that writes them one at a time.
    fn entries(batch: &Self::Batch) -> Vec<Self::Entry>;

    /// A window made of `entries`, read back by such a keeper.
    fn part_of(entries: Vec<Self::Entry>) -> Self::Part;
}

/// Which runs a listing of runs wants ([`Keep::heads`]), by their head.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Heads {
    /// Those whose head waits for its resume (pending, or claimed).
    Waiting,
    /// Those whose head a claim at `now_ms` would take (pending, or claimed with its lease
    /// run out) and holds at most `max` bytes.
    Claimable {
        /// The time of the claim, in ms since the Unix epoch.
        now_ms: u64,
        /// The largest head wanted, in bytes.
        max: u64,
    },
    /// Those whose head finished at or before this time (ms since the Unix epoch).
    FinishedBy(u64),
}

/// A log as listed: its key, how many entries it holds, and its last entry.
pub type Listed<P> = (String, usize, P);

/// `window` within a log of `len` entries.
pub(crate) fn clamp(window: Range<usize>, len: usize) -> Range<usize> {
    let end = window.end.min(len);
    window.start.min(end)..end
}

/// How the front reaches what it keeps: implemented for every [`KeyValueBackend`], for the
/// in-memory keeper and for the File store's directory; not for implementing elsewhere (write
/// a [`KeyValueBackend`]). The log operations have their meaning written once here, over
/// `view` and `update`; a keeper that writes one entry at a time answers them itself.
pub trait Keep: Send + Sync + 'static + sealed::Sealed {
    /// Whether journal steps handed over unencoded are kept so, to be encoded when read.
    const KEEPS_DEFERRED: bool;

    /// The time the rules measure claims, leases and ages on, in milliseconds since the Unix
    /// epoch: this machine's clock, unless the keeper keeps one clock for every process that
    /// shares it (PostgreSQL: the server's).
    fn now_ms(&self) -> u64 {
        crate::store::now_ms()
    }

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

    /// Appends `batch` (`count` entries) to the log under `key` if it holds `expected`
    /// entries: `Ok(len)` after the append, or `Err(found)` and nothing appended when it
    /// holds another number (the compare-and-swap of thread and journal appends).
    fn append<L: Log>(
        &self,
        operation: &'static str,
        key: &str,
        expected: u64,
        count: usize,
        batch: L::Batch,
    ) -> impl Future<Output = Result<Result<u64, u64>, L::Error>> + Send {
        self.update(operation, key, move |log: &mut Option<L>| {
            let found = log.as_ref().map_or(0, |l| l.len() as u64);
            if found != expected {
                return Ok((Err(found), false));
            }
            if count == 0 {
                return Ok((Ok(found), false));
            }
            let log = log.get_or_insert_with(L::default);
            log.push(batch.clone(), count);
            Ok::<_, L::Error>((Ok(log.len() as u64), true))
        })
    }

    /// [`append`](Keep::append), committed without a sync of its own where the keeper can
    /// (SQLite: the write-ahead log makes it durable with the next synced commit; a power
    /// loss may lose it, a crash of the process does not); the others sync as `append` does.
    fn append_unsynced<L: Log>(
        &self,
        operation: &'static str,
        key: &str,
        expected: u64,
        count: usize,
        batch: L::Batch,
    ) -> impl Future<Output = Result<Result<u64, u64>, L::Error>> + Send {
        self.append::<L>(operation, key, expected, count, batch)
    }

    /// What `f` picks from the runs a listing of `heads` wants, the oldest first where the
    /// keeper keeps an order, at least the `limit` oldest of them: `f` is given every run the
    /// listing wants (and may be given others: it checks each one itself). A keeper with an
    /// index on its runs' heads (the SQL stores) reads only those; the others go through
    /// every run ([`each`](Keep::each)).
    fn heads<V: Value, T: Send>(
        &self,
        heads: Heads,
        limit: usize,
        f: impl FnMut(&str, &V) -> Result<Option<T>, StoreError> + Send,
    ) -> impl Future<Output = Result<Vec<T>, StoreError>> + Send {
        let _ = (heads, limit);
        self.each(f)
    }

    /// Calls `f` with run `id` as far as `part` asks (at least that), as one consistent
    /// read. A keeper that keeps a run in rows reads only those (the head's row; or every
    /// row without the head's bytes); the others read the run ([`view`](Keep::view)).
    fn view_run<T: Send>(
        &self,
        id: &str,
        part: RunPart,
        f: impl FnOnce(Option<&Run>) -> Result<T, StoreError> + Send,
    ) -> impl Future<Output = Result<T, StoreError>> + Send {
        let _ = part;
        self.view(id, f)
    }

    /// The bytes of run `id`'s head (`None`: there is no run), read alone where the keeper
    /// can (the SQL stores read the head row's size and bytes, not its record).
    fn head_bytes(
        &self,
        id: &str,
    ) -> impl Future<Output = Result<Option<Head>, StoreError>> + Send {
        self.view(id, |run: Option<&Run>| {
            let run = run.filter(|r| r.records.head().is_some());
            Ok(run.map(|r| r.head.clone()))
        })
    }

    /// Applies `swap` (a change the rules decided without reading the run) to the head of run
    /// `id` if it still is as the swap says: the claim the head is under after it (with the
    /// head's bytes when the swap claims it; empty for a claim already held), or `None` and
    /// nothing written. The SQL stores write it without reading the run first (one
    /// conditional `UPDATE`, and the insert of the record it adds); the others through
    /// [`update`](Keep::update).
    fn swap_head(
        &self,
        operation: &'static str,
        id: &str,
        swap: &HeadSwap,
    ) -> impl Future<Output = Result<Option<Claim>, StoreError>> + Send {
        self.update(operation, id, move |run: &mut Option<Run>| {
            let swapped = match run.as_mut() {
                Some(run) => run.swap(id, swap)?,
                None => None,
            };
            let changed = swapped.is_some();
            Ok((swapped, changed))
        })
    }

    /// Applies `swap` to up to `limit` runs whose head it applies to, the oldest heads first
    /// (a batch claim); the claims. Each head is swapped once among concurrent batches (a
    /// keeper that locks rows passes over those another batch holds: PostgreSQL's
    /// `SKIP LOCKED`).
    fn swap_heads(
        &self,
        operation: &'static str,
        swap: &HeadSwap,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<Claim>, StoreError>> + Send {
        async move {
            let listing = match swap.is {
                HeadIs::Claimable { now_ms, max } => Heads::Claimable { now_ms, max },
                HeadIs::Held { .. } => Heads::Waiting,
            };
            let listed = self.heads(listing, limit, |id, run: &Run| {
                let head = run.records.head().filter(|h| swap.is.holds(h));
                Ok(head.map(|h| (h.created_ms, id.to_owned())))
            });
            let mut listed = listed.await?;
            listed.sort();
            let mut claims = Vec::new();
            for (_, id) in listed {
                if claims.len() == limit {
                    break;
                }
                claims.extend(self.swap_head(operation, &id, swap).await?);
            }
            Ok(claims)
        }
    }

    /// How many entries the log under `key` holds, and the entries of the window `window`
    /// picks from that number (clamped to it), as one consistent read.
    fn read<L: Log>(
        &self,
        key: &str,
        window: impl FnOnce(usize) -> Range<usize> + Send,
    ) -> impl Future<Output = Result<(usize, L::Part), L::Error>> + Send {
        async move {
            let read = self.view(key, |log: Option<&L>| {
                Ok(match log {
                    Some(log) => (log.len(), log.part(clamp(window(log.len()), log.len()))),
                    None => (0, L::Part::default()),
                })
            });
            Ok(read.await?)
        }
    }

    /// Cuts the log under `key` to its first `len` entries (nothing if it holds no more).
    fn cut<L: Log>(
        &self,
        operation: &'static str,
        key: &str,
        len: usize,
    ) -> impl Future<Output = Result<(), L::Error>> + Send {
        self.update(operation, key, move |log: &mut Option<L>| {
            let Some(log) = log.as_mut().filter(|l| l.len() > len) else {
                return Ok(((), false));
            };
            log.cut(len);
            Ok::<_, L::Error>(((), true))
        })
    }

    /// Removes the log under `key`; how many entries it held.
    fn remove<L: Log>(
        &self,
        operation: &'static str,
        key: &str,
    ) -> impl Future<Output = Result<usize, L::Error>> + Send {
        self.update(operation, key, |log: &mut Option<L>| {
            let removed = log.take();
            Ok::<_, L::Error>((removed.as_ref().map_or(0, L::len), removed.is_some()))
        })
    }

    /// Every log of its table: its key, how many entries it holds, and its last entry.
    fn logs<L: Log>(&self) -> impl Future<Output = Result<Vec<Listed<L::Part>>, L::Error>> + Send {
        async move {
            let logs = self.each(|key, log: &L| {
                let len = log.len();
                let last = log.part(len.saturating_sub(1)..len);
                Ok(Some((key.to_owned(), len, last)))
            });
            Ok(logs.await?)
        }
    }
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
    impl Sealed for crate::store::file::FileDir {}
    #[cfg(any(feature = "sqlite", feature = "postgres"))]
    impl<DB: crate::store::SqlDatabase> Sealed for crate::store::sql::SqlRows<DB> {}
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
