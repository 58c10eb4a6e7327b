//! [`KeyValueStore`] as a [`CheckpointStore`]: each run is one value of
//! [`Table::Checkpoints`], its history ([`Records`], the state machine the File store shares)
//! and its head's bytes; every change is one atomic [`Keep::update`] of the run.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;

use super::keep::{Heads, Keep, Value};
use super::Front;
use super::{corrupt, lost, pack, unpack, InMemory, Table};
use crate::store::records::{check_size, Records};
use crate::store::rules::checkpoint_write;
use crate::store::{
    from_millis, validate_id, CheckpointMeta, CheckpointStore, Claim, Completion,
    PendingCheckpoint, SaveMode, StoreError,
};

/// One run as kept: its history, and the bytes of its head.
#[derive(Debug, Default)]
pub struct Run {
    pub(crate) records: Records,
    pub(crate) head: Head,
}

/// The bytes of a run's head: in hand, or in a file not read yet (the File store reads a
/// head only when a rule asks for its bytes).
#[derive(Debug, Clone)]
pub(crate) enum Head {
    Bytes(Arc<Vec<u8>>),
    /// A file written once (renamed into place), read within `limit` bytes.
    File {
        path: Arc<std::path::Path>,
        limit: u64,
    },
    /// Bytes left unread by a keeper that reads within a limit: the head holds `size` bytes,
    /// more than that limit.
    Unread {
        size: u64,
    },
}

impl Default for Head {
    fn default() -> Self {
        Head::Bytes(Arc::default())
    }
}

impl Head {
    /// The bytes of run `id`'s head, within `max` bytes; `None` if its file is gone (the run
    /// was deleted or purged since it was listed).
    fn bytes(&self, id: &str, max: u64) -> Result<Option<Arc<Vec<u8>>>, StoreError> {
        let bytes = match self {
            Head::Bytes(bytes) => Arc::clone(bytes),
            Head::File { path, limit } => match crate::store::file::read_head(id, path, *limit)? {
                Some(bytes) => Arc::new(bytes),
                None => return Ok(None),
            },
            Head::Unread { size } => {
                return Err(StoreError::TooLarge {
                    id: id.to_owned(),
                    size: *size,
                    limit: max,
                })
            }
        };
        check_size(id, bytes.len() as u64, max)?;
        Ok(Some(bytes))
    }

    /// The bytes of the head of run `id`, which must be there (read under the run's lock).
    fn present(&self, id: &str, max: u64) -> Result<Vec<u8>, StoreError> {
        let bytes = self.bytes(id, max)?.ok_or_else(|| StoreError::Other {
            id: id.to_owned(),
            message: "the file of the run's head is missing; the run's directory was changed \
                      by hand: delete the run"
                .into(),
        })?;
        Ok(Arc::unwrap_or_clone(bytes))
    }
}

impl Value for Run {
    const TABLE: Table = Table::Checkpoints;

    fn encode(&self) -> Vec<u8> {
        let head = match &self.head {
            Head::Bytes(bytes) => &bytes[..],
            Head::File { .. } | Head::Unread { .. } => {
                unreachable!("only the File and SQL stores read heads elsewhere")
            }
        };
        pack(&self.records, &[head])
    }

    fn decode(id: &str, bytes: &[u8]) -> Result<Run, StoreError> {
        let (records, head) = unpack::<Records>(bytes).ok_or_else(|| corrupt(id, "run"))?;
        Ok(Run {
            records,
            head: Head::Bytes(Arc::new(head.to_vec())),
        })
    }

    fn map(memory: &InMemory) -> &Mutex<HashMap<String, Run>> {
        &memory.runs
    }
}

#[async_trait]
impl<F: Front> CheckpointStore for F {
    async fn get(&self, id: &str) -> Result<Option<Vec<u8>>, StoreError> {
        validate_id(id)?;
        let max = self.front().max_bytes;
        self.front()
            .backend
            .view(id, |run: Option<&Run>| match run {
                Some(run) if run.records.head().is_some() => run.head.present(id, max).map(Some),
                _ => Ok(None),
            })
            .await
    }

    async fn save(&self, id: &str, bytes: Vec<u8>, mode: SaveMode) -> Result<u64, StoreError> {
        checkpoint_write(id, bytes.len(), self.front().max_bytes)?;
        let (size, bytes) = (bytes.len() as u64, Arc::new(bytes));
        let keep = &*self.front().backend;
        self.front()
            .backend
            .update("save", id, |run: &mut Option<Run>| {
                let run = run.get_or_insert_with(Run::default);
                let version = run.records.save(id, mode, keep.now_ms(), size)?;
                run.head = Head::Bytes(Arc::clone(&bytes));
                Ok((version, true))
            })
            .await
    }

    async fn claim(&self, id: &str, lease: Duration) -> Result<Claim, StoreError> {
        validate_id(id)?;
        let max = self.front().max_bytes;
        let keep = &*self.front().backend;
        self.front()
            .backend
            .update("claim", id, |run: &mut Option<Run>| {
                let Some(run) = run.as_mut() else {
                    return Err(StoreError::NotFound { id: id.to_owned() });
                };
                let (version, attempt) = run.records.claim_within(id, keep.now_ms(), lease, max)?;
                let bytes = run.head.present(id, max)?;
                Ok((
                    Claim {
                        id: id.to_owned(),
                        version,
                        attempt,
                        bytes,
                    },
                    true,
                ))
            })
            .await
    }

