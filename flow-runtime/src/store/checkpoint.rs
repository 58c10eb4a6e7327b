//! The [`Checkpoint`] format.

use std::collections::HashMap;
use std::sync::Arc;

use super::StoreError;

use serde::{Deserialize, Serialize};

use crate::event::{Action, InterruptInfo};
use crate::flow::fingerprint_of;
use crate::message::Message;
use crate::run_path::RunPath;
use crate::session::{Session, SessionEvent};
use crate::stream::StreamError;

/// The checkpoint format version this build writes and reads.
pub const FORMAT_VERSION: u32 = 1;

const MAGIC: &str = "agentflow-checkpoint";

/// Why a checkpoint could not be saved, read or resumed. Nothing stored is changed when one is
/// returned.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum CheckpointError {
    /// No checkpoint has this id.
    #[error("no checkpoint '{id}' in the store; check the id the interrupted run printed")]
    NotFound {
        /// The id asked for.
        id: String,
    },
    /// The bytes are not an agentflow checkpoint at all.
    #[error("checkpoint '{id}' is not an agentflow checkpoint (it does not start with '{MAGIC}')")]
    Foreign {
        /// The id.
        id: String,
    },
    /// The checkpoint was written by a format version this build cannot read.
    #[error(
        "checkpoint '{id}' has format version {found}; this build reads version {supported} only"
    )]
    UnsupportedVersion {
        /// The id.
        id: String,
        /// The version in the checkpoint.
        found: String,
        /// The version this build reads.
        supported: u32,
    },
    /// The checkpoint is damaged: truncated, altered, or not valid JSON.
    #[error("checkpoint '{id}' is corrupt: {reason}")]
    Corrupt {
        /// The id.
        id: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The checkpoint was taken in a flow of another shape than the runner's.
    #[error(
        "checkpoint '{id}' was taken in a flow of shape `{saved}`, but this runner's flow has \
         shape `{current}`; resume it with the flow it was taken in"
    )]
    ShapeChanged {
        /// The id.
        id: String,
        /// The saved shape.
        saved: String,
        /// The runner's shape.
        current: String,
    },
    /// The checkpoint's run was already resumed to its end (or is being resumed right now).
    #[error("checkpoint '{id}' was already resumed; a checkpoint resumes once")]
    AlreadyResumed {
        /// The id.
        id: String,
    },
    /// Resume data was addressed to an interrupt the checkpoint does not have.
    #[error("checkpoint '{id}' has no interrupt '{interrupt}'; its interrupts are: {known}")]
    UnknownInterrupt {
        /// The checkpoint id.
        id: String,
        /// The interrupt id given.
        interrupt: String,
        /// The interrupt ids it has, comma-separated.
        known: String,
    },
    /// The runner has no checkpoint store.
    #[error("this runner has no checkpoint store; give it one with Runner::checkpoint_store")]
    NoStore,
    /// A recorded message stream failed, so the session cannot be saved whole.
    #[error("checkpoint '{id}' cannot be saved: a recorded stream failed: {source}")]
    Stream {
        /// The id.
        id: String,
        /// The stream's error.
        #[source]
        source: StreamError,
    },
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Whether a checkpoint still waits for its resume.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckpointStatus {
    /// Interrupted, waiting to be resumed.
    Interrupted,
    /// Resumed to the end of its run; kept as a record.
    Resumed,
}

/// One recorded event as a checkpoint stores it (streams materialised).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordedEvent {
    /// The agent that emitted it.
    pub agent_name: Arc<str>,
    /// Where.
    pub run_path: RunPath,
    /// Its message, whole.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<Message>,
    /// Its action.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<Action>,
}

/// Everything a run needs to resume.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Checkpoint {
    /// Interrupted or already resumed.
    pub status: CheckpointStatus,
    /// The flow's shape (see [`FlowAgent::shape`](crate::FlowAgent::shape)).
    pub shape: String,
    /// Its fingerprint, as 16 hex digits.
    pub fingerprint: String,
    /// Whether the run streamed.
    pub streaming: bool,
    /// The run's input.
    pub root_input: Vec<Message>,
    /// The session's recorded events, in order.
    pub events: Vec<RecordedEvent>,
    /// The session values.
    pub values: HashMap<String, serde_json::Value>,
    /// The interrupts the run stopped at, in the order they happened.
    pub interrupts: Vec<InterruptInfo>,
}

