//! Housekeeping of threads: retention of the step journal ([`Runner::purge`] with a
//! [`Retention`]), a time to live per thread ([`RunnerBuilder::thread_ttl`](crate::RunnerBuilder::thread_ttl)).
//!
//! A thread keeps one record per part of a turn (its history: what the next turns' agents
//! read, what [`ThreadHandle::history`](crate::ThreadHandle::history) lists), and, in the [`Async`](crate::Durability::Async)
//! and [`Sync`](crate::Durability::Sync) modes, each turn's journal: one step per recorded
//! event. The journal of a finished turn is needed by nothing but time travel inside that turn
//! (its record holds the same events), so retention prunes it: the steps of turns beyond the
//! last `keep_turns` of each thread, or whose turn ended more than `max_age` ago. With a
//! retention, the journal storage of a thread is bounded however long the conversation runs.
//!
//! A thread whose last record is older than the runner's TTL is **expired**: reads see no
//! thread ([`ThreadHandle::records`](crate::ThreadHandle::records) is empty, [`ThreadHandle::history`](crate::ThreadHandle::history) says it is
//! unknown), a new message starts a new thread under its id, and [`Runner::purge`] deletes it
//! with every turn's journal and its waiting checkpoint ([`ThreadHandle::delete`](crate::ThreadHandle::delete)).
//!
//! A run outside a thread ([`RunRequest::checkpoint`](crate::RunRequest::checkpoint) and its resumes) keeps its journal
//! (what [`Runner::journal`] reads) after it ends; [`Runner::purge`] with a
//! [`max_age`](Retention::max_age) removes it once its last step is that old and no
//! checkpoint of the run waits or is being resumed. Without a purge, a store keeps every run's
//! journal (an [`InMemoryStore`](crate::InMemoryStore) in memory).

use std::collections::HashSet;
use std::time::Duration;

use super::journal::turn_journal_id;
use super::runs::Runner;
use super::turn_mark::{nested_journal_id, resume_mark_id, turn_mark_id};
use crate::store::JournalError;
use crate::store::{validate_thread_id, CheckpointState, RecordEnd, ThreadError, ThreadStore};

/// What [`Runner::purge`] keeps of each thread's journal (and of finished checkpoints).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Retention {
    /// Keep the journals of each thread's last `keep_turns` turns; prune the older ones.
    pub keep_turns: Option<u64>,
    /// Prune the journals of turns that ended more than this long ago (and the histories of
    /// checkpoints that finished that long ago).
    pub max_age: Option<Duration>,
}

impl Retention {
    /// Keeps the journals of each thread's last `turns` turns.
    pub fn keep_turns(turns: u64) -> Self {
        Retention {
            keep_turns: Some(turns),
            max_age: None,
        }
    }

    /// Keeps the journals of turns that ended less than `age` ago.
    pub fn max_age(age: Duration) -> Self {
        Retention {
            keep_turns: None,
            max_age: Some(age),
        }
    }
}

/// What a [`Runner::purge`] removed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PurgeReport {
    /// Expired threads deleted.
    pub threads_deleted: usize,
    /// Journals of threads' turns removed.
    pub journals_removed: usize,
    /// Journal steps removed (those of the removed journals, of turns and of runs).
    pub steps_removed: u64,
    /// Journals of runs removed (not of a thread's turns: [`RunRequest::checkpoint`](crate::RunRequest::checkpoint) and
    /// its resumes), pruned by [`Retention::max_age`].
    pub run_journals_removed: usize,
    /// Finished checkpoint histories removed.
    pub checkpoints_removed: usize,
    /// Recovery marks and nested-step journals of pruned turns removed (those a recorded
    /// part leaves are removed when it is recorded; these are leftovers).
    pub marks_removed: usize,
}

impl Runner {
    /// Whether `thread` has expired (its last record is at least the TTL old).
    pub(crate) async fn thread_expired(&self, thread: &str) -> Result<bool, ThreadError> {
        let Some(ttl) = self.threads.ttl else {
            return Ok(false);
        };
        let Some(head) = self.thread_store_or_err()?.head(thread).await? else {
            return Ok(false);
        };
        Ok(expired(head.last.at_ms, ttl))
    }