    async fn renew(&self, claim: &Claim, lease: Duration) -> Result<(), StoreError> {
        let keep = &*self.front().backend;
        self.front()
            .backend
            .update("renew", &claim.id, |run: &mut Option<Run>| {
                let run = run.as_mut().ok_or_else(|| lost(claim))?;
                run.records.renew(claim, keep.now_ms(), lease)?;
                Ok(((), true))
            })
            .await
    }

    async fn release(&self, claim: &Claim) -> Result<(), StoreError> {
        self.front()
            .backend
            .update("release", &claim.id, |run: &mut Option<Run>| {
                // A claim no longer held changes nothing.
                let released = run.as_mut().is_some_and(|r| r.records.release(claim));
                Ok(((), released))
            })
            .await
    }

    async fn complete(&self, claim: &Claim, completion: Completion) -> Result<u64, StoreError> {
        let (finished, bytes) = match completion {
            Completion::Finished(b) => (true, b),
            Completion::Interrupted(b) => (false, b),
        };
        checkpoint_write(&claim.id, bytes.len(), self.front().max_bytes)?;
        let (size, bytes) = (bytes.len() as u64, Arc::new(bytes));
        let keep = &*self.front().backend;
        self.front()
            .backend
            .update("complete", &claim.id, |run: &mut Option<Run>| {
                let run = run.as_mut().ok_or_else(|| lost(claim))?;
                let version = run.records.complete(claim, finished, keep.now_ms(), size)?;
                run.head = Head::Bytes(Arc::clone(&bytes));
                Ok((version, true))
            })
            .await
    }

    async fn history(&self, id: &str) -> Result<Vec<CheckpointMeta>, StoreError> {
        validate_id(id)?;
        self.front()
            .backend
            .view(id, |run: Option<&Run>| {
                Ok(run.map(|r| r.records.meta(id)).unwrap_or_default())
            })
            .await
    }

    async fn pending(&self, limit: usize) -> Result<Vec<PendingCheckpoint>, StoreError> {
        let mut waiting = self
            .front()
            .backend
            .heads(Heads::Waiting, limit, |id, run: &Run| {
                let head = run.records.waiting_head();
                Ok(head.map(|h| (h.created_ms, id.to_owned(), h.version, run.head.clone())))
            })
            .await?;
        waiting.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
        let mut pending = Vec::new();
        for (created, id, version, head) in waiting.into_iter().take(limit) {
            // A head whose file is gone was resumed or deleted since it was listed.
            if let Some(bytes) = head.bytes(&id, self.front().max_bytes)? {
                pending.push(PendingCheckpoint {
                    bytes: Arc::unwrap_or_clone(bytes),
                    id,
                    version,
                    created_at: from_millis(created),
                });
            }
        }
        Ok(pending)
    }

    async fn claim_pending(&self, limit: usize, lease: Duration) -> Result<Vec<Claim>, StoreError> {
        let now = self.front().backend.now_ms();
        let max = self.front().max_bytes;
        // The claimable heads, oldest first, each claimed in turn (one another worker took
        // meanwhile is passed over).
        let claimable = Heads::Claimable { now_ms: now, max };
        let pick = |id: &str, run: &Run| {
            let head = run.records.claimable_head(now).filter(|h| h.size <= max);
            Ok(head.map(|h| (h.created_ms, id.to_owned())))
        };
        let claim = |id: &str, run: &mut Option<Run>| {
            let Some(run) = run.as_mut() else {
                return Ok((None, false));
            };
            let claimed = run.records.claim_listed(id, now, lease, max)?;
            let claim = match claimed {
                Some((version, attempt)) => Some(Claim {
                    id: id.to_owned(),
                    version,
                    attempt,
                    bytes: run.head.present(id, max)?,
                }),
                None => None,
            };
            let changed = claim.is_some();
            Ok((claim, changed))
        };
        let backend = &self.front().backend;
        backend
            .update_heads("claim", claimable, limit, pick, claim)
            .await
    }

    async fn purge_finished(&self, age: Duration) -> Result<usize, StoreError> {
        let cutoff = self
            .front()
            .backend
            .now_ms()
            .saturating_sub(age.as_millis() as u64);
        let finished = self
            .front()
            .backend
            .heads(Heads::FinishedBy(cutoff), usize::MAX, |id, run: &Run| {
                Ok(run.records.finished_by(cutoff).then(|| id.to_owned()))
            })
            .await?;
        let mut purged = 0;
        for id in finished {
            // Only if still finished: a run continued since it was listed is kept.
            let removed = self
                .front()
                .backend
                .update("purge", &id, |run: &mut Option<Run>| {
                    let finished = run.as_ref().is_some_and(|r| r.records.finished_by(cutoff));
                    if finished {
                        *run = None;
                    }
                    Ok::<_, StoreError>((finished, finished))
                })
                .await?;
            purged += usize::from(removed);
        }
        Ok(purged)
    }

    async fn delete(&self, id: &str) -> Result<(), StoreError> {
        validate_id(id)?;
        self.front()
            .backend
            .update("delete", id, |run: &mut Option<Run>| {
                Ok(((), run.take().is_some()))
            })
            .await
    }
}
