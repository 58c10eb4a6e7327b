//! A thread's values: session values that carry across the turns of a thread, and
//! [`ThreadHandle::update_state`](crate::ThreadHandle::update_state), which changes them from outside a turn.
//!
//! **The inheriting rule.** Each record of a thread stores the thread's values after it
//! ([`ThreadRecord::values`]): the session values its part of the turn ended with, without the
//! framework's own keys (those starting with [`FRAMEWORK_KEY_PREFIX`]: token usage, transfer
//! payloads, task results, which belong to one run). A new turn's session starts with the
//! values of the thread's last record; what its agents set, change or remove is what the
//! turn's record stores. A resumed turn's session is its checkpoint's (the values at the
//! interrupt), so a continuation inherits them too; a fork copies the records, values
//! included (a fork inside a turn starts the turn again from the values before it).
//!
//! [`ThreadHandle::update_state`](crate::ThreadHandle::update_state) appends a **values step**: a record with no events that merges
//! the given values into the thread's (a `null` removes a key). It belongs to the turn before
//! it and keeps that turn's end, so routing is unchanged; it shows in
//! [`ThreadHandle::history`](crate::ThreadHandle::history) as a [`ThreadStepKind::Values`](super::ThreadStepKind) step and a
//! fork at it carries the updated values.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::runs::Runner;
use super::time_travel::TimeTravelError;
use crate::session::Session;
use crate::store::{validate_thread_id, RecordEnd, RecordStart, ThreadRecord};

/// The prefix of the session value keys that belong to one run (the framework's own): they
/// are not thread values, are not carried to the next turn, and
/// [`ThreadHandle::update_state`](crate::ThreadHandle::update_state) refuses them.
pub const FRAMEWORK_KEY_PREFIX: &str = "agentflow.";

/// A thread's values and version after [`ThreadHandle::update_state`](crate::ThreadHandle::update_state).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThreadState {
    /// The thread.
    pub thread: String,
    /// The thread's number of records after the update.
    pub version: u64,
    /// The thread's values after the update, sorted by key.
    pub values: Map<String, Value>,
}

impl Runner {
    /// The thread values a session holds: its values without the framework's own keys,
    /// sorted; `None` when there are none.
    pub(super) fn thread_values_of(session: &Session) -> Option<Map<String, Value>> {
        Self::thread_values_in(&session.values())
    }

    /// The thread values among session `values` (see [`thread_values_of`](Self::thread_values_of)).
    pub(super) fn thread_values_in(
        values: &std::collections::HashMap<String, Value>,
    ) -> Option<Map<String, Value>> {
        let values: Map<String, Value> = sorted(
            values
                .iter()
                .filter(|(k, _)| !k.starts_with(FRAMEWORK_KEY_PREFIX))
                .map(|(k, v)| (k.clone(), v.clone())),
        );
        (!values.is_empty()).then_some(values)
    }

