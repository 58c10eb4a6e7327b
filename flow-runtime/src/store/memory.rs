//! [`InMemoryStore`]: checkpoints and threads in maps, for tests and runs that need not survive
//! the process.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

use async_trait::async_trait;

use super::journal::check_kind;
use super::records::{check_size, Records};
use super::thread::{check_version, validate_thread_id};
use super::{
    from_millis, millis, validate_id, CheckpointMeta, CheckpointStore, Claim, Completion,
    PendingCheckpoint, SaveMode, StoreError, ThreadError, ThreadHead, ThreadRecord, ThreadStore,
    DEFAULT_MAX_CHECKPOINT_BYTES,
};
use super::{DeferredSteps, JournalError, JournalStore, JournalSummary, PendingStep, StoredStep};

/// A store in memory: for tests, and for runs that need not survive the process. Clones share
/// the same checkpoints and threads; claims are atomic across the tasks and threads of the
/// process.
///
/// It keeps checkpoints and threads in their encoded form (as a durable store would), so what
/// it hands back was decoded, never shared with the writer.
#[derive(Debug, Clone)]
pub struct InMemoryStore {
    runs: Arc<Mutex<HashMap<String, Run>>>,
    threads: Arc<Mutex<HashMap<String, Vec<StoredRecord>>>>,
    /// Each thread's turn lease: its owner and when it runs out (ms since the epoch).
    leases: Arc<Mutex<HashMap<String, (String, u64)>>>,
    /// Each run's journal.
    journals: Arc<Mutex<HashMap<String, Journal>>>,
    max_bytes: u64,
}

/// A thread record as the in-memory store keeps it: its turn (to find a turn without decoding)
/// and its JSON bytes.
#[derive(Debug)]
struct StoredRecord {
    turn: u64,
    bytes: Arc<[u8]>,
}

/// A run's journal as the in-memory store keeps it: its parts in order, each one step or a
/// range of a batch's steps, and how many steps they hold.
#[derive(Debug, Default)]
struct Journal {
    len: usize,
    parts: Vec<KeptStep>,
}

impl Journal {
    /// Appends `parts`, which hold `count` steps.
    fn extend(&mut self, count: usize, parts: impl IntoIterator<Item = KeptStep>) {
        self.parts.extend(parts);
        self.len += count;
    }

    /// Drops the steps from position `len` on.
    fn truncate(&mut self, len: usize) {
        if len >= self.len {
            return;
        }
        let mut seen = 0;
        let mut keep = 0;
        for part in &mut self.parts {
            if seen >= len {
                break;
            }
            let n = part.len();
            if seen + n > len {
                part.keep_first(len - seen);
            }
            seen += part.len();
            keep += 1;
        }
        self.parts.truncate(keep);
        self.len = len;
    }

    /// The parts that hold the steps from position `from` on (the first cut to start there).
    fn from(&self, from: usize) -> Vec<KeptStep> {
        let mut seen = 0;
        let mut out = Vec::new();
        for part in &self.parts {
            let n = part.len();
            if seen + n > from {
                let mut part = part.clone();
                if seen < from {
                    part.skip_first(from - seen);
                }
                out.push(part);
            }
            seen += n;
        }
        out
    }
}

/// A journal part as the in-memory store keeps it: a step encoded, or as handed over, or a
/// range of a batch handed over (those are encoded when read).
#[derive(Clone)]
enum KeptStep {
    Stored(StoredStep),
    Deferred(PendingStep),
    /// Steps `start..end` of a batch handed over at `at_ms`.
    Batch {
        at_ms: u64,
        steps: Arc<dyn DeferredSteps>,
        start: usize,
        end: usize,
    },
}

impl KeptStep {
    /// How many steps it holds.
    fn len(&self) -> usize {
        match self {
            KeptStep::Batch { start, end, .. } => end - start,
            _ => 1,
        }
    }

    /// When it was appended.
    fn at_ms(&self) -> u64 {
        match self {
            KeptStep::Stored(step) => step.at_ms,
            KeptStep::Deferred(pending) => pending.at_ms,
            KeptStep::Batch { at_ms, .. } => *at_ms,
        }
    }

    /// Keeps its first `n` steps (`n` is less than its length; a single step is never cut).
    fn keep_first(&mut self, n: usize) {
        if let KeptStep::Batch { start, end, .. } = self {
            *end = *start + n;
        }
    }

    /// Drops its first `n` steps (`n` is less than its length).
    fn skip_first(&mut self, n: usize) {
        if let KeptStep::Batch { start, .. } = self {
            *start += n;
        }
    }

