//! Housekeeping of threads: retention of the step journal ([`Runner::purge`] with a
//! [`Retention`]), a time to live per thread ([`Runner::thread_ttl`]).
//!
//! A thread keeps one record per part of a turn (its history: what the next turns' agents
//! read, what [`Runner::thread_history`] lists), and, in the [`Async`](crate::Durability::Async)
//! and [`Sync`](crate::Durability::Sync) modes, each turn's journal: one step per recorded
//! event. The journal of a finished turn is needed by nothing but time travel inside that turn
//! (its record holds the same events), so retention prunes it: the steps of turns beyond the
//! last `keep_turns` of each thread, or whose turn ended more than `max_age` ago. With a
//! retention, the journal storage of a thread is bounded however long the conversation runs.
//!
//! A thread whose last record is older than the runner's TTL is **expired**: reads see no
//! thread ([`Runner::thread_records`] is empty, [`Runner::thread_history`] says it is
//! unknown), a new message starts a new thread under its id, and [`Runner::purge`] deletes it
//! with every turn's journal and its waiting checkpoint ([`Runner::delete_thread`]).

use std::time::Duration;

use super::journal::turn_journal_id;
use super::runs::Runner;
use super::turn_mark::{nested_journal_id, resume_mark_id, turn_mark_id};
use crate::store::JournalError;
use crate::store::{validate_thread_id, RecordEnd, ThreadError};

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
    /// Turn journals removed.
    pub journals_removed: usize,
    /// Journal steps removed (those of the removed journals).
    pub steps_removed: u64,
    /// Finished checkpoint histories removed.
    pub checkpoints_removed: usize,
    /// Recovery marks and nested-step journals of pruned turns removed (those a recorded
    /// part leaves are removed when it is recorded; these are leftovers).
    pub marks_removed: usize,
}

impl Runner {
    /// Threads expire this long after their last record (see the guide's "Durable execution" chapter):
    /// expired threads are gone for reads, a new message starts them afresh, and
    /// [`purge`](Runner::purge) deletes them. Default: never.
    pub fn thread_ttl(mut self, ttl: Duration) -> Self {
        self.threads.ttl = Some(ttl);
        self
    }

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

    /// Applies `retention` to every thread of the store, and deletes expired threads (see the
    /// guide's "Durable execution" chapter). Only finished turns are pruned: an interrupted turn's journal is
    /// kept until the turn ends. A thread with a turn running is skipped (for its expiry) and
    /// its finished turns are still pruned. Returns what was removed.
    pub async fn purge(&self, retention: Retention) -> Result<PurgeReport, ThreadError> {
        let store = self.thread_store_or_err()?;
        let mut report = PurgeReport::default();
        for thread in store.list().await? {
            validate_thread_id(&thread)?;
            let Some(head) = store.head(&thread).await? else {
                continue;
            };
            if self
                .threads
                .ttl
                .is_some_and(|ttl| expired(head.last.at_ms, ttl))
            {
                match self.delete_thread(&thread).await {
                    Ok(_) => report.threads_deleted += 1,
                    // A turn started on it meanwhile: it is alive again.
                    Err(ThreadError::Busy { .. }) => {}
                    Err(e) => return Err(e),
                }
                continue;
            }
            let Some(journal) = &self.journal else {
                continue;
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
                let records = store.read(&thread, 0..finished).await?;
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
                let id = turn_journal_id(&thread, turn);
                let steps = journal.journal_len(&id).await?;
                if steps > 0 && journal.delete_journal(&id).await? {
                    report.journals_removed += 1;
                    report.steps_removed += steps;
                    // Newly pruned: its leftover marks go too.
                    let records = store.read(&thread, turn..turn + 1).await?;
                    report.marks_removed +=
                        self.drop_turn_marks(&thread, turn, &records, None).await?;
                }
            }
        }
        if let (Some(age), Some(checkpoints)) = (retention.max_age, &self.store) {
            report.checkpoints_removed = checkpoints.purge_finished(age).await?;
        }
        Ok(report)
    }
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