impl Checkpoint {
    /// Captures a session; recorded streams are read to their end first (never stored live).
    pub(crate) async fn capture(
        id: &str,
        shape: String,
        streaming: bool,
        root_input: &[crate::MessageRef],
        session: &Session,
        interrupts: Vec<InterruptInfo>,
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

    /// Encodes the checkpoint (see the [store module docs](crate::store)).
    pub fn encode(&self) -> Vec<u8> {
        let body = serde_json::to_vec(self).expect("a checkpoint always serialises");
        let mut out = format!("{MAGIC} {FORMAT_VERSION}\n{:016x}\n", fnv1a(&body)).into_bytes();
        out.extend_from_slice(&body);
        out
    }

    /// Decodes bytes read for checkpoint `id`.
    pub fn decode(id: &str, bytes: &[u8]) -> Result<Checkpoint, CheckpointError> {
        let corrupt = |reason: String| CheckpointError::Corrupt {
            id: id.to_owned(),
            reason,
        };
        let Some(rest) = bytes.strip_prefix(MAGIC.as_bytes()) else {
            return Err(CheckpointError::Foreign { id: id.to_owned() });
        };
        let Some(rest) = rest.strip_prefix(b" ") else {
            return Err(CheckpointError::Foreign { id: id.to_owned() });
        };
        let line_end = rest
            .iter()
            .position(|&b| b == b'\n')
            .ok_or_else(|| corrupt("it ends inside its header".into()))?;
        let version = String::from_utf8_lossy(&rest[..line_end]).into_owned();
        if version != FORMAT_VERSION.to_string() {
            return Err(CheckpointError::UnsupportedVersion {
                id: id.to_owned(),
                found: version,
                supported: FORMAT_VERSION,
            });
        }
        let rest = &rest[line_end + 1..];
        if rest.len() < 17 || rest[16] != b'\n' {
            return Err(corrupt("its checksum line is missing or cut short".into()));
        }
        let expected = std::str::from_utf8(&rest[..16])
            .ok()
            .and_then(|h| u64::from_str_radix(h, 16).ok())
            .ok_or_else(|| corrupt("its checksum is not 16 hex digits".into()))?;
        let body = &rest[17..];
        let actual = fnv1a(body);
        if actual != expected {
            return Err(corrupt(format!(
                "its checksum does not match its content ({} bytes; truncated or altered)",
                body.len()
            )));
        }
        serde_json::from_slice(body).map_err(|e| corrupt(format!("its body does not decode: {e}")))
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

fn fnv1a(bytes: &[u8]) -> u64 {
    crate::flow::fnv1a_extend(crate::flow::FNV_OFFSET, bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Checkpoint {
        Checkpoint {
            status: CheckpointStatus::Interrupted,
            shape: "a(b)".into(),
            fingerprint: format!("{:016x}", fingerprint_of("a(b)")),
            streaming: false,
            root_input: vec![Message::user("hi")],
            events: vec![],
            values: HashMap::new(),
            interrupts: vec![],
        }
    }

    #[test]
    fn encode_then_decode_is_identity() {
        let c = sample();
        assert_eq!(Checkpoint::decode("x", &c.encode()).unwrap(), c);
    }

    #[test]
    fn every_truncation_is_an_error() {
        let bytes = sample().encode();
        for len in 0..bytes.len() {
            assert!(Checkpoint::decode("x", &bytes[..len]).is_err(), "len {len}");
        }
    }

    #[test]
    fn a_flipped_byte_in_the_body_is_corrupt() {
        let mut bytes = sample().encode();
        let last = bytes.len() - 3;
        bytes[last] ^= 0x01;
        assert!(matches!(
            Checkpoint::decode("x", &bytes),
            Err(CheckpointError::Corrupt { .. })
        ));
    }
}
