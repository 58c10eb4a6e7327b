//! [`KeyValueStore`] as a [`ThreadStore`]: each thread's records are one value of
//! [`Table::Threads`] (each record's turn and encoded bytes), appended with one atomic
//! [`Keep::update`] that checks the thread's version; each thread's turn lease is one value
//! of [`Table::ThreadLeases`] (owner and end), taken and renewed the same way.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use super::keep::{Keep, Log, Value};
use super::Front;
use super::{corrupt, lease_end, pack, unpack, InMemory, KeyValueStore, Table};
use crate::store::records::check_size;
use crate::store::rules::thread_append;
use crate::store::thread::check_version;
use crate::store::{
    validate_thread_id, StoreError, ThreadError, ThreadHead, ThreadRecord, ThreadStore,
};

/// A thread as kept: each record's turn and its encoded bytes, in order.
#[derive(Debug, Default)]
pub struct Thread {
    records: Vec<(u64, Arc<[u8]>)>,
}

impl Value for Thread {
    const TABLE: Table = Table::Threads;

    fn encode(&self) -> Vec<u8> {
        let header: Vec<(u64, u64)> = self
            .records
            .iter()
            .map(|(turn, bytes)| (*turn, bytes.len() as u64))
            .collect();
        let bodies: Vec<&[u8]> = self.records.iter().map(|(_, b)| &b[..]).collect();
        pack(&header, &bodies)
    }

    fn decode(id: &str, value: &[u8]) -> Result<Thread, StoreError> {
        let (header, mut body) =
            unpack::<Vec<(u64, u64)>>(value).ok_or_else(|| corrupt(id, "thread"))?;
        let mut records = Vec::with_capacity(header.len());
        for (turn, len) in header {
            let len = usize::try_from(len)
                .ok()
                .filter(|&len| len <= body.len())
                .ok_or_else(|| corrupt(id, "thread"))?;
            let (bytes, rest) = body.split_at(len);
            body = rest;
            records.push((turn, Arc::from(bytes)));
        }
        Ok(Thread { records })
    }

    fn map(memory: &InMemory) -> &Mutex<HashMap<String, Thread>> {
        &memory.threads
    }
}

/// Records as read: each one's turn when the keeper keeps it apart (a keeper of record files
/// does not: the front learns it by decoding), and its bytes.
type Records = Vec<(Option<u64>, Arc<[u8]>)>;

impl Log for Thread {
    type Entry = Arc<[u8]>;
    type Batch = (u64, Arc<[u8]>);
    type Part = Records;
    type Error = ThreadError;

    fn len(&self) -> usize {
        self.records.len()
    }

    fn push(&mut self, record: (u64, Arc<[u8]>), _count: usize) {
        self.records.push(record);
    }

    fn part(&self, window: Range<usize>) -> Records {
        let records = self.records[window].iter();
        records.map(|(t, b)| (Some(*t), Arc::clone(b))).collect()
    }

    fn cut(&mut self, len: usize) {
        self.records.truncate(len);
    }

    fn entries((_, bytes): &(u64, Arc<[u8]>)) -> Vec<Arc<[u8]>> {
        vec![Arc::clone(bytes)]
    }

    fn part_of(records: Vec<Arc<[u8]>>) -> Records {
        records.into_iter().map(|bytes| (None, bytes)).collect()
    }
}

/// A turn lease as kept.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Lease {
    pub(crate) owner: String,
    pub(crate) until_ms: u64,
}

/// The rules of a thread's turn lease, on the lease `held` (if any): every store that keeps
/// leases applies these (the front, and the File store under its lock file).
impl Lease {
    /// `owner` takes the lease for `lease` from now, unless another owner holds it unexpired
    /// ([`ThreadError::Busy`]); the same owner takes it again.
    pub(crate) fn take(
        held: &mut Option<Lease>,
        id: &str,
        owner: &str,
        lease: Duration,
        now: u64,
    ) -> Result<((), bool), ThreadError> {
        if held
            .as_ref()
            .is_some_and(|h| h.owner != owner && h.until_ms > now)
        {
            return Err(ThreadError::Busy { id: id.to_owned() });
        }
        *held = Some(Lease {
            owner: owner.to_owned(),
            until_ms: lease_end(now, lease),
        });
        Ok(((), true))
    }

    /// Extends `owner`'s lease to `lease` from now; [`ThreadError::LeaseLost`] if another
    /// owner holds it or none does.
    pub(crate) fn renew(
        held: &mut Option<Lease>,
        id: &str,
        owner: &str,
        lease: Duration,
        now: u64,
    ) -> Result<((), bool), ThreadError> {
        match held {
            Some(h) if h.owner == owner => {
                h.until_ms = lease_end(now, lease);
                Ok(((), true))
            }
            _ => Err(ThreadError::LeaseLost { id: id.to_owned() }),
        }
    }

    /// Drops `owner`'s lease; whether it held one (another owner's is left).
    pub(crate) fn release(held: &mut Option<Lease>, owner: &str) -> bool {
        let mine = held.as_ref().is_some_and(|h| h.owner == owner);
        if mine {
            *held = None;
        }
        mine
    }
}

impl Value for Lease {
    const TABLE: Table = Table::ThreadLeases;

    fn encode(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("leases serialize")
    }

