//! The state machine of one run's history, applied by the key-value front (so by
//! [`InMemoryStore`](super::InMemoryStore), [`FileStore`](super::FileStore) under its lock
//! files, the SQL stores under a row lock, and every backend of your own under its
//! compare-and-swap).

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

    /// Claims the pending head (or takes over an expired claim); returns (version, attempt).
    pub fn claim(
        &mut self,
        id: &str,
        now_ms: u64,
        lease: Duration,
    ) -> Result<(u64, u64), StoreError> {
        let Some(head) = self.head_mut() else {
            return Err(StoreError::NotFound { id: id.to_owned() });
        };
        match head.state {
            State::Pending => {}
            State::Claimed if head.lease_until_ms <= now_ms => {}
            State::Claimed => {
                return Err(StoreError::Claimed {
                    id: id.to_owned(),
                    attempt: head.attempt,
                    remaining: Duration::from_millis(head.lease_until_ms - now_ms),
                })
            }
            State::Resumed | State::Finished | State::Replaced => {
                return Err(StoreError::AlreadyResumed { id: id.to_owned() })
            }
        }
        head.state = State::Claimed;
        head.attempt += 1;
        head.lease_until_ms = now_ms.saturating_add(lease.as_millis() as u64);
        Ok((head.version, head.attempt))
    }

    /// [`claim`](Self::claim), refusing a waiting head over `max` bytes before claiming it
    /// ([`StoreError::TooLarge`]).
    pub fn claim_within(
        &mut self,
        id: &str,
        now_ms: u64,
        lease: Duration,
        max: u64,
    ) -> Result<(u64, u64), StoreError> {
        if let Some(head) = self.waiting_head() {
            check_size(id, head.size, max)?;
        }
        self.claim(id, now_ms, lease)
    }

    /// Claims the head if a claim at `now_ms` would take it and it is within `max` bytes
    /// (what a batch claim does to each run it listed: one taken meanwhile is passed over).
    pub fn claim_listed(
        &mut self,
        id: &str,
        now_ms: u64,
        lease: Duration,
        max: u64,
    ) -> Result<Option<(u64, u64)>, StoreError> {
        if !self.claimable_head(now_ms).is_some_and(|h| h.size <= max) {
            return Ok(None);
        }
        self.claim(id, now_ms, lease).map(Some)
    }

    /// The head, if `claim` still holds it.
    fn held(&mut self, claim: &Claim) -> Result<&mut Record, StoreError> {
        match self.records.last_mut() {
            Some(head)
                if head.version == claim.version
                    && head.state == State::Claimed
                    && head.attempt == claim.attempt =>
            {
                Ok(head)
            }
            _ => Err(StoreError::ClaimLost {
                id: claim.id.clone(),
                version: claim.version,
                attempt: claim.attempt,
            }),
        }
    }

    pub fn renew(&mut self, claim: &Claim, now_ms: u64, lease: Duration) -> Result<(), StoreError> {
        let head = self.held(claim)?;
        head.lease_until_ms = now_ms.saturating_add(lease.as_millis() as u64);
        Ok(())
    }

    /// Makes the claimed head pending again; `false` if the claim was not held.
    pub fn release(&mut self, claim: &Claim) -> bool {
        match self.held(claim) {
            Ok(head) => {
                head.state = State::Pending;
                head.lease_until_ms = 0;
                true
            }
            Err(_) => false,
        }
    }

    /// Ends the claim: a finished head, or a resumed head and a pending child of `size`
    /// bytes. Returns the new record's version.
    pub fn complete(
        &mut self,
        claim: &Claim,
        finished: bool,
        now_ms: u64,
        size: u64,
    ) -> Result<u64, StoreError> {
        let head = self.held(claim)?;
        head.state = State::Resumed;
        head.ended_ms = Some(now_ms);
        let version = head.version + 1;
        self.records.push(Record {
            version,
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
        });
        Ok(version)
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

    /// The head, if a claim at `now_ms` would take it: pending, or claimed with its lease
    /// run out.
    pub fn claimable_head(&self, now_ms: u64) -> Option<&Record> {
        self.head().filter(|h| match h.state {
            State::Pending => true,
            State::Claimed => h.lease_until_ms <= now_ms,
            _ => false,
        })
    }

    pub fn meta(&self, id: &str) -> Vec<CheckpointMeta> {
        self.records.iter().map(|r| r.meta(id)).collect()
    }
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
