//! Giving up a turn that waits for input: [`ThreadHandle::withdraw`](crate::ThreadHandle::withdraw) drops the turn's
//! interrupts, releases its checkpoint and records the turn as ended, so the thread takes a
//! new message again (an A2A client cancelling a task in `input-required`, a user closing a
//! question).
//!
//! ```
//! use agentweave_runtime::{set_sub_agents, FlowAgent, FnAgent, InMemoryStore, Message, Runner, TurnOutcome, TurnRequest};
//! use serde_json::json;
//! # futures::executor::block_on(async {
//! let asker = FnAgent::new("asker", |cx, _| async move {
//!     cx.interrupt(json!({"question": "Sure?"}));
//!     Ok(())
//! });
//! let runner = Runner::builder(FlowAgent::new(asker)).stores(InMemoryStore::new()).build();
//! let turn = runner.turn(TurnRequest::new("t", Message::user("go"))).await.unwrap();
//! assert!(matches!(turn.finish().await, TurnOutcome::Interrupted { .. }));
//!
//! let dropped = runner.thread("t").withdraw(Some("ada")).await.unwrap();
//! assert_eq!(dropped[0].info["question"], "Sure?");
//! let records = runner.thread("t").records().await.unwrap();
//! assert!(agentweave_runtime::is_withdrawn(records.last().unwrap()));
//! // The thread takes a new message again.
//! let next = runner.turn(TurnRequest::new("t", Message::user("never mind"))).await.unwrap();
//! assert!(matches!(next.finish().await, TurnOutcome::Interrupted { .. }));
//! # });
//! ```

use std::sync::Arc;

use super::runs::Runner;
use super::turn::ThreadLease;
use crate::event::{Action, InterruptInfo, RecordedEvent};
use crate::store::{RecordEnd, RecordStart, ThreadError, ThreadRecord, ThreadStore};

/// The key of the custom action that marks a withdrawn turn's record:
/// `{"withdrawn": {"interrupts": [ID, ...]}}`.
pub const WITHDRAWN_KEY: &str = "withdrawn";

/// Whether `record` is the end of a turn given up by [`ThreadHandle::withdraw`](crate::ThreadHandle::withdraw).
pub fn is_withdrawn(record: &ThreadRecord) -> bool {
    matches!(record.start, RecordStart::Resume { .. })
        && matches!(record.end, RecordEnd::Completed { .. })
        && record.events.len() == 1
        && record.events[0].message.is_none()
        && matches!(&record.events[0].action, Some(Action::Custom(v)) if v.get(WITHDRAWN_KEY).is_some())
}

impl Runner {
    /// Gives up the turn thread `thread_id` waits on: appends a record that ends it (no
    /// answer; its one event carries the custom action `{"withdrawn": {"interrupts": [...]}}`,
    /// see [`is_withdrawn`]), recording `by` as who did, then deletes the turn's checkpoint,
    /// and returns the interrupts dropped. What the turn recorded before it waited stays in the
    /// thread; the next turn starts from a new message, at the agent the withdrawn turn started
    /// at (with [`TurnRouting::LastAgent`](crate::TurnRouting::LastAgent)).
    ///
    /// Holds the thread's lease like a turn: refused with [`ThreadError::Busy`] while a turn
    /// or a resume runs, and with [`ThreadError::NotInterrupted`] if the thread waits on
    /// nothing.
    pub(crate) async fn withdraw_turn(
        &self,
        thread_id: &str,
        by: Option<&str>,
    ) -> Result<Vec<InterruptInfo>, ThreadError> {
        let (store, _claim, lease) = self.hold_thread(thread_id).await?;
        let withdrawn = self.withdraw_held(&store, thread_id, by).await;
        ThreadLease::release_unused(lease).await;
        withdrawn
    }

