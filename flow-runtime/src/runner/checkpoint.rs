//! What ties the checkpoint format to a run: capturing a session into a [`Checkpoint`] and
//! restoring one (the byte format itself, its codec and its checks are the store's:
//! [`crate::store`]).

use std::sync::Arc;

use crate::event::{InterruptInfo, RecordedEvent};
use crate::ids::fingerprint_of;
use crate::message::Message;
use crate::session::{Session, SessionEvent};
use crate::store::{Checkpoint, CheckpointError, CheckpointStatus};

impl Checkpoint {
    /// Captures a session; recorded streams are read to their end first (never stored live).
    pub(crate) async fn capture(
        id: &str,
        shape: String,
        streaming: bool,
        root_input: &[crate::MessageRef],
        session: &Session,
        interrupts: Vec<InterruptInfo>,
        (run_id, resumes): (String, u32),
    ) -> Result<Checkpoint, CheckpointError> {
        let events = record_events(id, &session.events()).await?;
        Ok(Checkpoint {
            status: CheckpointStatus::Interrupted,
            fingerprint: format!("{:016x}", fingerprint_of(&shape)),
            shape,
            streaming,
            root_input: root_input.iter().map(|m| Message::clone(m)).collect(),
            events,
            values: session.values(),
            interrupts,
            run_id,
            resumes,
            thread_part: None,
        })
    }

    /// A new session holding this checkpoint's events and values.
    pub fn restore_session(&self) -> Arc<Session> {
        let session = Session::new();
        for e in &self.events {
            session.push(SessionEvent::new(
                Arc::clone(&e.agent_name),
                e.run_path.clone(),
                e.message.clone().map(Arc::new),
                e.action.clone(),
            ));
        }
        session.add_values(self.values.clone());
        session
    }
}

/// The session events in their stored form; recorded streams are read to their end first.
pub(crate) async fn record_events(
    id: &str,
    events: &[Arc<SessionEvent>],
) -> Result<Vec<RecordedEvent>, CheckpointError> {
    let mut out = Vec::with_capacity(events.len());
    for e in events {
        let message = e
            .message()
            .await
            .map_err(|source| CheckpointError::Stream {
                id: id.to_owned(),
                source,
            })?;
        out.push(RecordedEvent {
            agent_name: e.agent_name().into(),
            run_path: e.run_path().clone(),
            message: message.map(|m| Message::clone(&m)),
            action: e.action().cloned(),
        });
    }
    Ok(out)
}
