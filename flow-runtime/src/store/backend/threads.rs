//! [`KeyValueStore`] as a [`ThreadStore`]: each thread's records are one entry of
//! [`Table::Threads`] (a header of each record's turn and length, then the encoded records),
//! appended with the backend's compare-and-swap on the thread's version; each thread's turn
//! lease is one entry of [`Table::ThreadLeases`] (owner and end), taken and renewed the same
//! way.

use std::ops::Range;
use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use super::{contended, corrupt, failed, pack, unpack, KeyValueBackend, KeyValueStore};
use super::{Table, MAX_RETRIES};
use crate::store::memory::lease_end;
use crate::store::records::check_size;
use crate::store::thread::check_version;
use crate::store::{
    now_ms, validate_thread_id, ThreadError, ThreadHead, ThreadRecord, ThreadStore,
};

/// A thread as stored: each record's turn and its encoded bytes.
struct Thread {
    records: Vec<(u64, Vec<u8>)>,
}

impl Thread {
    fn decode(id: &str, value: &[u8]) -> Result<Thread, ThreadError> {
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
            records.push((turn, bytes.to_vec()));
        }
        Ok(Thread { records })
    }

    fn encode(&self) -> Vec<u8> {
        let header: Vec<(u64, u64)> = self
            .records
            .iter()
            .map(|(turn, bytes)| (*turn, bytes.len() as u64))
            .collect();
        let bodies: Vec<&[u8]> = self.records.iter().map(|(_, b)| &b[..]).collect();
        pack(&header, &bodies)
    }
}

/// A turn lease as stored.
#[derive(Serialize, Deserialize)]
struct Lease {
    owner: String,
    until_ms: u64,
}

impl<B: KeyValueBackend> KeyValueStore<B> {
    /// The thread `id` and its revision.
    async fn thread(&self, id: &str) -> Result<(Thread, Option<u64>), ThreadError> {
        let entry = self
            .backend
            .read(Table::Threads, id)
            .await
            .map_err(|e| failed("read", id, e))?;
        match entry {
            Some(entry) => Ok((Thread::decode(id, &entry.value)?, Some(entry.revision))),
            None => Ok((Thread { records: vec![] }, None)),
        }
    }

    /// The lease on thread `id` and its revision.
    async fn lease(&self, id: &str) -> Result<(Option<Lease>, Option<u64>), ThreadError> {
        let entry = self
            .backend
            .read(Table::ThreadLeases, id)
            .await
            .map_err(|e| failed("read the lease of", id, e))?;
        match entry {
            Some(entry) => {
                let lease = serde_json::from_slice(&entry.value)
                    .map_err(|_| corrupt(id, "thread lease"))?;
                Ok((Some(lease), Some(entry.revision)))
            }
            None => Ok((None, None)),
        }
    }

    /// Writes (or, with `None`, removes) the lease on `id` if its revision is `revision`.
    async fn put_lease(
        &self,
        id: &str,
        revision: Option<u64>,
        lease: Option<&Lease>,
    ) -> Result<bool, ThreadError> {
        let value = lease.map(|l| serde_json::to_vec(l).expect("leases serialize"));
        Ok(self
            .backend
            .write(Table::ThreadLeases, id, revision, value)
            .await
            .map_err(|e| failed("lease", id, e))?)
    }

    fn record(&self, id: &str, seq: usize, bytes: &[u8]) -> Result<ThreadRecord, ThreadError> {
        check_size(id, bytes.len() as u64, self.max_bytes)?;
        ThreadRecord::decode(id, seq as u64, bytes)
    }
}

#[async_trait]
impl<B: KeyValueBackend> ThreadStore for KeyValueStore<B> {
    async fn head(&self, id: &str) -> Result<Option<ThreadHead>, ThreadError> {
        validate_thread_id(id)?;
        let (thread, _) = self.thread(id).await?;
        let Some((turn, bytes)) = thread.records.last() else {
            return Ok(None);
        };
        let version = thread.records.len();
        Ok(Some(ThreadHead {
            id: id.to_owned(),
            version: version as u64,
            turns: turn + 1,
            last: self.record(id, version - 1, bytes)?,
        }))
    }