    async fn withdraw_held(
        &self,
        store: &Arc<dyn ThreadStore>,
        thread_id: &str,
        by: Option<&str>,
    ) -> Result<Vec<InterruptInfo>, ThreadError> {
        let head = store.head(thread_id).await?;
        let Some(head) = head else {
            return Err(ThreadError::NotInterrupted {
                id: thread_id.to_owned(),
            });
        };
        let RecordEnd::Interrupted {
            checkpoint_id,
            interrupts,
        } = &head.last.end
        else {
            return Err(ThreadError::NotInterrupted {
                id: thread_id.to_owned(),
            });
        };
        let started_at = head.last.started_at.clone();
        let agent: Arc<str> = Arc::from(started_at.last().unwrap_or(self.agent.name()));
        let ids: Vec<&str> = interrupts.iter().map(|i| i.id.as_str()).collect();
        let mark = serde_json::json!({ WITHDRAWN_KEY: { "interrupts": ids } });
        let record = ThreadRecord {
            seq: head.version,
            turn: head.last.turn,
            at_ms: crate::store::now_ms(),
            start: RecordStart::Resume {
                checkpoint_id: checkpoint_id.clone(),
                targets: serde_json::Map::new(),
            },
            started_at: started_at.clone(),
            events: vec![RecordedEvent {
                agent_name: Arc::clone(&agent),
                run_path: started_at,
                message: None,
                action: Some(Action::Custom(Arc::new(mark))),
            }],
            end: RecordEnd::Completed { answered_by: agent },
            by: by.map(Arc::from),
            values: head.last.values.clone(),
            run_id: None,
            sealed: None,
        };
        store.append(thread_id, head.version, record).await?;
        // The thread no longer waits on the checkpoint: no thread resume reaches it again.
        if let Some(checkpoints) = &self.store {
            if let Err(e) = checkpoints.delete(checkpoint_id).await {
                tracing::warn!(thread = %thread_id, checkpoint = %checkpoint_id, error = %e,
                    "a withdrawn turn's checkpoint could not be deleted; it is never resumed");
            }
        }
        Ok(interrupts.clone())
    }
}

#[cfg(test)]
mod tests {
    use crate::TurnRequest;
    use std::collections::HashMap;

    use serde_json::json;

    use crate::store::{CheckpointStore, ThreadError};
    use crate::{FlowAgent, FnAgent, InMemoryStore, Message, Runner, TurnOutcome};

    #[tokio::test]
    async fn a_withdrawn_turn_releases_its_checkpoint_and_cannot_be_resumed() {
        let asker = FnAgent::new("asker", |cx, _| async move {
            cx.interrupt(json!({"question": "Sure?"}));
            Ok(())
        });
        let store = InMemoryStore::new();
        let runner = Runner::builder(FlowAgent::new(asker))
            .stores(store.clone())
            .build();
        // Nothing waits yet.
        assert!(matches!(
            runner.thread("t").withdraw(None).await,
            Err(ThreadError::NotInterrupted { .. })
        ));
        let turn = runner
            .turn(TurnRequest::new("t", Message::user("go")))
            .await
            .unwrap();
        let TurnOutcome::Interrupted {
            checkpoint_id,
            interrupts,
        } = turn.finish().await
        else {
            panic!("the turn waits");
        };
        assert!(store.get(&checkpoint_id).await.unwrap().is_some());
        runner.thread("t").withdraw(Some("ada")).await.unwrap();
        assert!(store.get(&checkpoint_id).await.unwrap().is_none());
        let records = runner.thread("t").records().await.unwrap();
        let last = records.last().unwrap();
        assert!(super::is_withdrawn(last));
        assert_eq!(last.by.as_deref(), Some("ada"));
        assert!(!super::is_withdrawn(&records[0]));
        let targets = HashMap::from([(interrupts[0].id.clone(), json!(true))]);
        assert!(matches!(
            runner.turn(TurnRequest::resume("t", targets)).await,
            Err(ThreadError::NotInterrupted { .. })
        ));
        assert!(matches!(
            runner.thread("t").withdraw(None).await,
            Err(ThreadError::NotInterrupted { .. })
        ));
    }
}
