//! [`KeyValueStore`] as a [`JournalStore`]: each run's journal is one value of
//! [`Table::Journals`], its steps in parts (each a range of one append's steps); an append
//! checks the journal's length and extends it in one atomic [`Keep::update`], so a writer
//! whose run was taken over is refused. Byte backends keep it as a header of each step's
//! time, kind and length, then the steps' bytes; the in-memory keeper keeps the parts as
//! handed over, so steps handed over unencoded are encoded only when read.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;

use super::keep::{Keep, Log, Value};
use super::Front;
use super::{corrupt, pack, unpack, InMemory, KeyValueStore, Table};
use crate::store::journal::check_kind;
use crate::store::records::check_size;
use crate::store::rules::{journal_append, journal_expected};
use crate::store::{
    validate_id, DeferredSteps, JournalError, JournalStore, JournalSummary, PendingStep,
    StoreError, StoredStep,
};

/// One append's steps, as handed over (one step handed over unencoded is kept without a
/// shared slice: the `Sync` path appends them one by one).
#[derive(Clone)]
pub enum Batch {
    Stored(Arc<[StoredStep]>),
    Pending(Arc<[PendingStep]>),
    OnePending(PendingStep),
    /// Steps handed over as one batch at `at_ms`.
    Deferred {
        at_ms: u64,
        steps: Arc<dyn DeferredSteps>,
    },
}

/// Steps `start..end` of a batch.
#[derive(Clone)]
pub struct Part {
    batch: Batch,
    start: usize,
    end: usize,
}

impl Part {
    fn whole(batch: Batch, len: usize) -> Part {
        Part {
            batch,
            start: 0,
            end: len,
        }
    }

    fn len(&self) -> usize {
        self.end - self.start
    }

    /// When its last step was appended.
    fn last_at_ms(&self) -> u64 {
        match &self.batch {
            Batch::Stored(steps) => steps[self.end - 1].at_ms,
            Batch::Pending(steps) => steps[self.end - 1].at_ms,
            Batch::OnePending(step) => step.at_ms,
            Batch::Deferred { at_ms, .. } => *at_ms,
        }
    }

    /// Its steps as a read returns them, numbered from `seq`, appended to `out`; a step
    /// handed over unencoded is encoded now, and its kind checked.
    fn read(&self, seq: u64, out: &mut Vec<StoredStep>) -> Result<(), JournalError> {
        for (k, index) in (self.start..self.end).enumerate() {
            let seq = seq + k as u64;
            let step = match &self.batch {
                Batch::Stored(steps) => StoredStep {
                    seq,
                    ..steps[index].clone()
                },
                Batch::Pending(steps) => steps[index].stored(seq),
                Batch::OnePending(step) => step.stored(seq),
                Batch::Deferred { at_ms, steps } => StoredStep {
                    seq,
                    at_ms: *at_ms,
                    kind: steps.kind(index).to_owned(),
                    bytes: steps.encode(index),
                },
            };
            if !matches!(self.batch, Batch::Stored(_)) {
                check_kind(&step.kind)?;
            }
            out.push(step);
        }
        Ok(())
    }
}

/// A run's journal as kept: its parts in order, and how many steps they hold.
#[derive(Clone, Default)]
pub struct Journal {
    len: usize,
    parts: Vec<Part>,
}

impl std::fmt::Debug for Journal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Journal").field("steps", &self.len).finish()
    }
}

impl Journal {
    /// Every step, as read.
    fn steps(&self) -> Result<Vec<StoredStep>, JournalError> {
        let mut out = Vec::with_capacity(self.len);
        for part in &self.parts {
            part.read(out.len() as u64, &mut out)?;
        }
        Ok(out)
    }
}

impl Log for Journal {
    type Entry = StoredStep;
    type Batch = Batch;
    type Part = Vec<Part>;
    type Error = JournalError;

    fn len(&self) -> usize {
        self.len
    }

    fn push(&mut self, batch: Batch, count: usize) {
        self.parts.push(Part::whole(batch, count));
        self.len += count;
    }

    /// The parts that hold the steps of `window` (the first and last cut to it), found from
    /// the end (reads are mostly of the last steps).
    fn part(&self, window: Range<usize>) -> Vec<Part> {
        let mut out = Vec::new();
        let mut end = self.len;
        for part in self.parts.iter().rev() {
            if end <= window.start {
                break;
            }
            let start = end - part.len();
            let (from, to) = (window.start.max(start), window.end.min(end));
            if from < to {
                let mut part = part.clone();
                part.start += from - start;
                part.end = part.start + (to - from);
                out.push(part);
            }
            end = start;
        }
        out.reverse();
        out
    }

