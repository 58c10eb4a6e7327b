//! The run's shared record: recorded events and session values.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, OnceLock};

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::event::{Action, AgentEvent, EventOutput};
use crate::message::MessageRef;
use crate::run_path::RunPath;
use crate::stream::{MessageStream, StreamError};

/// An event as the session recorded it.
pub struct SessionEvent {
    agent_name: Arc<str>,
    run_path: RunPath,
    output: RecordedOutput,
    action: Option<Action>,
}

enum RecordedOutput {
    None,
    Message(MessageRef),
    /// The session's own fork of a streamed message, concatenated once on first use.
    Stream {
        reader: Mutex<Option<MessageStream>>,
        whole: OnceLock<Result<MessageRef, StreamError>>,
    },
}

impl SessionEvent {
    /// A recorded event with a whole message (or none); used when restoring a session.
    pub fn new(
        agent_name: impl Into<Arc<str>>,
        run_path: RunPath,
        message: Option<MessageRef>,
        action: Option<Action>,
    ) -> Self {
        SessionEvent {
            agent_name: agent_name.into(),
            run_path,
            output: match message {
                Some(m) => RecordedOutput::Message(m),
                None => RecordedOutput::None,
            },
            action,
        }
    }

    pub(crate) fn from_event(event: &AgentEvent) -> Self {
        let output = match &event.output {
            Some(EventOutput::Message(m)) => RecordedOutput::Message(Arc::clone(m)),
            Some(EventOutput::Stream(s)) => RecordedOutput::Stream {
                reader: Mutex::new(Some(s.fork())),
                whole: OnceLock::new(),
            },
            Some(EventOutput::Custom(_)) | None => RecordedOutput::None,
        };
        SessionEvent {
            agent_name: Arc::clone(event.agent_name_arc()),
            run_path: event.run_path().clone(),
            output,
            action: event.action.clone(),
        }
    }

    /// The agent that emitted the event.
    pub fn agent_name(&self) -> &str {
        &self.agent_name
    }

    pub(crate) fn agent_name_arc(&self) -> &Arc<str> {
        &self.agent_name
    }

    /// Where it was emitted.
    pub fn run_path(&self) -> &RunPath {
        &self.run_path
    }

    /// Its action, if any.
    pub fn action(&self) -> Option<&Action> {
        self.action.as_ref()
    }

    /// Whether the event carried a message (whole or streamed).
    pub fn has_message(&self) -> bool {
        !matches!(self.output, RecordedOutput::None)
    }

    /// The event's message; a streamed one is read to its end and concatenated, once.
    pub async fn message(&self) -> Result<Option<MessageRef>, StreamError> {
        match &self.output {
            RecordedOutput::None => Ok(None),
            RecordedOutput::Message(m) => Ok(Some(Arc::clone(m))),
            RecordedOutput::Stream { reader, whole } => {
                if let Some(done) = whole.get() {
                    return done.clone().map(Some);
                }
                let fork = reader
                    .lock()
                    .expect("session stream lock")
                    .as_ref()
                    .map(MessageStream::fork);
                let Some(fork) = fork else {
                    return whole.get().cloned().transpose();
                };
                let result = fork.collect_message().await.map(Arc::new);
                let _ = whole.set(result);
                // The whole message is known: the session no longer needs its reader.
                reader.lock().expect("session stream lock").take();
                whole.get().cloned().transpose()
            }
        }
    }

    /// The message if it is already whole, without waiting for a stream.
    pub fn message_now(&self) -> Option<MessageRef> {
        match &self.output {
            RecordedOutput::Message(m) => Some(Arc::clone(m)),
            RecordedOutput::Stream { whole, .. } => whole.get().and_then(|r| r.clone().ok()),
            RecordedOutput::None => None,
        }
    }
}

impl fmt::Debug for SessionEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SessionEvent")
            .field("agent_name", &self.agent_name)
            .field("run_path", &self.run_path)
            .field("message", &self.message_now())
            .field("action", &self.action)
            .finish()
    }
}

/// The shared record of one run: the events its agents recorded, in order, and key/value
/// session values every agent of the run can read and write. Each run has its own.
///
/// ```
/// use flow_runtime::Session;
/// let session = Session::new();
/// session.set_value("customer", "ada").unwrap();
/// assert_eq!(session.value::<String>("customer").unwrap().as_deref(), Some("ada"));
/// ```
#[derive(Default)]
pub struct Session {
    events: Mutex<Vec<Arc<SessionEvent>>>,
    /// Shared with the [scoped](Session::scoped) sessions made from this one.
    values: Arc<Mutex<HashMap<String, serde_json::Value>>>,
}

impl Session {
    /// An empty session.
    pub fn new() -> Arc<Session> {
        Arc::new(Session::default())
    }

    /// A new, empty record that shares this session's values: what one writes, the other
    /// reads. An [`AgentTool`](crate::AgentTool) runs its agent in one, so the agent's events
    /// stay out of the caller's record while session values stay common to the whole run.
    ///
    /// ```
    /// use flow_runtime::Session;
    /// let run = Session::new();
    /// let inner = run.scoped();
    /// inner.set_value("seen", true).unwrap();
    /// assert_eq!(run.value::<bool>("seen").unwrap(), Some(true));
    /// ```
    pub fn scoped(&self) -> Arc<Session> {
        Arc::new(Session {
            events: Mutex::default(),
            values: Arc::clone(&self.values),
        })
    }

    /// Appends a recorded event.
    pub fn push(&self, event: SessionEvent) {
        self.events
            .lock()
            .expect("session lock")
            .push(Arc::new(event));
    }

    pub(crate) fn record(&self, event: &AgentEvent) {
        self.push(SessionEvent::from_event(event));
    }

    /// The recorded events, in order (a snapshot; the events themselves are shared).
    pub fn events(&self) -> Vec<Arc<SessionEvent>> {
        self.events.lock().expect("session lock").clone()
    }

    /// Number of recorded events.
    pub fn len(&self) -> usize {
        self.events.lock().expect("session lock").len()
    }

    /// Whether nothing has been recorded.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Sets a session value.
    pub fn set_value(
        &self,
        key: impl Into<String>,
        value: impl Serialize,
    ) -> serde_json::Result<()> {
        let value = serde_json::to_value(value)?;
        self.values
            .lock()
            .expect("session lock")
            .insert(key.into(), value);
        Ok(())
    }

    /// Sets several session values at once.
    pub fn add_values(&self, values: impl IntoIterator<Item = (String, serde_json::Value)>) {
        self.values.lock().expect("session lock").extend(values);
    }

    /// A session value, decoded; `Ok(None)` if it is not set.
    pub fn value<T: DeserializeOwned>(&self, key: &str) -> serde_json::Result<Option<T>> {
        let raw = self.raw_value(key);
        raw.map(serde_json::from_value).transpose()
    }

    /// A session value as JSON.
    pub fn raw_value(&self, key: &str) -> Option<serde_json::Value> {
        self.values.lock().expect("session lock").get(key).cloned()
    }

    /// All session values.
    pub fn values(&self) -> HashMap<String, serde_json::Value> {
        self.values.lock().expect("session lock").clone()
    }
}

impl fmt::Debug for Session {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Session")
            .field("events", &*self.events.lock().expect("session lock"))
            .field("values", &*self.values.lock().expect("session lock"))
            .finish()
    }
}
