//! Encryption at rest: [`SealedStore`] wraps any store and seals what it keeps (thread
//! records, checkpoints, journal steps) with [`SealingKeys`] (AES-256-GCM), so the files,
//! rows and backups of the store hold no conversation, prompt, tool argument or resume data in
//! the clear.

use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use base64::Engine as _;

use super::journal::{JournalError, JournalStore, JournalSummary, StoredStep};
use super::sealing::{SealError, SealingKeys};
use super::thread::{RecordEnd, RecordStart, ThreadError, ThreadHead, ThreadRecord, ThreadStore};
use super::{
    CheckpointMeta, CheckpointStore, Claim, Completion, PendingCheckpoint, SaveMode, StoreError,
};
use crate::RunPath;

/// A store whose thread records, checkpoints and journal steps are sealed at rest with
/// AES-256-GCM ([`SealingKeys`]): it seals what it writes with the current key and opens what
/// it reads with the key the bytes name. Wrap the store before giving it to the runner:
///
/// ```
/// # async fn demo(flow: agentweave_runtime::FlowAgent) -> Result<(), Box<dyn std::error::Error>> {
/// use agentweave_runtime::store::{FileStore, SealedStore, SealingKeys};
/// use agentweave_runtime::Runner;
/// # let key = [7u8; 32]; // 32 bytes from your secret manager
/// let keys = SealingKeys::new("2026-06", key)?;
/// let store = SealedStore::new(FileStore::new("state")?, keys);
/// let runner = Runner::builder(flow)
///     .stores(store.clone()) // threads and checkpoints
///     .journal_store(store) // journal steps
///     .build();
/// # let _ = runner; Ok(()) }
/// ```
///
/// What stays in the clear: ids (thread ids, checkpoint ids, run ids), a record's turn number,
/// position and time, a step's kind and position, a checkpoint's state and sizes: what the
/// store needs to order, lease and claim. Everything else is sealed, bound to its place (a
/// thread's record, a checkpoint id, a journal step), so sealed bytes moved elsewhere do not
/// open.
///
/// **Rotation.** Make a new key current and keep the old ones
/// ([`SealingKeys::with_old_key`]): old records open with their key, new writes use the new
/// one. **Failures** are typed ([`SealError`] inside [`StoreError::Sealed`], and
/// `ThreadError::Store`/`JournalError::Store` around it): an unknown key id, the wrong key or
/// altered bytes; nothing stored is changed, so the right key still opens it. Records written
/// before the store was sealed are read as they are (and new ones are sealed).
#[derive(Clone, Debug)]
pub struct SealedStore<S> {
    inner: S,
    keys: SealingKeys,
}

impl<S> SealedStore<S> {
    /// `inner`, sealing with `keys`.
    pub fn new(inner: S, keys: SealingKeys) -> Self {
        SealedStore { inner, keys }
    }

    /// The store it wraps (whose bytes are sealed).
    pub fn inner(&self) -> &S {
        &self.inner
    }

    /// Its keys.
    pub fn keys(&self) -> &SealingKeys {
        &self.keys
    }
}

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

fn record_place(id: &str, seq: u64) -> String {
    format!("record {seq} of thread '{id}'")
}

fn checkpoint_place(id: &str) -> String {
    format!("checkpoint '{id}'")
}

fn step_place(run: &str, seq: u64) -> String {
    format!("step {seq} of the journal of run '{run}'")
}

