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
use crate::store::records::{check_size, HeadIs, HeadSwap, Records};
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
pub enum Head {
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

/// What a rule reads of a run ([`Keep::view_run`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunPart {
    /// Its head (at least its last record), with the head's bytes.
    Head,
    /// Every record, without the head's bytes.
    Records,
}

impl Run {
    /// Applies `swap` to run `id`'s head if it is as the swap says: the claim the head is under
    /// after it (its bytes when the swap claims it), or `None` and nothing changed.
    pub(crate) fn swap(&mut self, id: &str, swap: &HeadSwap) -> Result<Option<Claim>, StoreError> {
        if !self.records.head().is_some_and(|h| swap.is.holds(h)) {
            return Ok(None);
        }
        let bytes = match swap.is {
            HeadIs::Claimable { max, .. } => self.head.present(id, max)?,
            HeadIs::Held { .. } => Vec::new(),
        };
        let Some((version, attempt)) = self.records.swap(swap) else {
            return Ok(None);
        };
        if let Some((_, child)) = &swap.child {
            self.head = Head::Bytes(Arc::clone(child));
        }
        Ok(Some(Claim {
            id: id.to_owned(),
            version,
            attempt,
            bytes,
        }))
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
        match self.front().backend.head_bytes(id).await? {
            Some(head) => head.present(id, self.front().max_bytes).map(Some),
            None => Ok(None),
        }
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
        let (keep, max) = (&*self.front().backend, self.front().max_bytes);
        // A claim refused is looked into; if the head changed meanwhile (a claim released,
        // a lease run out), it is tried again.
        for _ in 0..8 {
            let now = keep.now_ms();
            let swap = HeadSwap::claim(now, lease, max);
            if let Some(claim) = keep.swap_head("claim", id, &swap).await? {
                return Ok(claim);
            }
            keep.view_run(id, RunPart::Head, |run| match run {
                Some(run) => run.records.refuse_claim(id, now, max),
                None => Err(StoreError::NotFound { id: id.to_owned() }),
            })
            .await?;
        }
        Err(StoreError::Other {
            id: id.to_owned(),
            message: "the checkpoint kept changing while it was claimed; try again".into(),
        })
    }

    async fn renew(&self, claim: &Claim, lease: Duration) -> Result<(), StoreError> {
        let keep = &*self.front().backend;
        let swap = HeadSwap::renew(claim, keep.now_ms(), lease);
        match keep.swap_head("renew", &claim.id, &swap).await? {
            Some(_) => Ok(()),
            None => Err(lost(claim)),
        }
    }

    async fn release(&self, claim: &Claim) -> Result<(), StoreError> {
        // A claim no longer held changes nothing.
        let swap = HeadSwap::release(claim);
        self.front()
            .backend
            .swap_head("release", &claim.id, &swap)
            .await?;
        Ok(())
    }

    async fn complete(&self, claim: &Claim, completion: Completion) -> Result<u64, StoreError> {
        let (finished, bytes) = match completion {
            Completion::Finished(b) => (true, b),
            Completion::Interrupted(b) => (false, b),
        };
        checkpoint_write(&claim.id, bytes.len(), self.front().max_bytes)?;
        let keep = &*self.front().backend;
        let swap = HeadSwap::complete(claim, finished, keep.now_ms(), Arc::new(bytes));
        match keep.swap_head("complete", &claim.id, &swap).await? {
            Some(_) => Ok(claim.version + 1),
            None => Err(lost(claim)),
        }
    }

    async fn history(&self, id: &str) -> Result<Vec<CheckpointMeta>, StoreError> {
        validate_id(id)?;
        self.front()
            .backend
            .view_run(id, RunPart::Records, |run| {
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
        if limit == 0 {
            return Ok(Vec::new());
        }
        let keep = &*self.front().backend;
        let swap = HeadSwap::claim(keep.now_ms(), lease, self.front().max_bytes);
        keep.swap_heads("claim", &swap, limit).await
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
