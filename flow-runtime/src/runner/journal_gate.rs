//! The journal gate of a `Sync` turn: a tool call starts only once the step of the model reply
//! that asked for it is stored. An agent starts its tools as soon as the reply is in; without
//! the gate a worker could die after a tool took effect but before the reply that asked for
//! it was journaled, and its recovery would ask the model again, whose new reply may name the
//! call differently (a new idempotency key, so a second payment).

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use tokio::sync::Notify;

use crate::agent::middleware::{HookContext, HookError, Middleware};
use crate::event::RecordedEvent;
use crate::message::{Message, Role, ToolCall};
use crate::run_path::RunPath;

/// The tool calls whose asking model reply is stored in the journal: run path and call id.
#[derive(Default)]
pub(crate) struct StoredCalls {
    calls: Mutex<HashSet<(RunPath, String)>>,
    stored: Notify,
    /// A tool call waits: the turn's pump stores what the session holds now. A streamed
    /// reply joins the session only when its stream ends, after its event has passed the
    /// pump; without this the pump would wait for the agent's next event while the agent
    /// waits for the reply to be stored.
    wanted: Notify,
}

impl StoredCalls {
    /// Notes the tool calls of the model replies among `steps`, which were just stored.
    pub(crate) fn add(&self, steps: &[RecordedEvent]) {
        for step in steps {
            if let Some(message) = &step.message {
                self.add_reply(&step.run_path, message);
            }
        }
    }

    /// Notes the tool calls of `message` at `run_path` (if it is a model reply), whose step
    /// was just stored.
    pub(crate) fn add_reply(&self, run_path: &RunPath, message: &Message) {
        if message.role != Role::Assistant || message.tool_calls.is_empty() {
            return;
        }
        let mut calls = self.calls.lock().expect("stored calls lock");
        let before = calls.len();
        for call in &message.tool_calls {
            calls.insert((run_path.clone(), call.id.clone()));
        }
        if calls.len() > before {
            self.stored.notify_waiters();
        }
    }

    /// Waits until the reply asking for call `id` at `run_path` is stored.
    async fn wait(&self, run_path: &RunPath, id: &str) {
        let key = (run_path.clone(), id.to_owned());
        // A permit if the pump is not listening yet: the request is not lost.
        self.wanted.notify_one();
        loop {
            let stored = self.stored.notified();
            tokio::pin!(stored);
            // Registered before the check: a store between the check and the wait wakes it.
            stored.as_mut().enable();
            if self.calls.lock().expect("stored calls lock").contains(&key) {
                return;
            }
            stored.await;
        }
    }
}

impl StoredCalls {
    /// Resolves when a tool call waits for its reply to be stored (the turn's pump then
    /// journals the session's new events).
    pub(crate) async fn wanted(&self) {
        self.wanted.notified().await;
    }
}

/// The middleware that holds each tool call until its asking reply is stored (first in the
/// chain of a `Sync` turn, after a recovery's replay).
pub(crate) struct JournalGate(pub(crate) Arc<StoredCalls>);

#[async_trait]
impl Middleware for JournalGate {
    fn name(&self) -> std::borrow::Cow<'_, str> {
        "journal gate".into()
    }

    async fn before_tool(
        &self,
        cx: &HookContext,
        call: &mut ToolCall,
    ) -> Result<Option<String>, HookError> {
        self.0.wait(cx.run_path(), &call.id).await;
        Ok(None)
    }
}