impl<S> SealedStore<S> {
    /// `record`, at position `seq` of thread `id`, as the inner store keeps it: placeholders
    /// and the sealed whole.
    fn seal_record(&self, id: &str, seq: u64, mut record: ThreadRecord) -> ThreadRecord {
        record.seq = seq;
        record.sealed = None;
        let plain = record.encode();
        let sealed = self.keys.seal(&record_place(id, seq), &plain);
        ThreadRecord {
            seq,
            turn: record.turn,
            at_ms: record.at_ms,
            start: match record.start {
                RecordStart::Turn { .. } => RecordStart::Turn { input: Vec::new() },
                RecordStart::Resume { checkpoint_id, .. } => RecordStart::Resume {
                    checkpoint_id,
                    targets: Default::default(),
                },
                RecordStart::Values { .. } => RecordStart::Values {
                    values: Default::default(),
                },
            },
            started_at: RunPath::default(),
            events: Vec::new(),
            end: match record.end {
                RecordEnd::Completed { .. } => RecordEnd::Completed {
                    answered_by: Arc::from(""),
                },
                RecordEnd::Interrupted { checkpoint_id, .. } => RecordEnd::Interrupted {
                    checkpoint_id,
                    interrupts: Vec::new(),
                },
            },
            by: None,
            values: None,
            run_id: None,
            sealed: Some(B64.encode(sealed)),
        }
    }

    /// The record the inner store read at `record.seq` of thread `id`, opened.
    fn open_record(&self, id: &str, record: ThreadRecord) -> Result<ThreadRecord, ThreadError> {
        let Some(sealed) = &record.sealed else {
            // Written before the store was sealed.
            return Ok(record);
        };
        let place = record_place(id, record.seq);
        let bytes = B64.decode(sealed).map_err(|e| {
            StoreError::from(SealError::Malformed {
                what: place.clone(),
                reason: format!("its sealed text is not base64: {e}"),
            })
        })?;
        let plain = self.keys.open(&place, &bytes).map_err(StoreError::from)?;
        let opened = ThreadRecord::decode(id, record.seq, &plain)?;
        if opened.turn != record.turn {
            return Err(ThreadError::Corrupt {
                id: id.to_owned(),
                seq: record.seq,
                reason: format!(
                    "its sealed content is of turn {}, the store files it under turn {}",
                    opened.turn, record.turn
                ),
            });
        }
        Ok(opened)
    }

    fn seal_checkpoint(&self, id: &str, bytes: &[u8]) -> Vec<u8> {
        self.keys.seal(&checkpoint_place(id), bytes)
    }

    /// Checkpoint bytes read under `id`, opened (bytes written before the store was sealed
    /// are given as they are).
    fn open_checkpoint(&self, id: &str, bytes: Vec<u8>) -> Result<Vec<u8>, StoreError> {
        if !SealingKeys::is_sealed(&bytes) {
            return Ok(bytes);
        }
        Ok(self.keys.open(&checkpoint_place(id), &bytes)?)
    }
}

#[async_trait]
impl<S: ThreadStore> ThreadStore for SealedStore<S> {
    async fn head(&self, id: &str) -> Result<Option<ThreadHead>, ThreadError> {
        let Some(mut head) = self.inner.head(id).await? else {
            return Ok(None);
        };
        head.last = self.open_record(id, head.last)?;
        Ok(Some(head))
    }

    async fn read(&self, id: &str, turns: Range<u64>) -> Result<Vec<ThreadRecord>, ThreadError> {
        self.inner
            .read(id, turns)
            .await?
            .into_iter()
            .map(|r| self.open_record(id, r))
            .collect()
    }

    async fn append(
        &self,
        id: &str,
        expected_version: u64,
        record: ThreadRecord,
    ) -> Result<u64, ThreadError> {
        let sealed = self.seal_record(id, expected_version, record);
        self.inner.append(id, expected_version, sealed).await
    }

    async fn list(&self) -> Result<Vec<String>, ThreadError> {
        self.inner.list().await
    }

    async fn delete(&self, id: &str) -> Result<bool, ThreadError> {
        self.inner.delete(id).await
    }

    async fn lease_thread(
        &self,
        id: &str,
        owner: &str,
        lease: Duration,
    ) -> Result<(), ThreadError> {
        self.inner.lease_thread(id, owner, lease).await
    }

