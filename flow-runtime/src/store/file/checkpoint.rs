//! The [`CheckpointStore`] contract of the [`FileStore`]: every change locks the run's
//! directory, reads its index, checks the transition and writes the record before the index.

use std::io;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

use super::disk::{io_error, now_ms, write_atomically};
use super::locks::{for_each_run, lock_run, remove_run, RUNS};
use super::FileStore;
use crate::store::memory::lost;
use crate::store::rules::checkpoint_write;
use crate::store::{
    from_millis, CheckpointMeta, CheckpointStore, Claim, Completion, PendingCheckpoint, SaveMode,
    StoreError,
};

#[async_trait]
impl CheckpointStore for FileStore {
    async fn get(&self, id: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let owned = id.to_owned();
        self.blocking("read", id, move |run_dir, limit| {
            let id = &owned[..];
            let Some(run) = lock_run(run_dir, false, false).map_err(io_error("read", id))? else {
                return Ok(None);
            };
            let records = run.read_index().map_err(io_error("read", id))?;
            match records.head() {
                Some(head) => run.read_record(id, head.version, limit).map(Some),
                None => Ok(None),
            }
        })
        .await
    }

    async fn save(&self, id: &str, bytes: Vec<u8>, mode: SaveMode) -> Result<u64, StoreError> {
        checkpoint_write(id, bytes.len(), self.max_bytes)?;
        let owned = id.to_owned();
        self.blocking("write", id, move |run_dir, _| {
            let id = &owned[..];
            let err = io_error("write", id);
            let run = lock_run(run_dir, true, true)
                .map_err(&err)?
                .expect("created");
            let mut records = run.read_index().map_err(&err)?;
            let version = records.save(id, mode, now_ms(), bytes.len() as u64)?;
            write_atomically(&run.dir, &format!("{version}.ckpt"), &bytes).map_err(&err)?;
            run.write_index(&records).map_err(&err)?;
            Ok(version)
        })
        .await
    }

    async fn claim(&self, id: &str, lease: Duration) -> Result<Claim, StoreError> {
        let owned = id.to_owned();
        self.blocking("claim", id, move |run_dir, limit| {
            let id = &owned[..];
            let err = io_error("claim", id);
            let Some(run) = lock_run(run_dir, false, true).map_err(&err)? else {
                return Err(StoreError::NotFound { id: id.to_owned() });
            };
            let mut records = run.read_index().map_err(&err)?;
            let (version, attempt) = records.claim_within(id, now_ms(), lease, limit)?;
            let bytes = run.read_record(id, version, limit)?;
            run.write_index(&records).map_err(&err)?;
            Ok(Claim {
                id: id.to_owned(),
                version,
                attempt,
                bytes,
            })
        })
        .await
    }

    async fn renew(&self, claim: &Claim, lease: Duration) -> Result<(), StoreError> {
        let claim = claim.clone();
        self.blocking("renew", &claim.id.clone(), move |run_dir, _| {
            let err = io_error("renew", &claim.id);
            let Some(run) = lock_run(run_dir, false, true).map_err(&err)? else {
                return Err(lost(&claim));
            };
            let mut records = run.read_index().map_err(&err)?;
            records.renew(&claim, now_ms(), lease)?;
            run.write_index(&records).map_err(&err)
        })
        .await
    }

    async fn release(&self, claim: &Claim) -> Result<(), StoreError> {
        let claim = claim.clone();
        self.blocking("release", &claim.id.clone(), move |run_dir, _| {
            let err = io_error("release", &claim.id);
            let Some(run) = lock_run(run_dir, false, true).map_err(&err)? else {
                return Ok(());
            };
            let mut records = run.read_index().map_err(&err)?;
            if records.release(&claim) {
                run.write_index(&records).map_err(&err)?;
            }
            Ok(())
        })
        .await
    }

    async fn complete(&self, claim: &Claim, completion: Completion) -> Result<u64, StoreError> {
        let (finished, bytes) = match completion {
            Completion::Finished(b) => (true, b),
            Completion::Interrupted(b) => (false, b),
        };
        checkpoint_write(&claim.id, bytes.len(), self.max_bytes)?;
        let claim = claim.clone();
        self.blocking("complete", &claim.id.clone(), move |run_dir, _| {
            let err = io_error("complete", &claim.id);
            let Some(run) = lock_run(run_dir, false, true).map_err(&err)? else {
                return Err(lost(&claim));
            };
            let mut records = run.read_index().map_err(&err)?;
            let version = records.complete(&claim, finished, now_ms(), bytes.len() as u64)?;
            write_atomically(&run.dir, &format!("{version}.ckpt"), &bytes).map_err(&err)?;
            run.write_index(&records).map_err(&err)?;
            Ok(version)
        })
        .await
    }