    /// Its steps as a read returns them, numbered from `seq`, appended to `out`.
    fn read(
        &self,
        run: &str,
        seq: u64,
        max_bytes: u64,
        out: &mut Vec<StoredStep>,
    ) -> Result<(), JournalError> {
        let checked = |step: StoredStep| {
            check_kind(&step.kind)?;
            check_size(run, step.bytes.len() as u64, max_bytes)?;
            Ok::<_, JournalError>(step)
        };
        match self {
            KeptStep::Stored(step) => out.push(step.clone()),
            KeptStep::Deferred(pending) => out.push(checked(pending.stored(seq))?),
            KeptStep::Batch {
                at_ms,
                steps,
                start,
                end,
            } => {
                for (k, index) in (*start..*end).enumerate() {
                    out.push(checked(StoredStep {
                        seq: seq + k as u64,
                        at_ms: *at_ms,
                        kind: steps.kind(index).to_owned(),
                        bytes: steps.encode(index),
                    })?);
                }
            }
        }
        Ok(())
    }
}

impl std::fmt::Debug for KeptStep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KeptStep::Stored(step) => step.fmt(f),
            KeptStep::Deferred(pending) => pending.fmt(f),
            KeptStep::Batch {
                at_ms, start, end, ..
            } => f
                .debug_struct("BatchOfSteps")
                .field("at_ms", at_ms)
                .field("steps", &(end - start))
                .finish(),
        }
    }
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
            threads: Arc::default(),
            leases: Arc::default(),
            journals: Arc::default(),
            max_bytes: DEFAULT_MAX_CHECKPOINT_BYTES,
        }
    }
}

impl InMemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// The same store, refusing checkpoints and thread records over `limit` bytes
    /// ([`StoreError::TooLarge`]); the default is [`DEFAULT_MAX_CHECKPOINT_BYTES`].
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

    async fn claim_pending(&self, limit: usize, lease: Duration) -> Result<Vec<Claim>, StoreError> {
        let now = now_ms();
        let mut runs = self.runs();
        // Under the one lock: the claimable heads, oldest first, each claimed in turn.
        let mut waiting: Vec<(u64, String)> = runs
            .iter()
            .filter_map(|(id, run)| {
                let head = run.records.claimable_head(now)?;
                (head.size <= self.max_bytes).then(|| (head.created_ms, id.clone()))
            })
            .collect();
        waiting.sort();
        let mut claims = Vec::new();
        for (_, id) in waiting.into_iter().take(limit) {
            let run = runs.get_mut(&id).expect("listed under the same lock");
            let (version, attempt) = run.records.claim(&id, now, lease)?;
            let bytes = self.bytes_of(&id, run, version)?;
            claims.push(Claim {
                id,
                version,
                attempt,
                bytes,
            });
        }
        Ok(claims)
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
        check_size(id, bytes.len() as u64, self.max_bytes)?;
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
            .map(|(i, bytes)| {
                check_size(id, bytes.len() as u64, self.max_bytes)?;
                ThreadRecord::decode(id, (first + i) as u64, bytes)
            })
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
        check_size(id, bytes.len() as u64, self.max_bytes)?;
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

    async fn lease_thread(
        &self,
        id: &str,
        owner: &str,
        lease: Duration,
    ) -> Result<(), ThreadError> {
        validate_thread_id(id)?;
        let now = now_ms();
        let mut leases = self.leases.lock().expect("store lock");
        match leases.get(id) {
            Some((holder, until)) if holder != owner && *until > now => {
                Err(ThreadError::Busy { id: id.to_owned() })
            }
            _ => {
                leases.insert(id.to_owned(), (owner.to_owned(), lease_end(now, lease)));
                Ok(())
            }
        }
    }

    async fn renew_thread_lease(
        &self,
        id: &str,
        owner: &str,
        lease: Duration,
    ) -> Result<(), ThreadError> {
        validate_thread_id(id)?;
        let mut leases = self.leases.lock().expect("store lock");
        match leases.get_mut(id) {
            Some((holder, until)) if holder == owner => {
                *until = lease_end(now_ms(), lease);
                Ok(())
            }
            _ => Err(ThreadError::LeaseLost { id: id.to_owned() }),
        }
    }

    async fn release_thread_lease(&self, id: &str, owner: &str) -> Result<(), ThreadError> {
        validate_thread_id(id)?;
        let mut leases = self.leases.lock().expect("store lock");
        if leases.get(id).is_some_and(|(holder, _)| holder == owner) {
            leases.remove(id);
        }
        Ok(())
    }
}