    /// Applies `retention` to every thread of the store, deletes expired threads, and prunes
    /// the journals of runs that ended long ago (see the guide's "Durable execution"
    /// chapter). Returns what was removed.
    ///
    /// - **Threads** (with a thread store): only finished turns are pruned; an interrupted
    ///   turn's journal is kept until the turn ends. A thread with a turn running is skipped
    ///   (for its expiry) and its finished turns are still pruned.
    /// - **Runs** ([`RunRequest::checkpoint`](crate::RunRequest::checkpoint) and their resumes), with a
    ///   [`max_age`](Retention::max_age): a run's journal is removed once its last step is at
    ///   least that old and no checkpoint of the run waits for a resume or is being resumed;
    ///   the histories of checkpoints that finished that long ago go too. A run still going
    ///   appends a step at each event, so choose an age longer than any run's longest pause
    ///   between two steps (a slow tool call, a model that takes its time). `keep_turns`
    ///   counts a thread's turns and prunes no run's journal.
    ///
    /// Errors with [`ThreadError::NoStore`] if the runner has no store at all.
    pub async fn purge(&self, retention: Retention) -> Result<PurgeReport, ThreadError> {
        let thread_store = self.thread_store_or_err().ok();
        if thread_store.is_none() && self.journal.is_none() && self.store.is_none() {
            return Err(ThreadError::NoStore);
        }
        let mut report = PurgeReport::default();
        let mut threads = HashSet::new();
        if let Some(store) = thread_store {
            for thread in store.list().await? {
                validate_thread_id(&thread)?;
                threads.insert(thread.clone());
                self.purge_thread(store.as_ref(), &thread, retention, &mut report)
                    .await?;
            }
        }
        if let Some(age) = retention.max_age {
            self.purge_run_journals(age, &threads, &mut report).await?;
            if let Some(checkpoints) = &self.store {
                report.checkpoints_removed = checkpoints.purge_finished(age).await?;
            }
        }
        Ok(report)
    }

    /// Applies `retention` to `thread`: deletes it if it expired, else prunes the journals of
    /// its finished turns that `retention` does not keep.
    async fn purge_thread(
        &self,
        store: &dyn ThreadStore,
        thread: &str,
        retention: Retention,
        report: &mut PurgeReport,
    ) -> Result<(), ThreadError> {
        let Some(head) = store.head(thread).await? else {
            return Ok(());
        };
        if self
            .threads
            .ttl
            .is_some_and(|ttl| expired(head.last.at_ms, ttl))
        {
            return match self.delete_thread(thread).await {
                Ok(_) => {
                    report.threads_deleted += 1;
                    Ok(())
                }
                // A turn started on it meanwhile: it is alive again.
                Err(ThreadError::Busy { .. }) => Ok(()),
                Err(e) => Err(e),
            };
        }
        let Some(journal) = &self.journal else {
            return Ok(());
        };
        // The last turn is finished unless it waits on an interrupt.
        let finished = match head.last.end {
            RecordEnd::Completed { .. } => head.turns,
            RecordEnd::Interrupted { .. } => head.turns.saturating_sub(1),
        };
        let by_count = retention
            .keep_turns
            .map_or(0, |k| head.turns.saturating_sub(k))
            .min(finished);
        let mut prune_below = by_count;
        if let Some(age) = retention.max_age {
            // The oldest turns whose last record is that old (records are in time order).
            let records = store.read(thread, 0..finished).await?;
            let mut upto = 0;
            while upto < finished {
                let last = records.iter().rev().find(|r| r.turn == upto);
                if !last.is_some_and(|r| expired(r.at_ms, age)) {
                    break;
                }
                upto += 1;
            }
            prune_below = prune_below.max(upto);
        }
        for turn in 0..prune_below {
            let id = turn_journal_id(thread, turn);
            let steps = journal.journal_len(&id).await?;
            if steps > 0 && journal.delete_journal(&id).await? {
                report.journals_removed += 1;
                report.steps_removed += steps;
                // Newly pruned: its leftover marks go too.
                let records = store.read(thread, turn..turn + 1).await?;
                report.marks_removed += self.drop_turn_marks(thread, turn, &records, None).await?;
            }
        }
        Ok(())
    }

