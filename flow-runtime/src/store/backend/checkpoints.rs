//! [`KeyValueStore`] as a [`CheckpointStore`]: each run is one entry of
//! [`Table::Checkpoints`], its history ([`Records`], the state machine the in-memory and file
//! stores share) and its head's bytes; every change is a read, a transition, and a
//! compare-and-swap write, retried when another writer changed the run in between.

use std::time::Duration;

use async_trait::async_trait;

use super::{contended, corrupt, failed, pack, unpack, Entry, KeyValueBackend, KeyValueStore};
use super::{Table, MAX_RETRIES};
use crate::store::records::{check_size, Records};
use crate::store::{
    from_millis, now_ms, validate_id, CheckpointMeta, CheckpointStore, Claim, Completion,
    PendingCheckpoint, SaveMode, StoreError,
};

/// One run as stored: its history, and the bytes of its head.
struct Run {
    records: Records,
    head: Vec<u8>,
}

impl Run {
    fn decode(id: &str, entry: &Entry) -> Result<Run, StoreError> {
        let (records, head) = unpack::<Records>(&entry.value).ok_or_else(|| corrupt(id, "run"))?;
        Ok(Run {
            records,
            head: head.to_vec(),
        })
    }

    fn encode(&self) -> Vec<u8> {
        pack(&self.records, &[&self.head])
    }
}

/// What a transition of a run decided: write the run (`Some`) or leave it, and answer `T`.
type Step<T> = Result<(Option<Run>, T), StoreError>;

impl<B: KeyValueBackend> KeyValueStore<B> {
    /// The run under `id` and its revision.
    async fn run(&self, id: &str) -> Result<Option<(Run, u64)>, StoreError> {
        let entry = self
            .backend
            .read(Table::Checkpoints, id)
            .await
            .map_err(|e| failed("read", id, e))?;
        entry
            .map(|e| Ok((Run::decode(id, &e)?, e.revision)))
            .transpose()
    }

    /// Applies `transition` to the run under `id` (`None` if there is none) and writes what
    /// it decided, if nothing changed the run in between; else reads again and retries.
    async fn change<T>(
        &self,
        operation: &'static str,
        id: &str,
        mut transition: impl FnMut(Option<Run>) -> Step<T>,
    ) -> Result<T, StoreError> {
        for _ in 0..MAX_RETRIES {
            let (run, revision) = match self.run(id).await? {
                Some((run, revision)) => (Some(run), Some(revision)),
                None => (None, None),
            };
            let (write, answer) = transition(run)?;
            let Some(write) = write else {
                return Ok(answer);
            };
            let written = self
                .backend
                .write(Table::Checkpoints, id, revision, Some(write.encode()))
                .await
                .map_err(|e| failed(operation, id, e))?;
            if written {
                return Ok(answer);
            }
        }
        Err(contended(operation, id))
    }

    /// The bytes of `run`'s head, within the size limit.
    fn head_bytes(&self, id: &str, run: &Run) -> Result<Vec<u8>, StoreError> {
        check_size(id, run.head.len() as u64, self.max_bytes)?;
        Ok(run.head.clone())
    }
}

fn lost(claim: &Claim) -> StoreError {
    crate::store::memory::lost(claim)
}

#[async_trait]
impl<B: KeyValueBackend> CheckpointStore for KeyValueStore<B> {
    async fn get(&self, id: &str) -> Result<Option<Vec<u8>>, StoreError> {
        validate_id(id)?;
        match self.run(id).await? {
            Some((run, _)) if run.records.head().is_some() => self.head_bytes(id, &run).map(Some),
            _ => Ok(None),
        }
    }

    async fn save(&self, id: &str, bytes: Vec<u8>, mode: SaveMode) -> Result<u64, StoreError> {
        validate_id(id)?;
        check_size(id, bytes.len() as u64, self.max_bytes)?;
        self.change("save", id, |run| {
            let mut records = run.map(|r| r.records).unwrap_or_default();
            let version = records.save(id, mode, now_ms(), bytes.len() as u64)?;
            let head = bytes.clone();
            Ok((Some(Run { records, head }), version))
        })
        .await
    }