/// When a lease of `lease` taken at `now` (ms) runs out.
pub(crate) fn lease_end(now: u64, lease: Duration) -> u64 {
    now.saturating_add(lease.as_millis().min(u64::MAX as u128) as u64)
}

impl InMemoryStore {
    /// Appends `steps` to `run`'s journal if it holds `expected` steps.
    fn append_kept(
        &self,
        run: &str,
        expected: u64,
        count: usize,
        steps: impl IntoIterator<Item = KeptStep>,
    ) -> Result<u64, JournalError> {
        let mut journals = self.journals.lock().unwrap_or_else(|p| p.into_inner());
        let journal = match journals.get_mut(run) {
            Some(journal) => journal,
            None => journals.entry(run.to_owned()).or_default(),
        };
        let found = journal.len as u64;
        if found != expected {
            return Err(JournalError::Conflict {
                run: run.to_owned(),
                expected,
                found,
            });
        }
        journal.extend(count, steps);
        Ok(journal.len as u64)
    }
}

#[async_trait]
impl JournalStore for InMemoryStore {
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
        let count = steps.len();
        let steps = steps.into_iter().enumerate().map(|(k, mut step)| {
            step.seq = expected + k as u64;
            KeptStep::Stored(step)
        });
        self.append_kept(run, expected, count, steps)
    }

    /// Kept as handed over: encoded (and its kind and size checked) when read.
    fn keeps_deferred(&self) -> bool {
        true
    }

    async fn append_deferred(
        &self,
        run: &str,
        expected: u64,
        steps: Vec<PendingStep>,
    ) -> Result<u64, JournalError> {
        validate_id(run)?;
        let count = steps.len();
        self.append_kept(
            run,
            expected,
            count,
            steps.into_iter().map(KeptStep::Deferred),
        )
    }

    /// Kept as handed over, the batch as one part: encoded (and its kind and size checked)
    /// when read.
    async fn append_deferred_batch(
        &self,
        run: &str,
        expected: u64,
        at_ms: u64,
        steps: Arc<dyn DeferredSteps>,
    ) -> Result<u64, JournalError> {
        validate_id(run)?;
        let count = steps.len();
        let part = (count > 0).then_some(KeptStep::Batch {
            at_ms,
            steps,
            start: 0,
            end: count,
        });
        self.append_kept(run, expected, count, part)
    }

    async fn read_steps(&self, run: &str, from: u64) -> Result<Vec<StoredStep>, JournalError> {
        validate_id(run)?;
        let kept: Vec<KeptStep> = {
            let journals = self.journals.lock().unwrap_or_else(|p| p.into_inner());
            journals
                .get(run)
                .map(|j| j.from(from.min(usize::MAX as u64) as usize))
                .unwrap_or_default()
        };
        // Deferred steps are encoded outside the lock.
        let mut steps = Vec::new();
        for part in &kept {
            let seq = from + steps.len() as u64;
            part.read(run, seq, self.max_bytes, &mut steps)?;
        }
        Ok(steps)
    }

    async fn journal_len(&self, run: &str) -> Result<u64, JournalError> {
        validate_id(run)?;
        let journals = self.journals.lock().unwrap_or_else(|p| p.into_inner());
        Ok(journals.get(run).map_or(0, |j| j.len as u64))
    }

    async fn truncate_steps(&self, run: &str, len: u64) -> Result<(), JournalError> {
        validate_id(run)?;
        let mut journals = self.journals.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(journal) = journals.get_mut(run) {
            journal.truncate(len.min(usize::MAX as u64) as usize);
        }
        Ok(())
    }

    async fn delete_journal(&self, run: &str) -> Result<bool, JournalError> {
        validate_id(run)?;
        let mut journals = self.journals.lock().unwrap_or_else(|p| p.into_inner());
        Ok(journals.remove(run).is_some_and(|j| j.len > 0))
    }

    async fn idle_journals(&self, at_ms: u64) -> Result<Vec<JournalSummary>, JournalError> {
        let journals = self.journals.lock().unwrap_or_else(|p| p.into_inner());
        let mut idle: Vec<JournalSummary> = journals
            .iter()
            .filter_map(|(run, journal)| {
                let last = journal.parts.last()?.at_ms();
                (journal.len > 0 && last <= at_ms).then(|| JournalSummary {
                    run: run.clone(),
                    steps: journal.len as u64,
                    last_at_ms: last,
                })
            })
            .collect();
        idle.sort_by(|a, b| a.run.cmp(&b.run));
        Ok(idle)
    }
}
