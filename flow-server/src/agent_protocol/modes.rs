//! The stream modes of a run's stream as LangGraph's clients ask for them (`stream_mode`, a
//! name or a list; `stream_subgraphs`), and the events each sends for a run's events.
//!
//! | mode | events |
//! | --- | --- |
//! | `values` (the default) | `values`: the thread's values at the run's end (with `__interrupt__` when it waits) |
//! | `updates` | `updates`: `{AGENT: {"messages": [message]}}` per recorded message; `{"__interrupt__": [...]}` |
//! | `messages` | `messages/metadata` once per message (`{ID: {"metadata"}}`), `messages/partial` (the message so far) per chunk, `messages/complete` when whole |
//! | `messages-tuple` | `messages`: `[message or chunk, metadata]` |
//! | `events` | `events`: LangChain's event dicts (`on_chain_start`, `on_chat_model_stream`, `on_chat_model_end`, `on_tool_end`, `on_chain_stream`, `on_chain_end`) |
//! | `debug` | `debug`: `{"type": "task" | "task_result" | "checkpoint", "timestamp", "step", "payload"}` |
//! | `custom` | `custom`: an event's application data (`custom`, or a custom action's value) |
//! | `tasks` | `tasks`: an agent's start (`{"id", "name", "input", "triggers"}`, once per run path) and each of its results (`{"id", "name", "error", "result", "interrupts"}`) |
//! | `checkpoints` | `checkpoints`: the thread's state at the run's end (`{"config", "values", "next", "metadata", "tasks", "parent_config"}`) |
//!
//! With `stream_subgraphs`, an event of an agent below the root is named `MODE|NS`, the
//! namespace being the run path below the root (`updates|refund`). Every stream begins with
//! `metadata` and ends with `end`; a failed run sends `error` first. An unknown mode is a
//! `422` naming the modes served.

use std::collections::{HashMap, HashSet};

use agentweave_runtime::{
    Action, EventJson, Message, Role, RunEvent, RunItem, RunOutcome, RunPath,
};
use serde_json::{json, Value};

use super::convert::lc_message;
use crate::error::ApiError;
use crate::outward::PublicError;

/// The modes a stream serves, as LangGraph's clients name them.
pub(crate) const MODE_NAMES: [&str; 9] = [
    "values",
    "updates",
    "messages",
    "messages-tuple",
    "events",
    "debug",
    "custom",
    "tasks",
    "checkpoints",
];

/// Which stream modes were asked for (default `values`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Modes {
    pub values: bool,
    pub updates: bool,
    /// `messages`: metadata, partial and complete messages.
    pub messages: bool,
    /// `messages-tuple`: `[message, metadata]` pairs.
    pub tuple: bool,
    pub events: bool,
    pub debug: bool,
    pub custom: bool,
    pub tasks: bool,
    pub checkpoints: bool,
    /// Name the events of agents below the root `MODE|NAMESPACE`.
    pub subgraphs: bool,
}

impl Modes {
    /// From the request's `stream_mode` (a string or a list of them) and `stream_subgraphs`;
    /// a mode this server does not serve is a `422` naming those it does.
    pub(crate) fn of(mode: Option<&Value>, subgraphs: bool) -> Result<Modes, ApiError> {
        let names: Vec<&Value> = match mode {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(a)) => a.iter().collect(),
            Some(one) => vec![one],
        };
        let mut modes = Modes {
            subgraphs,
            ..Modes::default()
        };
        if names.is_empty() {
            modes.values = true;
        }
        for name in names {
            let known = name.as_str().ok_or_else(|| unknown(name))?;
            let flag = match known {
                "values" => &mut modes.values,
                "updates" => &mut modes.updates,
                "messages" => &mut modes.messages,
                "messages-tuple" => &mut modes.tuple,
                "events" => &mut modes.events,
                "debug" => &mut modes.debug,
                "custom" => &mut modes.custom,
                "tasks" => &mut modes.tasks,
                "checkpoints" => &mut modes.checkpoints,
                _ => return Err(unknown(name)),
            };
            *flag = true;
        }
        Ok(modes)
    }

    /// Whether the run's end sends the thread's state (values, checkpoint or debug).
    pub(crate) fn state_at_end(&self) -> bool {
        self.values || self.checkpoints || self.debug || self.events
    }
}

fn unknown(name: &Value) -> ApiError {
    ApiError::Unprocessable(format!(
        "stream_mode {} is not served here: ask for any of {}",
        name.to_string().chars().take(40).collect::<String>(),
        MODE_NAMES.join(", ")
    ))
}

/// One run's stream in the asked modes: what it has said so far of each message (for
/// `messages/partial`), which messages were announced, which agents started.
pub(crate) struct ModeStream {
    modes: Modes,
    run_id: String,
    /// The text so far of the message each run path is streaming.
    partial: HashMap<String, String>,
    /// How many messages each run path has completed (a message's id counts them).
    completed: HashMap<String, u64>,
    announced: HashSet<String>,
    started: HashSet<String>,
    step: u64,
}

