//! A local model call's input handed to its activity in memory, not as a payload.
//!
//! A local activity always runs in the worker process whose workflow task scheduled it, so the
//! workflow can leave the call (the whole conversation and the tool definitions) in this
//! process's table and send the activity a stub that names it ([`ModelCall::held`]); the
//! activity takes the call from the table by its workflow run and activity id. Without this,
//! each local model call's input was serialised by the workflow and parsed back by the
//! activity: on a thread of twenty turns, over half of the worker's CPU time a local step
//! (BENCHMARKS.md, "Temporal").
//!
//! An entry lives as long as the workflow's wait for its call: [`Held`] removes it when that
//! wait ends or is dropped (the workflow evicted from the worker's cache). A workflow replayed
//! on another worker schedules the call again there, and holds it again. A local activity's
//! input is never in the history, so replaying a recorded history does not depend on this.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};

use crate::effects::ModelCall;

type Table = Mutex<HashMap<String, Arc<ModelCall>>>;

static HELD: LazyLock<Table> = LazyLock::new(Table::default);

fn table() -> std::sync::MutexGuard<'static, HashMap<String, Arc<ModelCall>>> {
    HELD.lock().unwrap_or_else(|e| e.into_inner())
}

fn key(run: &str, activity: &str) -> String {
    format!("{run}/{activity}")
}

/// A model call held for the local activity `activity` of workflow run `run`, until dropped.
pub(crate) struct Held {
    key: String,
}

impl Held {
    /// Holds `call` for that activity; gives the guard and the stub to send in its place (the
    /// call without its conversation and tools, marked [`ModelCall::held`]).
    pub(crate) fn put(run: &str, activity: &str, mut call: ModelCall) -> (Held, ModelCall) {
        // The stub copies the call's small fields only: the conversation and the tools are
        // taken out while it is made, then put back.
        let messages = std::mem::take(&mut call.messages);
        let earlier = std::mem::take(&mut call.earlier);
        let tools = std::mem::take(&mut call.tools);
        let stub = ModelCall {
            held: true,
            ..call.clone()
        };
        call.messages = messages;
        call.earlier = earlier;
        call.tools = tools;
        let key = key(run, activity);
        table().insert(key.clone(), Arc::new(call));
        (Held { key }, stub)
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        table().remove(&self.key);
    }
}

/// The call a model activity of workflow run `run` and id `activity` is to make: `call`
/// itself, or, when it is a stub ([`ModelCall::held`]), the call its workflow holds; `None`
/// when the workflow holds it no more (the workflow was evicted or moved to another worker,
/// which schedules it again).
pub(crate) fn resolve(run: &str, activity: &str, call: ModelCall) -> Option<Arc<ModelCall>> {
    if !call.held {
        return Some(Arc::new(call));
    }
    table().get(&key(run, activity)).cloned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentweave_core::model::ModelParams;
    use agentweave_core::Message;

    fn call(text: &str) -> ModelCall {
        ModelCall {
            flow: "desk".into(),
            agent: "clerk".into(),
            model: "m".into(),
            messages: vec![std::sync::Arc::new(Message::user(text))],
            earlier: Vec::new(),
            tools: Default::default(),
            params: ModelParams::default(),
            run_path: None,
            live: None,
            held: false,
        }
    }

    #[test]
    fn a_held_call_reaches_its_activity_by_run_and_id_until_the_guard_drops() {
        let (guard, stub) = Held::put("run-1", "t0.e1.clerk.model", call("a long conversation"));
        assert!(stub.held && stub.messages.is_empty(), "{stub:?}");
        assert_eq!(stub.agent, "clerk");
        let found = resolve("run-1", "t0.e1.clerk.model", stub.clone()).expect("held");
        assert_eq!(
            found.messages,
            vec![std::sync::Arc::new(Message::user("a long conversation"))]
        );
        assert!(!found.held);
        assert!(resolve("run-2", "t0.e1.clerk.model", stub.clone()).is_none());
        drop(guard);
        assert!(resolve("run-1", "t0.e1.clerk.model", stub).is_none());
    }

    #[test]
    fn a_call_sent_whole_is_taken_as_it_came() {
        let whole = call("hi");
        let found = resolve("run-3", "x", whole.clone()).expect("whole");
        assert_eq!(*found, whole);
    }
}
