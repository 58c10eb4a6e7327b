//! [`InMemoryStore`]: checkpoints and threads in maps, for tests and runs that need not survive
//! the process.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;

use super::thread::{check_version, validate_thread_id};
use super::{
    validate_id, CheckpointStore, StoreError, ThreadError, ThreadHead, ThreadRecord, ThreadStore,
};

/// A store in memory: for tests, and for runs that need not survive the process.
///
/// It keeps checkpoints and threads in their encoded form (as a durable store would), so what
/// it hands back was decoded, never shared with the writer.
#[derive(Debug, Default, Clone)]
pub struct InMemoryStore {
    map: Arc<Mutex<HashMap<String, Vec<u8>>>>,
    threads: Arc<Mutex<HashMap<String, Vec<StoredRecord>>>>,
}

/// A thread record as the in-memory store keeps it: its turn (to find a turn without decoding)
/// and its JSON bytes.
#[derive(Debug)]
struct StoredRecord {
    turn: u64,
    bytes: Arc<[u8]>,
}

impl InMemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }
}

#[async_trait]
impl CheckpointStore for InMemoryStore {
    async fn get(&self, id: &str) -> Result<Option<Vec<u8>>, StoreError> {
        Ok(self.map.lock().expect("store lock").get(id).cloned())
    }

    async fn set(&self, id: &str, bytes: Vec<u8>) -> Result<(), StoreError> {
        validate_id(id)?;
        self.map
            .lock()
            .expect("store lock")
            .insert(id.to_owned(), bytes);
        Ok(())
    }

    async fn delete(&self, id: &str) -> Result<(), StoreError> {
        self.map.lock().expect("store lock").remove(id);
        Ok(())
    }
}

#[async_trait]
impl ThreadStore for InMemoryStore {
    async fn head(&self, id: &str) -> Result<Option<ThreadHead>, ThreadError> {
        validate_thread_id(id)?;
        let (version, turn, bytes) = {
            let threads = self.threads.lock().expect("store lock");
            let Some(last) = threads.get(id).and_then(|r| r.last()) else {
                return Ok(None);
            };
            let version = threads[id].len() as u64;
            (version, last.turn, Arc::clone(&last.bytes))
        };
        let last = ThreadRecord::decode(id, version - 1, &bytes)?;
        Ok(Some(ThreadHead {
            id: id.to_owned(),
            version,
            turns: turn + 1,
            last,
        }))
    }

    async fn read(&self, id: &str, turns: Range<u64>) -> Result<Vec<ThreadRecord>, ThreadError> {
        validate_thread_id(id)?;
        let (first, picked): (usize, Vec<Arc<[u8]>>) = {
            let threads = self.threads.lock().expect("store lock");
            let Some(records) = threads.get(id) else {
                return Ok(Vec::new());
            };
            // Records are in turn order: find the window by binary search.
            let from = records.partition_point(|r| r.turn < turns.start);
            let to = records.partition_point(|r| r.turn < turns.end);
            let picked = records[from..to.max(from)]
                .iter()
                .map(|r| Arc::clone(&r.bytes))
                .collect();
            (from, picked)
        };
        picked
            .iter()
            .enumerate()
            .map(|(i, bytes)| ThreadRecord::decode(id, (first + i) as u64, bytes))
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
        let bytes: Arc<[u8]> = record.encode().into();
        let mut threads = self.threads.lock().expect("store lock");
        let records = threads.entry(id.to_owned()).or_default();
        check_version(id, expected_version, records.len() as u64)?;
        records.push(StoredRecord {
            turn: record.turn,
            bytes,
        });
        Ok(records.len() as u64)
    }

    async fn list(&self) -> Result<Vec<String>, ThreadError> {
        let threads = self.threads.lock().expect("store lock");
        let mut ids: Vec<String> = threads
            .iter()
            .filter(|(_, r)| !r.is_empty())
            .map(|(id, _)| id.clone())
            .collect();
        ids.sort();
        Ok(ids)
    }

    async fn delete(&self, id: &str) -> Result<bool, ThreadError> {
        validate_thread_id(id)?;
        let removed = self.threads.lock().expect("store lock").remove(id);
        Ok(removed.is_some_and(|r| !r.is_empty()))
    }
}