impl ModeStream {
    /// The stream of run `run_id` in `modes`.
    pub(crate) fn new(modes: Modes, run_id: &str) -> Self {
        ModeStream {
            modes,
            run_id: run_id.to_owned(),
            partial: HashMap::new(),
            completed: HashMap::new(),
            announced: HashSet::new(),
            started: HashSet::new(),
            step: 0,
        }
    }

    /// The modes it serves.
    pub(crate) fn modes(&self) -> Modes {
        self.modes
    }

    /// The name of a `mode` event of an agent at `path` (namespaced with `stream_subgraphs`).
    fn name(&self, mode: &str, path: &RunPath) -> String {
        if !self.modes.subgraphs || path.len() < 2 {
            return mode.to_owned();
        }
        let below: Vec<&str> = path.iter().skip(1).collect();
        format!("{mode}|{}", below.join("|"))
    }

    /// The id of the message `path` is saying now.
    fn message_id(&self, path: &RunPath) -> String {
        let n = self.completed.get(&path.to_string()).copied().unwrap_or(0);
        format!("{}-{path}-{n}", self.run_id)
    }

    /// The protocol's events for one run event (name, data), in order.
    pub(crate) fn frames(&mut self, event: &RunEvent) -> Vec<(String, Value)> {
        let mut out = Vec::new();
        let run_id = self.run_id.clone();
        // An error goes out in its public face (code, message for people, correlation id);
        // its text, which may name internal URLs or store keys, is logged under the same id.
        // (A run's failure is keyed by event 0, so `wait` and every stream show one id.)
        let public_error = |text: &str, key: u64| {
            let e = PublicError::of_run_failure(event.failure(), text, (&run_id, key));
            json!({ "error": e.code.as_str(), "message": e.message, "correlation_id": e.correlation_id })
        };
        match &event.item {
            RunItem::Started { started_at, .. } => {
                out.push(("metadata".into(), json!({ "run_id": run_id, "attempt": 1 })));
                if self.modes.events {
                    let name = started_at.first().unwrap_or_default();
                    out.push((
                        "events".into(),
                        self.langchain_event("on_chain_start", name, json!({ "input": {} })),
                    ));
                }
            }
            RunItem::Chunk {
                agent_name,
                run_path,
                content,
                ..
            } => self.chunk(agent_name, run_path, content, &mut out),
            RunItem::Event(e) => {
                let error = e
                    .error
                    .as_ref()
                    .map(|error| public_error(&error.message, event.id));
                self.event(e, error, &mut out);
            }
            RunItem::Ended(RunOutcome::Error { message }) => {
                out.push(("error".into(), public_error(message, 0)));
            }
            RunItem::Ended(_) => {}
        }
        out
    }

    fn chunk(
        &mut self,
        agent: &str,
        path: &RunPath,
        content: &str,
        out: &mut Vec<(String, Value)>,
    ) {
        let metadata = json!({ "langgraph_node": agent, "run_path": path.to_string() });
        if self.modes.tuple {
            out.push((
                self.name("messages", path),
                json!([
                    { "type": "AIMessageChunk", "content": content, "id": format!("{}-{path}", self.run_id) },
                    metadata,
                ]),
            ));
        }
        let id = self.message_id(path);
        if self.modes.messages {
            self.announce(&id, &metadata, path, out);
            let so_far = self.partial.entry(path.to_string()).or_default();
            so_far.push_str(content);
            let partial = json!([{ "type": "ai", "content": so_far, "id": id, "name": agent }]);
            out.push((self.name("messages/partial", path), partial));
        }
        if self.modes.events {
            let chunk =
                json!({ "chunk": { "type": "AIMessageChunk", "content": content, "id": id } });
            out.push((
                self.name("events", path),
                self.langchain_event("on_chat_model_stream", agent, chunk),
            ));
        }
    }

    /// `messages/metadata` for message `id`, the first time it is seen.
    fn announce(
        &mut self,
        id: &str,
        metadata: &Value,
        path: &RunPath,
        out: &mut Vec<(String, Value)>,
    ) {
        if self.announced.insert(id.to_owned()) {
            out.push((
                self.name("messages/metadata", path),
                json!({ id: { "metadata": metadata } }),
            ));
        }
    }