    fn cut(&mut self, len: usize) {
        let mut seen = 0;
        self.parts.retain_mut(|part| {
            let keep = seen < len;
            if keep && seen + part.len() > len {
                part.end = part.start + (len - seen);
            }
            seen += part.len();
            keep
        });
        self.len = self.len.min(len);
    }

    /// Its steps encoded (the front hands a keeper that writes steps one at a time only
    /// stored steps: it keeps nothing deferred).
    fn entries(batch: &Batch) -> Vec<StoredStep> {
        let mut steps = Vec::new();
        let count = match batch {
            Batch::Stored(steps) => steps.len(),
            Batch::Pending(steps) => steps.len(),
            Batch::OnePending(_) => 1,
            Batch::Deferred { steps, .. } => steps.len(),
        };
        // Only a deferred step's kind can fail its check, and deferred steps reach a keeper
        // that writes them only once checked (`encoded`).
        let _ = Part::whole(batch.clone(), count).read(0, &mut steps);
        steps
    }

    fn part_of(steps: Vec<StoredStep>) -> Vec<Part> {
        let len = steps.len();
        (len > 0)
            .then(|| Part::whole(Batch::Stored(steps.into()), len))
            .into_iter()
            .collect()
    }
}

/// A journal's header as byte backends keep it: each step's time, kind and length.
type Header = Vec<(u64, String, u64)>;

impl Value for Journal {
    const TABLE: Table = Table::Journals;

    fn encode(&self) -> Vec<u8> {
        let steps = self.steps().expect("steps of byte backends are stored");
        let header: Header = steps
            .iter()
            .map(|s| (s.at_ms, s.kind.clone(), s.bytes.len() as u64))
            .collect();
        let bodies: Vec<&[u8]> = steps.iter().map(|s| &s.bytes[..]).collect();
        pack(&header, &bodies)
    }

    fn decode(run: &str, value: &[u8]) -> Result<Journal, StoreError> {
        let (header, mut body) = unpack::<Header>(value).ok_or_else(|| corrupt(run, "journal"))?;
        let mut steps = Vec::with_capacity(header.len());
        for (seq, (at_ms, kind, len)) in header.into_iter().enumerate() {
            let len = usize::try_from(len)
                .ok()
                .filter(|&len| len <= body.len())
                .ok_or_else(|| corrupt(run, "journal"))?;
            let (bytes, rest) = body.split_at(len);
            body = rest;
            steps.push(StoredStep {
                seq: seq as u64,
                at_ms,
                kind,
                bytes: bytes.to_vec(),
            });
        }
        let len = steps.len();
        let parts = (len > 0)
            .then(|| Part::whole(Batch::Stored(steps.into()), len))
            .into_iter()
            .collect();
        Ok(Journal { len, parts })
    }

    fn map(memory: &InMemory) -> &Mutex<HashMap<String, Journal>> {
        &memory.journals
    }
}

impl<B: Keep> KeyValueStore<B> {
    /// Appends `batch` (`count` steps) to `run`'s journal if it holds `expected` steps
    /// (`synced`: durable when it returns, else as the keeper's unsynced appends are).
    async fn append_batch(
        &self,
        run: &str,
        (expected, count): (u64, usize),
        batch: Batch,
        synced: bool,
    ) -> Result<u64, JournalError> {
        validate_id(run)?;
        let (keep, operation) = (&self.backend, "append to the journal of");
        let appended = if synced {
            keep.append::<Journal>(operation, run, expected, count, batch)
                .await?
        } else {
            keep.append_unsynced::<Journal>(operation, run, expected, count, batch)
                .await?
        };
        // Refused: `found` is not `expected`, so `journal_expected` reports the conflict.
        appended.or_else(|found| {
            journal_expected(run, expected, found)?;
            Ok(found)
        })
    }

    /// `steps` encoded now, for a keeper that keeps bytes.
    fn encoded(
        &self,
        run: &str,
        part: Part,
        expected: u64,
    ) -> Result<Vec<StoredStep>, JournalError> {
        let mut steps = Vec::with_capacity(part.len());
        part.read(expected, &mut steps)?;
        for step in &steps {
            check_size(run, step.bytes.len() as u64, self.max_bytes)?;
        }
        Ok(steps)
    }
}