    /// A new session holding the thread values of `record` (the record before a turn), if
    /// any.
    pub(super) fn session_after(record: Option<&ThreadRecord>) -> Arc<Session> {
        let session = Session::new();
        if let Some(values) = record.and_then(|r| r.values.as_ref()) {
            session.add_values(values.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
        session
    }

    /// The values of thread `thread`: what its next turn's session starts with (see the
    /// guide's "Durable execution" chapter). [`TimeTravelError::UnknownThread`] for a thread
    /// with no records.
    pub(crate) async fn thread_values(
        &self,
        thread: &str,
    ) -> Result<Map<String, Value>, TimeTravelError> {
        validate_thread_id(thread)?;
        let head = match self.thread_expired(thread).await? {
            true => None,
            false => self.thread_store_or_err()?.head(thread).await?,
        };
        let head = head.ok_or_else(|| TimeTravelError::UnknownThread {
            thread: thread.to_owned(),
        })?;
        Ok(head.last.values.unwrap_or_default())
    }

    /// Changes the values of thread `thread` from outside a turn (LangGraph's
    /// `update_state`): merges `values` into the thread's (a `null` value removes its key)
    /// and appends the change as a values step, which [`ThreadHandle::history`](crate::ThreadHandle::history) lists and a
    /// fork carries. The thread's next turn starts with the result. The original records are
    /// not changed: fork at an earlier step to go back.
    ///
    /// Errors, with nothing written: an invalid or unknown thread, a key starting with
    /// [`FRAMEWORK_KEY_PREFIX`] ([`TimeTravelError::ReservedKey`]), a thread that waits for
    /// an interrupt's answer or at a fork point ([`TimeTravelError::AwaitingResume`]: answer
    /// it first, or fork at the step before it), a thread with a turn running
    /// ([`ThreadError::Busy`](crate::store::ThreadError::Busy)).
    pub(crate) async fn update_state(
        &self,
        thread: &str,
        values: Map<String, Value>,
    ) -> Result<ThreadState, TimeTravelError> {
        self.update_state_of(thread, values, None).await
    }

    /// [`ThreadHandle::update_state`](crate::ThreadHandle::update_state), recording `by` (the caller, as a service names
    /// it) in the values step's record ([`ThreadRecord::by`]).
    pub(crate) async fn update_state_by(
        &self,
        thread: &str,
        values: Map<String, Value>,
        by: &str,
    ) -> Result<ThreadState, TimeTravelError> {
        self.update_state_of(thread, values, Some(by.into())).await
    }

    async fn update_state_of(
        &self,
        thread: &str,
        values: Map<String, Value>,
        by: Option<Arc<str>>,
    ) -> Result<ThreadState, TimeTravelError> {
        validate_thread_id(thread)?;
        if let Some(key) = values.keys().find(|k| k.starts_with(FRAMEWORK_KEY_PREFIX)) {
            return Err(TimeTravelError::ReservedKey {
                thread: thread.to_owned(),
                key: key.clone(),
            });
        }
        if self.thread_expired(thread).await? {
            return Err(TimeTravelError::UnknownThread {
                thread: thread.to_owned(),
            });
        }
        // The thread's lease keeps turns off it while the step is appended (and the append
        // is a compare-and-swap on the version read under it).
        let (store, _claim, lease) = self.hold_thread(thread).await?;
        let updated = async {
            let head = store
                .head(thread)
                .await?
                .ok_or_else(|| TimeTravelError::UnknownThread {
                    thread: thread.to_owned(),
                })?;
            if matches!(head.last.end, RecordEnd::Interrupted { .. }) {
                return Err(TimeTravelError::AwaitingResume {
                    thread: thread.to_owned(),
                    turn: head.last.turn,
                });
            }
            let mut merged = head.last.values.clone().unwrap_or_default();
            for (key, value) in &values {
                match value {
                    Value::Null => merged.remove(key),
                    value => merged.insert(key.clone(), value.clone()),
                };
            }
            let merged = sorted(merged);
            let record = ThreadRecord {
                seq: head.version,
                turn: head.last.turn,
                at_ms: crate::store::now_ms(),
                start: RecordStart::Values {
                    values: sorted(values),
                },
                started_at: head.last.started_at.clone(),
                events: Vec::new(),
                end: head.last.end.clone(),
                by,
                values: (!merged.is_empty()).then(|| merged.clone()),
                run_id: None,
                sealed: None,
            };
            let version = store.append(thread, head.version, record).await?;
            Ok::<_, TimeTravelError>(ThreadState {
                thread: thread.to_owned(),
                version,
                values: merged,
            })
        }
        .await;
        super::turn::ThreadLease::release_unused(lease).await;
        updated
    }
}

/// `values` as a map sorted by key (whatever the features of `serde_json`).
fn sorted(values: impl IntoIterator<Item = (String, Value)>) -> Map<String, Value> {
    let mut values: Vec<(String, Value)> = values.into_iter().collect();
    values.sort_by(|a, b| a.0.cmp(&b.0));
    values.into_iter().collect()
}
