//! The state machine of one run's history, applied by the key-value front (so by
//! [`InMemoryStore`](super::InMemoryStore), [`FileStore`](super::FileStore) under its lock
//! files, the SQL stores under a row lock, and every backend of your own under its
//! compare-and-swap).

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{from_millis, CheckpointMeta, CheckpointState, Claim, SaveMode, StoreError};

/// A record's state, as stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum State {
    Pending,
    Claimed,
    Resumed,
    Finished,
    Replaced,
}

/// One record's metadata.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Record {
    pub version: u64,
    pub parent: Option<u64>,
    pub state: State,
    pub created_ms: u64,
    /// When it left the pending state (resumed, finished or replaced).
    #[serde(default)]
    pub ended_ms: Option<u64>,
    #[serde(default)]
    pub attempt: u64,
    #[serde(default)]
    pub lease_until_ms: u64,
    pub size: u64,
}

/// A run's history, oldest first.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Records {
    pub records: Vec<Record>,
}

impl Records {
    pub fn head(&self) -> Option<&Record> {
        self.records.last()
    }

    fn head_mut(&mut self) -> Option<&mut Record> {
        self.records.last_mut()
    }

    /// Appends a record of `size` bytes as `mode` allows; returns its version.
    pub fn save(
        &mut self,
        id: &str,
        mode: SaveMode,
        now_ms: u64,
        size: u64,
    ) -> Result<u64, StoreError> {
        let (version, parent) = match self.head_mut() {
            None => (1, None),
            Some(head) => {
                let waiting = matches!(head.state, State::Pending | State::Claimed);
                match (waiting, mode) {
                    (true, SaveMode::Create) => {
                        return Err(StoreError::Pending {
                            id: id.to_owned(),
                            version: head.version,
                        })
                    }
                    (true, SaveMode::Replace) => {
                        head.state = State::Replaced;
                        head.ended_ms = Some(now_ms);
                        (head.version + 1, Some(head.version))
                    }
                    // A new run under the id of a finished one: a new lineage.
                    (false, _) => (head.version + 1, None),
                }
            }
        };
        self.records.push(Record {
            version,
            parent,
            state: State::Pending,
            created_ms: now_ms,
            ended_ms: None,
            attempt: 0,
            lease_until_ms: 0,
            size,
        });
        Ok(version)
    }

    /// Why a claim at `now_ms` of the run does not take its head (`Ok`: it would take it, so
    /// it changed since the claim was tried): none ([`StoreError::NotFound`]), a waiting head
    /// over `max` bytes ([`StoreError::TooLarge`]), a claim still held
    /// ([`StoreError::Claimed`]), or a head already resumed ([`StoreError::AlreadyResumed`]).
    pub fn refuse_claim(&self, id: &str, now_ms: u64, max: u64) -> Result<(), StoreError> {
        let Some(head) = self.head() else {
            return Err(StoreError::NotFound { id: id.to_owned() });
        };
        match head.state {
            State::Pending => check_size(id, head.size, max),
            State::Claimed if head.lease_until_ms <= now_ms => check_size(id, head.size, max),
            State::Claimed => {
                check_size(id, head.size, max)?;
                Err(StoreError::Claimed {
                    id: id.to_owned(),
                    attempt: head.attempt,
                    remaining: Duration::from_millis(head.lease_until_ms - now_ms),
                })
            }
            State::Resumed | State::Finished | State::Replaced => {
                Err(StoreError::AlreadyResumed { id: id.to_owned() })
            }
        }
    }

    /// Applies `swap` to the head if it is as the swap says: the head's version and attempt
    /// after it (`None`: it is not so, and nothing changed).
    pub fn swap(&mut self, swap: &HeadSwap) -> Option<(u64, u64)> {
        let head = self.records.last_mut().filter(|h| swap.is.holds(h))?;
        head.state = swap.state;
        head.ended_ms = swap.ended_ms.or(head.ended_ms);
        head.lease_until_ms = swap.lease_until_ms.unwrap_or(head.lease_until_ms);
        head.attempt += u64::from(swap.next_attempt);
        let claimed = (head.version, head.attempt);
        self.records
            .extend(swap.child.as_ref().map(|(c, _)| c.clone()));
        Some(claimed)
    }

    /// Whether the run finished at or before `cutoff_ms`.
    pub fn finished_by(&self, cutoff_ms: u64) -> bool {
        self.head().is_some_and(|h| {
            h.state == State::Finished && h.ended_ms.is_some_and(|t| t <= cutoff_ms)
        })
    }

    /// The pending (or claimed) head.
    pub fn waiting_head(&self) -> Option<&Record> {
        self.head()
            .filter(|h| matches!(h.state, State::Pending | State::Claimed))
    }

    pub fn meta(&self, id: &str) -> Vec<CheckpointMeta> {
        self.records.iter().map(|r| r.meta(id)).collect()
    }
}

/// Which head a [`HeadSwap`] changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HeadIs {
    /// The head a claim holds: this version, claimed, at this attempt.
    Held { version: u64, attempt: u64 },
    /// A head a claim at `now_ms` takes: pending, or claimed with its lease run out; of at
    /// most `max` bytes.
    Claimable { now_ms: u64, max: u64 },
}

