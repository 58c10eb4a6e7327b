//! [`InMemoryStore`]: checkpoints in a map, for tests and runs that need not survive the process.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

use async_trait::async_trait;

use super::records::{check_size, Records};
use super::{
    from_millis, millis, validate_id, CheckpointMeta, CheckpointStore, Claim, Completion,
    PendingCheckpoint, SaveMode, StoreError, DEFAULT_MAX_CHECKPOINT_BYTES,
};

/// A store in memory: for tests, and for runs that need not survive the process. Clones share
/// the same checkpoints; claims are atomic across the tasks and threads of the process.
#[derive(Debug, Clone)]
pub struct InMemoryStore {
    runs: Arc<Mutex<HashMap<String, Run>>>,
    max_bytes: u64,
}

#[derive(Debug, Default)]
struct Run {
    records: Records,
    /// The bytes of each record, by version.
    bytes: HashMap<u64, Arc<Vec<u8>>>,
}

impl Default for InMemoryStore {
    fn default() -> Self {
        InMemoryStore {
            runs: Arc::default(),
            max_bytes: DEFAULT_MAX_CHECKPOINT_BYTES,
        }
    }
}

impl InMemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// The same store, refusing checkpoints over `limit` bytes ([`StoreError::TooLarge`]);
    /// the default is [`DEFAULT_MAX_CHECKPOINT_BYTES`].
    pub fn max_checkpoint_bytes(mut self, limit: u64) -> Self {
        self.max_bytes = limit;
        self
    }

    fn runs(&self) -> MutexGuard<'_, HashMap<String, Run>> {
        // A panic while holding the lock cannot leave a half-made transition: every one is
        // checked before it changes anything.
        self.runs.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn bytes_of(&self, id: &str, run: &Run, version: u64) -> Result<Vec<u8>, StoreError> {
        let bytes = run
            .bytes
            .get(&version)
            .map(|b| b.to_vec())
            .unwrap_or_default();
        check_size(id, bytes.len() as u64, self.max_bytes)?;
        Ok(bytes)
    }
}

fn now_ms() -> u64 {
    millis(SystemTime::now())
}

#[async_trait]
impl CheckpointStore for InMemoryStore {
    async fn get(&self, id: &str) -> Result<Option<Vec<u8>>, StoreError> {
        validate_id(id)?;
        let runs = self.runs();
        let Some(run) = runs.get(id) else {
            return Ok(None);
        };
        match run.records.head() {
            Some(head) => self.bytes_of(id, run, head.version).map(Some),
            None => Ok(None),
        }
    }

    async fn save(&self, id: &str, bytes: Vec<u8>, mode: SaveMode) -> Result<u64, StoreError> {
        validate_id(id)?;
        check_size(id, bytes.len() as u64, self.max_bytes)?;
        let mut runs = self.runs();
        let run = runs.entry(id.to_owned()).or_default();
        let version = run.records.save(id, mode, now_ms(), bytes.len() as u64)?;
        run.bytes.insert(version, Arc::new(bytes));
        Ok(version)
    }

    async fn claim(&self, id: &str, lease: Duration) -> Result<Claim, StoreError> {
        validate_id(id)?;
        let mut runs = self.runs();
        let Some(run) = runs.get_mut(id) else {
            return Err(StoreError::NotFound { id: id.to_owned() });
        };
        if let Some(head) = run.records.waiting_head() {
            // Refuse an oversized record before claiming it.
            self.bytes_of(id, run, head.version)?;
        }
        let (version, attempt) = run.records.claim(id, now_ms(), lease)?;
        let bytes = self.bytes_of(id, run, version)?;
        Ok(Claim {
            id: id.to_owned(),
            version,
            attempt,
            bytes,
        })
    }

    async fn renew(&self, claim: &Claim, lease: Duration) -> Result<(), StoreError> {
        let mut runs = self.runs();
        match runs.get_mut(&claim.id) {
            Some(run) => run.records.renew(claim, now_ms(), lease),
            None => Err(lost(claim)),
        }
    }

    async fn release(&self, claim: &Claim) -> Result<(), StoreError> {
        if let Some(run) = self.runs().get_mut(&claim.id) {
            run.records.release(claim);
        }
        Ok(())
    }

    async fn complete(&self, claim: &Claim, completion: Completion) -> Result<u64, StoreError> {
        let (finished, bytes) = match completion {
            Completion::Finished(b) => (true, b),
            Completion::Interrupted(b) => (false, b),
        };
        check_size(&claim.id, bytes.len() as u64, self.max_bytes)?;
        let mut runs = self.runs();
        let run = runs.get_mut(&claim.id).ok_or_else(|| lost(claim))?;
        let version = run
            .records
            .complete(claim, finished, now_ms(), bytes.len() as u64)?;
        run.bytes.insert(version, Arc::new(bytes));
        Ok(version)
    }

    async fn history(&self, id: &str) -> Result<Vec<CheckpointMeta>, StoreError> {
        validate_id(id)?;
        Ok(self
            .runs()
            .get(id)
            .map(|run| run.records.meta(id))
            .unwrap_or_default())
    }

    async fn pending(&self, limit: usize) -> Result<Vec<PendingCheckpoint>, StoreError> {
        let runs = self.runs();
        let mut waiting: Vec<(&String, &Run, u64, u64)> = runs
            .iter()
            .filter_map(|(id, run)| {
                let head = run.records.waiting_head()?;
                Some((id, run, head.version, head.created_ms))
            })
            .collect();
        waiting.sort_by(|a, b| (a.3, a.0).cmp(&(b.3, b.0)));
        waiting
            .into_iter()
            .take(limit)
            .map(|(id, run, version, created)| {
                Ok(PendingCheckpoint {
                    id: id.clone(),
                    version,
                    created_at: from_millis(created),
                    bytes: self.bytes_of(id, run, version)?,
                })
            })
            .collect()
    }

    async fn purge_finished(&self, age: Duration) -> Result<usize, StoreError> {
        let cutoff = now_ms().saturating_sub(age.as_millis() as u64);
        let mut runs = self.runs();
        let before = runs.len();
        runs.retain(|_, run| !run.records.finished_by(cutoff));
        Ok(before - runs.len())
    }

    async fn delete(&self, id: &str) -> Result<(), StoreError> {
        validate_id(id)?;
        self.runs().remove(id);
        Ok(())
    }
}

pub(crate) fn lost(claim: &Claim) -> StoreError {
    StoreError::ClaimLost {
        id: claim.id.clone(),
        version: claim.version,
        attempt: claim.attempt,
    }
}