    async fn renew_thread_lease(
        &self,
        id: &str,
        owner: &str,
        lease: Duration,
    ) -> Result<(), ThreadError> {
        self.inner.renew_thread_lease(id, owner, lease).await
    }

    async fn release_thread_lease(&self, id: &str, owner: &str) -> Result<(), ThreadError> {
        self.inner.release_thread_lease(id, owner).await
    }
}

#[async_trait]
impl<S: CheckpointStore> CheckpointStore for SealedStore<S> {
    async fn get(&self, id: &str) -> Result<Option<Vec<u8>>, StoreError> {
        match self.inner.get(id).await? {
            Some(bytes) => Ok(Some(self.open_checkpoint(id, bytes)?)),
            None => Ok(None),
        }
    }

    async fn save(&self, id: &str, bytes: Vec<u8>, mode: SaveMode) -> Result<u64, StoreError> {
        let sealed = self.seal_checkpoint(id, &bytes);
        self.inner.save(id, sealed, mode).await
    }

    async fn claim(&self, id: &str, lease: Duration) -> Result<Claim, StoreError> {
        let mut claim = self.inner.claim(id, lease).await?;
        match self.open_checkpoint(id, std::mem::take(&mut claim.bytes)) {
            Ok(bytes) => {
                claim.bytes = bytes;
                Ok(claim)
            }
            Err(e) => {
                // Nothing runs on a checkpoint that does not open: give the claim back.
                let _ = self.inner.release(&claim).await;
                Err(e)
            }
        }
    }

    async fn claim_pending(&self, limit: usize, lease: Duration) -> Result<Vec<Claim>, StoreError> {
        let mut opened = Vec::new();
        for mut claim in self.inner.claim_pending(limit, lease).await? {
            match self.open_checkpoint(&claim.id, std::mem::take(&mut claim.bytes)) {
                Ok(bytes) => {
                    claim.bytes = bytes;
                    opened.push(claim);
                }
                Err(e) => {
                    // As `claim` does: nothing runs on a checkpoint that does not open. It is
                    // given back and left out (the others of the batch are still resumed).
                    tracing::warn!(checkpoint = %claim.id, error = %e, "claimed checkpoint does not open");
                    let _ = self.inner.release(&claim).await;
                }
            }
        }
        Ok(opened)
    }

    async fn renew(&self, claim: &Claim, lease: Duration) -> Result<(), StoreError> {
        self.inner.renew(claim, lease).await
    }

    async fn release(&self, claim: &Claim) -> Result<(), StoreError> {
        self.inner.release(claim).await
    }

    async fn complete(&self, claim: &Claim, completion: Completion) -> Result<u64, StoreError> {
        let completion = match completion {
            Completion::Finished(b) => Completion::Finished(self.seal_checkpoint(&claim.id, &b)),
            Completion::Interrupted(b) => {
                Completion::Interrupted(self.seal_checkpoint(&claim.id, &b))
            }
        };
        self.inner.complete(claim, completion).await
    }

    async fn history(&self, id: &str) -> Result<Vec<CheckpointMeta>, StoreError> {
        self.inner.history(id).await
    }

    async fn pending(&self, limit: usize) -> Result<Vec<PendingCheckpoint>, StoreError> {
        self.inner
            .pending(limit)
            .await?
            .into_iter()
            .map(|mut p| {
                p.bytes = self.open_checkpoint(&p.id, std::mem::take(&mut p.bytes))?;
                Ok(p)
            })
            .collect()
    }

    async fn purge_finished(&self, age: Duration) -> Result<usize, StoreError> {
        self.inner.purge_finished(age).await
    }

    async fn delete(&self, id: &str) -> Result<(), StoreError> {
        self.inner.delete(id).await
    }
}