    fn event(&mut self, e: &EventJson, error: Option<Value>, out: &mut Vec<(String, Value)>) {
        let path = &e.run_path;
        let agent: &str = &e.agent_name;
        let metadata = json!({ "langgraph_node": agent, "run_path": path.to_string() });
        self.step += 1;
        let task_id = format!("{}-{path}", self.run_id);
        if self.started.insert(path.to_string()) {
            let task = json!({
                "id": task_id,
                "name": agent,
                "input": {},
                "triggers": [format!("start:{agent}")],
            });
            if self.modes.tasks {
                out.push((self.name("tasks", path), task.clone()));
            }
            if self.modes.debug {
                out.push((self.name("debug", path), self.debug("task", task)));
            }
        }
        let mut result = Vec::new();
        if let Some(m) = &e.message {
            let message = lc_message(m, agent, self.message_id(path));
            if self.modes.tuple && !e.streamed {
                let tuple_id = format!("{}-{path}", self.run_id);
                out.push((
                    self.name("messages", path),
                    json!([lc_message(m, agent, tuple_id), metadata]),
                ));
            }
            if self.modes.messages {
                let id = self.message_id(path);
                self.announce(&id, &metadata, path, out);
                out.push((self.name("messages/complete", path), json!([message])));
            }
            if self.modes.updates {
                out.push((
                    self.name("updates", path),
                    json!({ agent: { "messages": [message] } }),
                ));
            }
            if self.modes.events {
                let (kind, name) = langchain_kind(m, agent);
                out.push((
                    self.name("events", path),
                    self.langchain_event(kind, &name, json!({ "output": message })),
                ));
            }
            result.push(json!(["messages", [message]]));
            // The next message of this run path is another one.
            self.partial.remove(&path.to_string());
            *self.completed.entry(path.to_string()).or_default() += 1;
        }
        let mut interrupts = Vec::new();
        if let Some(Action::Interrupted(info)) = &e.action {
            interrupts.push(json!({ "value": info.info, "id": info.id }));
            if self.modes.updates {
                out.push((
                    self.name("updates", path),
                    json!({ "__interrupt__": interrupts }),
                ));
            }
        }
        let custom = match (&e.custom, &e.action) {
            (Some(v), _) => Some(v.clone()),
            (None, Some(Action::Custom(v))) => Some((**v).clone()),
            _ => None,
        };
        if let Some(v) = custom {
            if self.modes.custom {
                out.push((self.name("custom", path), v));
            }
        }
        if let Some(error) = &error {
            if self.modes.updates {
                out.push((self.name("updates", path), json!({ "__error__": error })));
            }
        }
        let task_result = json!({
            "id": task_id,
            "name": agent,
            "error": error,
            "result": result,
            "interrupts": interrupts,
        });
        if self.modes.tasks {
            out.push((self.name("tasks", path), task_result.clone()));
        }
        if self.modes.debug {
            out.push((
                self.name("debug", path),
                self.debug("task_result", task_result),
            ));
        }
    }

    /// What the run's end sends in the modes asked, given the thread's `state` and `values`
    /// (with `__interrupt__`) then: before `end`.
    pub(crate) fn end_frames(&mut self, state: &Value, values: &Value) -> Vec<(String, Value)> {
        let mut out = Vec::new();
        let checkpoint = json!({
            "config": { "configurable": state["checkpoint"] },
            "values": state["values"],
            "next": state["next"],
            "metadata": state["metadata"],
            "tasks": state["tasks"],
            "parent_config": null,
        });
        if self.modes.checkpoints {
            out.push(("checkpoints".into(), checkpoint.clone()));
        }
        if self.modes.debug {
            self.step += 1;
            out.push(("debug".into(), self.debug("checkpoint", checkpoint)));
        }
        if self.modes.events {
            out.push((
                "events".into(),
                self.langchain_event("on_chain_end", "LangGraph", json!({ "output": values })),
            ));
        }
        if self.modes.values {
            out.push(("values".into(), values.clone()));
        }
        out
    }

    fn debug(&self, kind: &str, payload: Value) -> Value {
        json!({
            "type": kind,
            "timestamp": agentweave_a2a::wire::rfc3339_now(),
            "step": self.step,
            "payload": payload,
        })
    }

    fn langchain_event(&self, kind: &str, name: &str, data: Value) -> Value {
        json!({
            "event": kind,
            "name": name,
            "run_id": self.run_id,
            "tags": [],
            "metadata": { "langgraph_node": name },
            "data": data,
            "parent_ids": [],
        })
    }
}

/// The LangChain event a whole message is, and the name it goes under.
fn langchain_kind(m: &Message, agent: &str) -> (&'static str, String) {
    match m.role {
        Role::Assistant => ("on_chat_model_end", agent.to_owned()),
        Role::Tool => ("on_tool_end", agent.to_owned()),
        Role::User | Role::System => ("on_chain_stream", agent.to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_mode_the_sdk_offers_is_served_and_an_unknown_one_is_422() {
        for name in MODE_NAMES {
            let modes = Modes::of(Some(&json!(name)), false).unwrap();
            assert_ne!(modes, Modes::default(), "{name}");
        }
        let all = Modes::of(Some(&json!(MODE_NAMES)), true).unwrap();
        assert!(all.values && all.tuple && all.messages && all.checkpoints && all.subgraphs);
        assert!(Modes::of(None, false).unwrap().values);
        for bad in [json!("telepathy"), json!(["values", "nope"]), json!([3])] {
            let e = Modes::of(Some(&bad), false).unwrap_err();
            assert_eq!(e.status(), 422, "{bad}");
            assert!(e.to_string().contains("messages-tuple"), "{e}");
        }
    }
}