    fn decode(id: &str, bytes: &[u8]) -> Result<Lease, StoreError> {
        serde_json::from_slice(bytes).map_err(|_| corrupt(id, "thread lease"))
    }

    fn map(memory: &InMemory) -> &Mutex<HashMap<String, Lease>> {
        &memory.leases
    }
}

impl<B: Keep> KeyValueStore<B> {
    /// Decodes record `seq` of thread `id`, within the size limit.
    fn record(&self, id: &str, seq: usize, bytes: &[u8]) -> Result<ThreadRecord, ThreadError> {
        check_size(id, bytes.len() as u64, self.max_bytes)?;
        ThreadRecord::decode(id, seq as u64, bytes)
    }

    /// Changes the turn lease on thread `id` with `f`.
    async fn change_lease<T: Send>(
        &self,
        operation: &'static str,
        id: &str,
        f: impl FnMut(&mut Option<Lease>) -> Result<(T, bool), ThreadError> + Send,
    ) -> Result<T, ThreadError> {
        validate_thread_id(id)?;
        self.backend.update(operation, id, f).await
    }
}

#[async_trait]
impl<F: Front> ThreadStore for F {
    async fn head(&self, id: &str) -> Result<Option<ThreadHead>, ThreadError> {
        validate_thread_id(id)?;
        let (version, last) = self
            .front()
            .backend
            .read::<Thread>(id, |len| len.saturating_sub(1)..len)
            .await?;
        let Some((_, bytes)) = last.first() else {
            return Ok(None);
        };
        let last = self.front().record(id, version - 1, bytes)?;
        Ok(Some(ThreadHead {
            id: id.to_owned(),
            version: version as u64,
            turns: last.turn + 1,
            last,
        }))
    }

    async fn read(&self, id: &str, turns: Range<u64>) -> Result<Vec<ThreadRecord>, ThreadError> {
        validate_thread_id(id)?;
        // Records are in turn order: read back from the end, a window twice as long each
        // time, until a record before the turns asked for (or the first) is reached (the
        // last turn's one record and the one before it, at first).
        let mut out = Vec::new();
        let (mut end, mut size) = (None, if turns.start == 0 { usize::MAX } else { 2 });
        loop {
            let (len, window) = self
                .front()
                .backend
                .read::<Thread>(id, |len| {
                    let end = end.unwrap_or(len).min(len);
                    end.saturating_sub(size)..end
                })
                .await?;
            let to = end.unwrap_or(len).min(len);
            let from = to - window.len();
            let mut before = from == 0;
            for (k, (turn, bytes)) in window.iter().enumerate().rev() {
                // Decoded only if in the window (or if its turn is not known apart).
                if turn.is_some_and(|t| t >= turns.end) {
                    continue;
                }
                if turn.is_some_and(|t| t < turns.start) {
                    before = true;
                    break;
                }
                let record = self.front().record(id, from + k, bytes)?;
                if record.turn < turns.start {
                    before = true;
                    break;
                }
                if record.turn < turns.end {
                    out.push(record);
                }
            }
            if before {
                out.reverse();
                return Ok(out);
            }
            (end, size) = (Some(from), size.saturating_mul(2));
        }
    }

    async fn append(
        &self,
        id: &str,
        expected_version: u64,
        mut record: ThreadRecord,
    ) -> Result<u64, ThreadError> {
        let bytes: Arc<[u8]> =
            thread_append(id, expected_version, &mut record, self.front().max_bytes)?.into();
        let appended = self
            .front()
            .backend
            .append::<Thread>("append to", id, expected_version, 1, (record.turn, bytes))
            .await?;
        // Refused: `found` is not `expected_version`, so `check_version` reports the conflict.
        appended.or_else(|found| {
            check_version(id, expected_version, found)?;
            Ok(found)
        })
    }

    async fn list(&self) -> Result<Vec<String>, ThreadError> {
        let threads = self.front().backend.logs::<Thread>().await?;
        let mut ids: Vec<String> = threads
            .into_iter()
            .filter(|(_, len, _)| *len > 0)
            .map(|(id, _, _)| id)
            .collect();
        ids.sort();
        Ok(ids)
    }

    async fn delete(&self, id: &str) -> Result<bool, ThreadError> {
        validate_thread_id(id)?;
        let had = self.front().backend.remove::<Thread>("delete", id).await?;
        Ok(had > 0)
    }

    async fn lease_thread(
        &self,
        id: &str,
        owner: &str,
        lease: Duration,
    ) -> Result<(), ThreadError> {
        let keep = &*self.front().backend;
        self.front()
            .change_lease("lease", id, |held| {
                Lease::take(held, id, owner, lease, keep.now_ms())
            })
            .await
    }

    async fn renew_thread_lease(
        &self,
        id: &str,
        owner: &str,
        lease: Duration,
    ) -> Result<(), ThreadError> {
        let keep = &*self.front().backend;
        self.front()
            .change_lease("renew the lease of", id, |held| {
                Lease::renew(held, id, owner, lease, keep.now_ms())
            })
            .await
    }

    async fn release_thread_lease(&self, id: &str, owner: &str) -> Result<(), ThreadError> {
        self.front()
            .change_lease("release the lease of", id, |held| {
                Ok(((), Lease::release(held, owner)))
            })
            .await
    }
}