#[async_trait]
impl<S: JournalStore> JournalStore for SealedStore<S> {
    async fn append_steps(
        &self,
        run: &str,
        expected: u64,
        steps: Vec<StoredStep>,
    ) -> Result<u64, JournalError> {
        // The store numbers the steps `expected`, `expected + 1`, ...: each is sealed for its
        // place.
        let steps = steps
            .into_iter()
            .enumerate()
            .map(|(k, mut step)| {
                step.seq = expected + k as u64;
                step.bytes = self.keys.seal(&step_place(run, step.seq), &step.bytes);
                step
            })
            .collect();
        self.inner.append_steps(run, expected, steps).await
    }

    async fn read_steps(&self, run: &str, from: u64) -> Result<Vec<StoredStep>, JournalError> {
        self.inner
            .read_steps(run, from)
            .await?
            .into_iter()
            .map(|mut step| {
                if SealingKeys::is_sealed(&step.bytes) {
                    step.bytes = self
                        .keys
                        .open(&step_place(run, step.seq), &step.bytes)
                        .map_err(StoreError::from)?;
                }
                Ok(step)
            })
            .collect()
    }

    async fn journal_len(&self, run: &str) -> Result<u64, JournalError> {
        self.inner.journal_len(run).await
    }

    async fn truncate_steps(&self, run: &str, len: u64) -> Result<(), JournalError> {
        self.inner.truncate_steps(run, len).await
    }

    async fn delete_journal(&self, run: &str) -> Result<bool, JournalError> {
        self.inner.delete_journal(run).await
    }

    async fn idle_journals(&self, at_ms: u64) -> Result<Vec<JournalSummary>, JournalError> {
        self.inner.idle_journals(at_ms).await
    }
}

/// A thread store as a runner holds it: a record still sealed (the store was given without
/// its keys) is [`SealError::NoKeys`] rather than an empty record.
pub(crate) struct OpenedOnly<S>(pub(crate) S);

fn refuse_sealed(id: &str, record: &ThreadRecord) -> Result<(), ThreadError> {
    let Some(sealed) = &record.sealed else {
        return Ok(());
    };
    let bytes = B64.decode(sealed).unwrap_or_default();
    Err(StoreError::from(SealError::NoKeys {
        what: record_place(id, record.seq),
        key_id: SealingKeys::key_id_of(&bytes).unwrap_or("?").to_owned(),
    })
    .into())
}

#[async_trait]
impl<S: ThreadStore> ThreadStore for OpenedOnly<S> {
    async fn head(&self, id: &str) -> Result<Option<ThreadHead>, ThreadError> {
        let head = self.0.head(id).await?;
        if let Some(head) = &head {
            refuse_sealed(id, &head.last)?;
        }
        Ok(head)
    }

    async fn read(&self, id: &str, turns: Range<u64>) -> Result<Vec<ThreadRecord>, ThreadError> {
        let records = self.0.read(id, turns).await?;
        for record in &records {
            refuse_sealed(id, record)?;
        }
        Ok(records)
    }

    async fn append(
        &self,
        id: &str,
        expected_version: u64,
        record: ThreadRecord,
    ) -> Result<u64, ThreadError> {
        self.0.append(id, expected_version, record).await
    }

    async fn list(&self) -> Result<Vec<String>, ThreadError> {
        self.0.list().await
    }

    async fn delete(&self, id: &str) -> Result<bool, ThreadError> {
        self.0.delete(id).await
    }

    async fn lease_thread(
        &self,
        id: &str,
        owner: &str,
        lease: Duration,
    ) -> Result<(), ThreadError> {
        self.0.lease_thread(id, owner, lease).await
    }

    async fn renew_thread_lease(
        &self,
        id: &str,
        owner: &str,
        lease: Duration,
    ) -> Result<(), ThreadError> {
        self.0.renew_thread_lease(id, owner, lease).await
    }

    async fn release_thread_lease(&self, id: &str, owner: &str) -> Result<(), ThreadError> {
        self.0.release_thread_lease(id, owner).await
    }
}