    async fn read(&self, id: &str, turns: Range<u64>) -> Result<Vec<ThreadRecord>, ThreadError> {
        validate_thread_id(id)?;
        let (thread, _) = self.thread(id).await?;
        thread
            .records
            .iter()
            .enumerate()
            .filter(|(_, (turn, _))| turns.contains(turn))
            .map(|(seq, (_, bytes))| self.record(id, seq, bytes))
            .collect()
    }

    async fn append(
        &self,
        id: &str,
        expected_version: u64,
        mut record: ThreadRecord,
    ) -> Result<u64, ThreadError> {
        validate_thread_id(id)?;
        record.seq = expected_version;
        let bytes = record.encode();
        check_size(id, bytes.len() as u64, self.max_bytes)?;
        for _ in 0..MAX_RETRIES {
            let (mut thread, revision) = self.thread(id).await?;
            check_version(id, expected_version, thread.records.len() as u64)?;
            thread.records.push((record.turn, bytes.clone()));
            let written = self
                .backend
                .write(Table::Threads, id, revision, Some(thread.encode()))
                .await
                .map_err(|e| failed("append to", id, e))?;
            if written {
                return Ok(thread.records.len() as u64);
            }
        }
        Err(contended("append to the thread", id).into())
    }

    async fn list(&self) -> Result<Vec<String>, ThreadError> {
        let entries = self
            .backend
            .scan(Table::Threads)
            .await
            .map_err(|e| failed("list", "threads", e))?;
        let mut ids = Vec::new();
        for (id, entry) in entries {
            if !Thread::decode(&id, &entry.value)?.records.is_empty() {
                ids.push(id);
            }
        }
        ids.sort();
        Ok(ids)
    }

    async fn delete(&self, id: &str) -> Result<bool, ThreadError> {
        validate_thread_id(id)?;
        for _ in 0..MAX_RETRIES {
            let (thread, revision) = self.thread(id).await?;
            if revision.is_none() {
                return Ok(false);
            }
            let removed = self
                .backend
                .write(Table::Threads, id, revision, None)
                .await
                .map_err(|e| failed("delete", id, e))?;
            if removed {
                return Ok(!thread.records.is_empty());
            }
        }
        Err(contended("delete the thread", id).into())
    }

    async fn lease_thread(
        &self,
        id: &str,
        owner: &str,
        lease: Duration,
    ) -> Result<(), ThreadError> {
        validate_thread_id(id)?;
        for _ in 0..MAX_RETRIES {
            let (held, revision) = self.lease(id).await?;
            let now = now_ms();
            if held.is_some_and(|h| h.owner != owner && h.until_ms > now) {
                return Err(ThreadError::Busy { id: id.to_owned() });
            }
            let mine = Lease {
                owner: owner.to_owned(),
                until_ms: lease_end(now, lease),
            };
            if self.put_lease(id, revision, Some(&mine)).await? {
                return Ok(());
            }
        }
        Err(contended("lease the thread", id).into())
    }

    async fn renew_thread_lease(
        &self,
        id: &str,
        owner: &str,
        lease: Duration,
    ) -> Result<(), ThreadError> {
        validate_thread_id(id)?;
        for _ in 0..MAX_RETRIES {
            let (held, revision) = self.lease(id).await?;
            if !held.is_some_and(|h| h.owner == owner) {
                return Err(ThreadError::LeaseLost { id: id.to_owned() });
            }
            let mine = Lease {
                owner: owner.to_owned(),
                until_ms: lease_end(now_ms(), lease),
            };
            if self.put_lease(id, revision, Some(&mine)).await? {
                return Ok(());
            }
        }
        Err(contended("renew the thread's lease", id).into())
    }

    async fn release_thread_lease(&self, id: &str, owner: &str) -> Result<(), ThreadError> {
        validate_thread_id(id)?;
        for _ in 0..MAX_RETRIES {
            let (held, revision) = self.lease(id).await?;
            if !held.is_some_and(|h| h.owner == owner) {
                return Ok(());
            }
            if self.put_lease(id, revision, None).await? {
                return Ok(());
            }
        }
        Err(contended("release the thread's lease", id).into())
    }
}