impl HeadIs {
    /// Whether `head` is so.
    pub fn holds(&self, head: &Record) -> bool {
        match *self {
            HeadIs::Held { version, attempt } => {
                head.version == version && head.state == State::Claimed && head.attempt == attempt
            }
            HeadIs::Claimable { now_ms, max } => {
                head.size <= max
                    && match head.state {
                        State::Pending => true,
                        State::Claimed => head.lease_until_ms <= now_ms,
                        _ => false,
                    }
            }
        }
    }
}

/// A change of a run's head that the rules decide without reading the run (a claim, a
/// renewal, a release, a completion): which head it applies to, what that head becomes, and
/// the record added after it. A keeper writes it only if the head still is so (the SQL
/// stores: one conditional `UPDATE`, and the insert of the child), else changes nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeadSwap {
    pub(crate) is: HeadIs,
    pub(crate) state: State,
    /// When the head left its waiting state (`None`: as it was).
    pub(crate) ended_ms: Option<u64>,
    /// When its lease runs out (`None`: as it was).
    pub(crate) lease_until_ms: Option<u64>,
    /// Whether its attempt counts one more.
    pub(crate) next_attempt: bool,
    /// The record added after it, the run's new head, and its bytes.
    pub(crate) child: Option<(Record, Arc<Vec<u8>>)>,
}

impl HeadSwap {
    /// A claim at `now_ms` for `lease`, of a head of at most `max` bytes: the pending head,
    /// or a claimed one whose lease ran out (taken over), claimed at its next attempt.
    pub fn claim(now_ms: u64, lease: Duration, max: u64) -> HeadSwap {
        HeadSwap {
            is: HeadIs::Claimable { now_ms, max },
            state: State::Claimed,
            ended_ms: None,
            lease_until_ms: Some(lease_end(now_ms, lease)),
            next_attempt: true,
            child: None,
        }
    }

    /// `claim`'s lease renewed at `now_ms` for `lease`.
    pub fn renew(claim: &Claim, now_ms: u64, lease: Duration) -> HeadSwap {
        HeadSwap {
            lease_until_ms: Some(lease_end(now_ms, lease)),
            ..HeadSwap::held(claim, State::Claimed)
        }
    }

    /// `claim` given up: its head pending again, with no lease.
    pub fn release(claim: &Claim) -> HeadSwap {
        HeadSwap {
            lease_until_ms: Some(0),
            ..HeadSwap::held(claim, State::Pending)
        }
    }

    /// `claim` ended at `now_ms`: its head resumed, and a child holding `bytes` after it,
    /// finished or pending.
    pub fn complete(claim: &Claim, finished: bool, now_ms: u64, bytes: Arc<Vec<u8>>) -> HeadSwap {
        let size = bytes.len() as u64;
        HeadSwap {
            ended_ms: Some(now_ms),
            child: Some((
                Record {
                    version: claim.version + 1,
                    parent: Some(claim.version),
                    state: if finished {
                        State::Finished
                    } else {
                        State::Pending
                    },
                    created_ms: now_ms,
                    ended_ms: finished.then_some(now_ms),
                    attempt: 0,
                    lease_until_ms: 0,
                    size,
                },
                bytes,
            )),
            ..HeadSwap::held(claim, State::Resumed)
        }
    }

    /// The head `claim` holds, made `state`, the rest as it was.
    fn held(claim: &Claim, state: State) -> HeadSwap {
        HeadSwap {
            is: HeadIs::Held {
                version: claim.version,
                attempt: claim.attempt,
            },
            state,
            ended_ms: None,
            lease_until_ms: None,
            next_attempt: false,
            child: None,
        }
    }
}

/// The end of a lease of `lease` from `now_ms`.
fn lease_end(now_ms: u64, lease: Duration) -> u64 {
    now_ms.saturating_add(lease.as_millis() as u64)
}

impl Record {
    pub fn meta(&self, id: &str) -> CheckpointMeta {
        CheckpointMeta {
            id: id.to_owned(),
            version: self.version,
            parent: self.parent,
            state: state_of(self.state, self.attempt, self.lease_until_ms),
            created_at: from_millis(self.created_ms),
            size: self.size,
        }
    }
}

/// The public state of a stored one.
pub(crate) fn state_of(state: State, attempt: u64, lease_until_ms: u64) -> CheckpointState {
    match state {
        State::Pending => CheckpointState::Pending,
        State::Claimed => CheckpointState::Claimed {
            attempt,
            lease_until: from_millis(lease_until_ms),
        },
        State::Resumed => CheckpointState::Resumed,
        State::Finished => CheckpointState::Finished,
        State::Replaced => CheckpointState::Replaced,
    }
}

/// Refuses `size` bytes over `limit`.
pub(crate) fn check_size(id: &str, size: u64, limit: u64) -> Result<(), StoreError> {
    if size > limit {
        return Err(StoreError::TooLarge {
            id: id.to_owned(),
            size,
            limit,
        });
    }
    Ok(())
}