#[async_trait]
impl<F: Front> JournalStore for F {
    async fn append_steps(
        &self,
        run: &str,
        expected: u64,
        steps: Vec<StoredStep>,
    ) -> Result<u64, JournalError> {
        journal_append(run, &steps, self.front().max_bytes)?;
        let count = (expected, steps.len());
        let batch = Batch::Stored(steps.into());
        self.front().append_batch(run, count, batch, true).await
    }

    async fn append_steps_unsynced(
        &self,
        run: &str,
        expected: u64,
        steps: Vec<StoredStep>,
    ) -> Result<u64, JournalError> {
        journal_append(run, &steps, self.front().max_bytes)?;
        let count = (expected, steps.len());
        let batch = Batch::Stored(steps.into());
        self.front().append_batch(run, count, batch, false).await
    }

    /// Kept as handed over by the in-memory keeper (encoded, and its kind and size checked,
    /// when read); encoded now for a byte backend.
    fn keeps_deferred(&self) -> bool {
        <F::Keep as Keep>::KEEPS_DEFERRED
    }

    async fn append_deferred(
        &self,
        run: &str,
        expected: u64,
        steps: Vec<PendingStep>,
    ) -> Result<u64, JournalError> {
        let count = steps.len();
        let batch = match <[PendingStep; 1]>::try_from(steps) {
            Ok([one]) => Batch::OnePending(one),
            Err(steps) => Batch::Pending(steps.into()),
        };
        let part = Part::whole(batch, count);
        if !<F::Keep as Keep>::KEEPS_DEFERRED {
            let steps = self.front().encoded(run, part, expected)?;
            return self.append_steps(run, expected, steps).await;
        }
        self.front()
            .append_batch(run, (expected, count), part.batch, true)
            .await
    }

    async fn append_deferred_batch(
        &self,
        run: &str,
        expected: u64,
        at_ms: u64,
        steps: Arc<dyn DeferredSteps>,
    ) -> Result<u64, JournalError> {
        let count = steps.len();
        let part = Part::whole(Batch::Deferred { at_ms, steps }, count);
        if !<F::Keep as Keep>::KEEPS_DEFERRED {
            let steps = self.front().encoded(run, part, expected)?;
            return self.append_steps(run, expected, steps).await;
        }
        self.front()
            .append_batch(run, (expected, count), part.batch, true)
            .await
    }

    async fn read_steps(&self, run: &str, from: u64) -> Result<Vec<StoredStep>, JournalError> {
        validate_id(run)?;
        let from = from.min(usize::MAX as u64) as usize;
        let (_, parts) = self
            .front()
            .backend
            .read::<Journal>(run, |len| from..len)
            .await?;
        // Steps handed over unencoded are encoded outside the lock.
        let mut steps = Vec::new();
        for part in &parts {
            part.read((from + steps.len()) as u64, &mut steps)?;
        }
        for step in &steps {
            check_size(run, step.bytes.len() as u64, self.front().max_bytes)?;
        }
        Ok(steps)
    }

    async fn journal_len(&self, run: &str) -> Result<u64, JournalError> {
        validate_id(run)?;
        let backend = &self.front().backend;
        let (len, _) = backend.read::<Journal>(run, |len| len..len).await?;
        Ok(len as u64)
    }

    async fn truncate_steps(&self, run: &str, len: u64) -> Result<(), JournalError> {
        validate_id(run)?;
        let len = len.min(usize::MAX as u64) as usize;
        let backend = &self.front().backend;
        Ok(backend
            .cut::<Journal>("truncate the journal of", run, len)
            .await?)
    }

    async fn delete_journal(&self, run: &str) -> Result<bool, JournalError> {
        validate_id(run)?;
        let backend = &self.front().backend;
        let had = backend
            .remove::<Journal>("delete the journal of", run)
            .await?;
        Ok(had > 0)
    }

    async fn idle_journals(&self, at_ms: u64) -> Result<Vec<JournalSummary>, JournalError> {
        let journals = self.front().backend.logs::<Journal>().await?;
        let mut idle: Vec<JournalSummary> = journals
            .into_iter()
            .filter_map(|(run, steps, last)| {
                let last_at_ms = last.last().map(Part::last_at_ms)?;
                (last_at_ms <= at_ms).then_some(JournalSummary {
                    run,
                    steps: steps as u64,
                    last_at_ms,
                })
            })
            .collect();
        idle.sort_by(|a, b| a.run.cmp(&b.run));
        Ok(idle)
    }
}
