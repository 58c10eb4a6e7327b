//! [`KeyValueStore`] as a [`JournalStore`]: each run's journal is one entry of
//! [`Table::Journals`] (a header of each step's time, kind and length, then the steps'
//! bytes); an append checks the journal's length and writes with the backend's
//! compare-and-swap, so a writer whose run was taken over is refused.

use async_trait::async_trait;

use super::{contended, failed, pack, unpack, KeyValueBackend, KeyValueStore, Table, MAX_RETRIES};
use crate::store::journal::check_kind;
use crate::store::records::check_size;
use crate::store::{validate_id, JournalError, JournalStore, JournalSummary, StoredStep};

/// A journal's header: each step's time, kind and length.
type Header = Vec<(u64, String, u64)>;

fn decode(run: &str, value: &[u8]) -> Result<Vec<StoredStep>, JournalError> {
    let corrupt = |seq: u64| JournalError::Corrupt {
        run: run.to_owned(),
        seq,
        reason: "the stored journal does not read back".into(),
    };
    let (header, mut body) = unpack::<Header>(value).ok_or_else(|| corrupt(0))?;
    let mut steps = Vec::with_capacity(header.len());
    for (seq, (at_ms, kind, len)) in header.into_iter().enumerate() {
        let len = usize::try_from(len).map_err(|_| corrupt(seq as u64))?;
        if body.len() < len {
            return Err(corrupt(seq as u64));
        }
        let (bytes, rest) = body.split_at(len);
        body = rest;
        steps.push(StoredStep {
            seq: seq as u64,
            at_ms,
            kind,
            bytes: bytes.to_vec(),
        });
    }
    Ok(steps)
}

fn encode(steps: &[StoredStep]) -> Vec<u8> {
    let header: Header = steps
        .iter()
        .map(|s| (s.at_ms, s.kind.clone(), s.bytes.len() as u64))
        .collect();
    let bodies: Vec<&[u8]> = steps.iter().map(|s| &s.bytes[..]).collect();
    pack(&header, &bodies)
}

impl<B: KeyValueBackend> KeyValueStore<B> {
    /// `run`'s steps and the entry's revision (`None`: no journal).
    async fn journal(&self, run: &str) -> Result<(Vec<StoredStep>, Option<u64>), JournalError> {
        let entry = self
            .backend
            .read(Table::Journals, run)
            .await
            .map_err(|e| failed("read", run, e))?;
        match entry {
            Some(entry) => Ok((decode(run, &entry.value)?, Some(entry.revision))),
            None => Ok((Vec::new(), None)),
        }
    }

    /// Writes `steps` as `run`'s journal if its revision is still `revision`.
    async fn put_journal(
        &self,
        operation: &'static str,
        run: &str,
        revision: Option<u64>,
        steps: &[StoredStep],
    ) -> Result<bool, JournalError> {
        let value = (!steps.is_empty()).then(|| encode(steps));
        if value.is_none() && revision.is_none() {
            return Ok(true);
        }
        Ok(self
            .backend
            .write(Table::Journals, run, revision, value)
            .await
            .map_err(|e| failed(operation, run, e))?)
    }
}

#[async_trait]
impl<B: KeyValueBackend> JournalStore for KeyValueStore<B> {
    async fn append_steps(
        &self,
        run: &str,
        expected: u64,
        steps: Vec<StoredStep>,
    ) -> Result<u64, JournalError> {
        validate_id(run)?;
        for step in &steps {
            check_kind(&step.kind)?;
            check_size(run, step.bytes.len() as u64, self.max_bytes)?;
        }
        for _ in 0..MAX_RETRIES {
            let (mut journal, revision) = self.journal(run).await?;
            let found = journal.len() as u64;
            if found != expected {
                return Err(JournalError::Conflict {
                    run: run.to_owned(),
                    expected,
                    found,
                });
            }
            if steps.is_empty() {
                return Ok(found);
            }
            journal.extend(steps.iter().cloned());
            if self.put_journal("append", run, revision, &journal).await? {
                return Ok(journal.len() as u64);
            }
        }
        Err(contended("append to the journal", run).into())
    }

    async fn read_steps(&self, run: &str, from: u64) -> Result<Vec<StoredStep>, JournalError> {
        validate_id(run)?;
        let (journal, _) = self.journal(run).await?;
        let steps: Vec<StoredStep> = journal.into_iter().skip(from as usize).collect();
        for step in &steps {
            check_size(run, step.bytes.len() as u64, self.max_bytes)?;
        }
        Ok(steps)
    }

    async fn journal_len(&self, run: &str) -> Result<u64, JournalError> {
        validate_id(run)?;
        Ok(self.journal(run).await?.0.len() as u64)
    }

    async fn truncate_steps(&self, run: &str, len: u64) -> Result<(), JournalError> {
        validate_id(run)?;
        for _ in 0..MAX_RETRIES {
            let (mut journal, revision) = self.journal(run).await?;
            if journal.len() as u64 <= len {
                return Ok(());
            }
            journal.truncate(len as usize);
            if self
                .put_journal("truncate", run, revision, &journal)
                .await?
            {
                return Ok(());
            }
        }
        Err(contended("truncate the journal", run).into())
    }

    async fn delete_journal(&self, run: &str) -> Result<bool, JournalError> {
        validate_id(run)?;
        for _ in 0..MAX_RETRIES {
            let (journal, revision) = self.journal(run).await?;
            if revision.is_none() {
                return Ok(false);
            }
            if self.put_journal("delete", run, revision, &[]).await? {
                return Ok(!journal.is_empty());
            }
        }
        Err(contended("delete the journal", run).into())
    }

    async fn idle_journals(&self, at_ms: u64) -> Result<Vec<JournalSummary>, JournalError> {
        let entries = self
            .backend
            .scan(Table::Journals)
            .await
            .map_err(|e| failed("list", "journals", e))?;
        let mut idle = Vec::new();
        for (run, entry) in entries {
            let steps = decode(&run, &entry.value)?;
            if let Some(last) = steps.last().filter(|s| s.at_ms <= at_ms) {
                idle.push(JournalSummary {
                    last_at_ms: last.at_ms,
                    steps: steps.len() as u64,
                    run,
                });
            }
        }
        idle.sort_by(|a, b| a.run.cmp(&b.run));
        Ok(idle)
    }
}