    async fn claim(&self, id: &str, lease: Duration) -> Result<Claim, StoreError> {
        validate_id(id)?;
        let max = self.max_bytes;
        self.change("claim", id, |run| {
            let Some(mut run) = run else {
                return Err(StoreError::NotFound { id: id.to_owned() });
            };
            if run.records.waiting_head().is_some() {
                // Refuse an oversized record before claiming it.
                check_size(id, run.head.len() as u64, max)?;
            }
            let (version, attempt) = run.records.claim(id, now_ms(), lease)?;
            let bytes = run.head.clone();
            let claim = Claim {
                id: id.to_owned(),
                version,
                attempt,
                bytes,
            };
            Ok((Some(run), claim))
        })
        .await
    }

    async fn renew(&self, claim: &Claim, lease: Duration) -> Result<(), StoreError> {
        self.change("renew", &claim.id, |run| {
            let mut run = run.ok_or_else(|| lost(claim))?;
            run.records.renew(claim, now_ms(), lease)?;
            Ok((Some(run), ()))
        })
        .await
    }

    async fn release(&self, claim: &Claim) -> Result<(), StoreError> {
        self.change("release", &claim.id, |run| {
            let Some(mut run) = run else {
                return Ok((None, ()));
            };
            // A claim no longer held changes nothing.
            let released = run.records.release(claim);
            Ok((released.then_some(run), ()))
        })
        .await
    }

    async fn complete(&self, claim: &Claim, completion: Completion) -> Result<u64, StoreError> {
        let (finished, bytes) = match completion {
            Completion::Finished(b) => (true, b),
            Completion::Interrupted(b) => (false, b),
        };
        check_size(&claim.id, bytes.len() as u64, self.max_bytes)?;
        self.change("complete", &claim.id, |run| {
            let mut run = run.ok_or_else(|| lost(claim))?;
            let version = run
                .records
                .complete(claim, finished, now_ms(), bytes.len() as u64)?;
            run.head = bytes.clone();
            Ok((Some(run), version))
        })
        .await
    }

    async fn history(&self, id: &str) -> Result<Vec<CheckpointMeta>, StoreError> {
        validate_id(id)?;
        Ok(self
            .run(id)
            .await?
            .map(|(run, _)| run.records.meta(id))
            .unwrap_or_default())
    }

    async fn pending(&self, limit: usize) -> Result<Vec<PendingCheckpoint>, StoreError> {
        let entries = self
            .backend
            .scan(Table::Checkpoints)
            .await
            .map_err(|e| failed("list", "pending", e))?;
        let mut waiting = Vec::new();
        for (id, entry) in entries {
            let run = Run::decode(&id, &entry)?;
            if let Some(head) = run.records.waiting_head() {
                waiting.push((head.created_ms, id, head.version, run));
            }
        }
        waiting.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
        waiting
            .into_iter()
            .take(limit)
            .map(|(created, id, version, run)| {
                Ok(PendingCheckpoint {
                    bytes: self.head_bytes(&id, &run)?,
                    id,
                    version,
                    created_at: from_millis(created),
                })
            })
            .collect()
    }

    async fn purge_finished(&self, age: Duration) -> Result<usize, StoreError> {
        let cutoff = now_ms().saturating_sub(age.as_millis() as u64);
        let entries = self
            .backend
            .scan(Table::Checkpoints)
            .await
            .map_err(|e| failed("list", "finished", e))?;
        let mut purged = 0;
        for (id, entry) in entries {
            if !Run::decode(&id, &entry)?.records.finished_by(cutoff) {
                continue;
            }
            // Only the run as read: one continued since then is kept.
            let removed = self
                .backend
                .write(Table::Checkpoints, &id, Some(entry.revision), None)
                .await
                .map_err(|e| failed("purge", &id, e))?;
            purged += usize::from(removed);
        }
        Ok(purged)
    }

    async fn delete(&self, id: &str) -> Result<(), StoreError> {
        validate_id(id)?;
        for _ in 0..MAX_RETRIES {
            let Some(entry) = self
                .backend
                .read(Table::Checkpoints, id)
                .await
                .map_err(|e| failed("read", id, e))?
            else {
                return Ok(());
            };
            let removed = self
                .backend
                .write(Table::Checkpoints, id, Some(entry.revision), None)
                .await
                .map_err(|e| failed("delete", id, e))?;
            if removed {
                return Ok(());
            }
        }
        Err(contended("delete", id))
    }
}