    /// Removes the journals of runs whose last step is at least `age` old, but those of
    /// `threads`' turns (their retention is the thread's) and those of runs with a checkpoint
    /// waiting or being resumed.
    async fn purge_run_journals(
        &self,
        age: Duration,
        threads: &HashSet<String>,
        report: &mut PurgeReport,
    ) -> Result<(), ThreadError> {
        let Some(journal) = &self.journal else {
            return Ok(());
        };
        let before = crate::store::now_ms().saturating_sub(age.as_millis() as u64);
        for idle in journal.idle_journals(before).await? {
            if thread_owned(&idle.run, threads) {
                continue;
            }
            if let Some(checkpoints) = &self.store {
                let history = checkpoints.history(&idle.run).await?;
                let live = history.iter().any(|meta| {
                    matches!(
                        meta.state,
                        CheckpointState::Pending | CheckpointState::Claimed { .. }
                    )
                });
                if live {
                    continue;
                }
            }
            if journal.delete_journal(&idle.run).await? {
                report.run_journals_removed += 1;
                report.steps_removed += idle.steps;
            }
        }
        Ok(())
    }
}

/// Whether the journal `run` belongs to a turn of one of `threads` (`THREAD.turn-N`, with its
/// marks and nested journals: `THREAD.turn-N.start`, ...).
fn thread_owned(run: &str, threads: &HashSet<String>) -> bool {
    run.match_indices(".turn-")
        .any(|(at, _)| threads.contains(&run[..at]))
}

/// Whether something written at `at_ms` is at least `age` old now.
fn expired(at_ms: u64, age: Duration) -> bool {
    let now = crate::store::now_ms();
    now.saturating_sub(at_ms) >= age.as_millis() as u64
}

impl Runner {
    /// Deletes what only the recovery of the part of turn `turn` of `thread` that started at
    /// `version` needed, once the part is recorded: its start mark (a new turn's, or a
    /// resume's) and the journal of its nested steps. A failure is logged: the leftovers are
    /// removed with the thread, or by `purge`.
    pub(super) async fn drop_part_marks(
        &self,
        thread: &str,
        turn: u64,
        version: u64,
        resumed: bool,
    ) {
        let Some(store) = &self.journal else {
            return;
        };
        let mark = match resumed {
            true => resume_mark_id(thread, turn),
            false => turn_mark_id(thread, turn),
        };
        let nested = nested_journal_id(&turn_journal_id(thread, turn), version);
        for id in [mark, nested] {
            // A read first: most parts have no nested steps, and a read costs less than a
            // (synced) delete.
            let dropped = match store.journal_len(&id).await {
                Ok(0) => Ok(false),
                Ok(_) => store.delete_journal(&id).await,
                Err(e) => Err(e),
            };
            if let Err(e) = dropped {
                tracing::warn!(journal = %id, error = %e, "could not delete a recorded part's mark");
            }
        }
    }

    /// Deletes every mark and nested journal of turn `turn` of `thread`, whose records are
    /// `records` (the parts' versions are their `seq`), and those an unrecorded attempt at
    /// `next_version` may have left; returns how many existed.
    pub(super) async fn drop_turn_marks(
        &self,
        thread: &str,
        turn: u64,
        records: &[crate::store::ThreadRecord],
        next_version: Option<u64>,
    ) -> Result<usize, JournalError> {
        let Some(store) = &self.journal else {
            return Ok(0);
        };
        let journal = turn_journal_id(thread, turn);
        let mut ids = vec![turn_mark_id(thread, turn), resume_mark_id(thread, turn)];
        let versions = records
            .iter()
            .filter(|r| r.turn == turn)
            .map(|r| r.seq)
            .chain(next_version);
        ids.extend(versions.map(|v| nested_journal_id(&journal, v)));
        let mut removed = 0;
        for id in ids {
            if store.delete_journal(&id).await? {
                removed += 1;
            }
        }
        Ok(removed)
    }
}