    async fn history(&self, id: &str) -> Result<Vec<CheckpointMeta>, StoreError> {
        let owned = id.to_owned();
        self.blocking("read", id, move |run_dir, _| {
            let id = &owned[..];
            let Some(run) = lock_run(run_dir, false, false).map_err(io_error("read", id))? else {
                return Ok(Vec::new());
            };
            Ok(run.read_index().map_err(io_error("read", id))?.meta(id))
        })
        .await
    }

    async fn pending(&self, limit: usize) -> Result<Vec<PendingCheckpoint>, StoreError> {
        let dir = Arc::new(self.dir.join(RUNS));
        let max = self.max_bytes;
        let shown = dir.display().to_string();
        let list = tokio::task::spawn_blocking(move || -> Result<_, StoreError> {
            let err = |e: io::Error| io_error("list", &shown)(e);
            let mut waiting = Vec::new();
            for_each_run(&dir, false, err, |name, run| {
                let records = run.read_index().map_err(err)?;
                if let Some(head) = records.waiting_head() {
                    waiting.push((head.created_ms, name, head.version));
                }
                Ok(())
            })?;
            waiting.sort();
            let mut out = Vec::new();
            for (created, id, version) in waiting.into_iter().take(limit) {
                let Some(run) = lock_run(&dir.join(&id), false, false).map_err(err)? else {
                    continue;
                };
                let bytes = match run.read_record(&id, version, max) {
                    Ok(bytes) => bytes,
                    // Resumed or deleted since it was listed.
                    Err(StoreError::Io { source, .. })
                        if source.kind() == io::ErrorKind::NotFound =>
                    {
                        continue
                    }
                    Err(e) => return Err(e),
                };
                out.push(PendingCheckpoint {
                    id,
                    version,
                    created_at: from_millis(created),
                    bytes,
                });
            }
            Ok(out)
        })
        .await;
        list.unwrap_or_else(|join| Err(io_error("list", "")(io::Error::other(join.to_string()))))
    }

    async fn claim_pending(&self, limit: usize, lease: Duration) -> Result<Vec<Claim>, StoreError> {
        let dir = Arc::new(self.dir.join(RUNS));
        let max = self.max_bytes;
        let shown = dir.display().to_string();
        let claimed = tokio::task::spawn_blocking(move || -> Result<_, StoreError> {
            let err = |e: io::Error| io_error("claim", &shown)(e);
            // The claimable heads, oldest first (read under each run's shared lock) ...
            let mut claimable = Vec::new();
            for_each_run(&dir, false, err, |name, run| {
                let records = run.read_index().map_err(err)?;
                if let Some(head) = records.claimable_head(now_ms()) {
                    if head.size <= max {
                        claimable.push((head.created_ms, name));
                    }
                }
                Ok(())
            })?;
            claimable.sort();
            // ... then each claimed under its exclusive lock, as `claim` does; one another
            // worker took meanwhile is skipped.
            let mut claims = Vec::new();
            for (_, id) in claimable {
                if claims.len() == limit {
                    break;
                }
                let err = io_error("claim", &id);
                let Some(run) = lock_run(&dir.join(&id), false, true).map_err(&err)? else {
                    continue;
                };
                let mut records = run.read_index().map_err(&err)?;
                let Some((version, attempt)) = records.claim_listed(&id, now_ms(), lease, max)?
                else {
                    continue;
                };
                let bytes = run.read_record(&id, version, max)?;
                run.write_index(&records).map_err(&err)?;
                drop(err);
                claims.push(Claim {
                    id,
                    version,
                    attempt,
                    bytes,
                });
            }
            Ok(claims)
        })
        .await;
        claimed
            .unwrap_or_else(|join| Err(io_error("claim", "")(io::Error::other(join.to_string()))))
    }

    async fn purge_finished(&self, age: Duration) -> Result<usize, StoreError> {
        let dir = Arc::new(self.dir.join(RUNS));
        let shown = dir.display().to_string();
        let purged = tokio::task::spawn_blocking(move || -> Result<usize, StoreError> {
            let err = |e: io::Error| io_error("purge", &shown)(e);
            let cutoff = now_ms().saturating_sub(age.as_millis() as u64);
            let mut n = 0;
            for_each_run(&dir, true, err, |_, run| {
                if run.read_index().map_err(err)?.finished_by(cutoff) {
                    remove_run(&run).map_err(err)?;
                    n += 1;
                }
                Ok(())
            })?;
            Ok(n)
        })
        .await;
        purged.unwrap_or_else(|join| Err(io_error("purge", "")(io::Error::other(join.to_string()))))
    }

    async fn delete(&self, id: &str) -> Result<(), StoreError> {
        let owned = id.to_owned();
        self.blocking("delete", id, move |run_dir, _| {
            let err = io_error("delete", &owned);
            match lock_run(run_dir, false, true).map_err(&err)? {
                Some(run) => remove_run(&run).map_err(&err),
                None => Ok(()),
            }
        })
        .await
    }
}
