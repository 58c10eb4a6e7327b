//! agentflow's messages, thread records and run events in the Agent Protocol's JSON.

use flow_runtime::store::{RecordEnd, ThreadHead};
use flow_runtime::{
    Action, EventJson, Message, Role, RunEvent, RunItem, RunOutcome, ThreadMessage,
};
use serde_json::{json, Value};

use crate::outward::PublicError;

/// A message as a LangChain message dict (`type`: `human`, `ai`, `tool`, `system`).
pub(crate) fn lc_message(m: &Message, agent: &str, id: String) -> Value {
    let kind = match m.role {
        Role::User => "human",
        Role::Assistant => "ai",
        Role::Tool => "tool",
        Role::System => "system",
    };
    let mut out = json!({
        "type": kind,
        "content": m.content,
        "id": id,
    });
    if !agent.is_empty() {
        out["name"] = json!(agent);
    }
    if !m.tool_calls.is_empty() {
        out["tool_calls"] = m
            .tool_calls
            .iter()
            .map(|c| {
                json!({
                    "id": c.id,
                    "name": c.name,
                    "args": serde_json::from_str::<Value>(&c.arguments)
                        .unwrap_or_else(|_| json!({ "raw": c.arguments })),
                    "type": "tool_call",
                })
            })
            .collect();
    }
    if let Some(id) = &m.tool_call_id {
        out["tool_call_id"] = json!(id);
    }
    out
}

/// The thread's values: `{"messages": [...]}`.
pub(crate) fn values(thread: &str, messages: &[ThreadMessage]) -> Value {
    let messages: Vec<Value> = messages
        .iter()
        .enumerate()
        .map(|(k, m)| lc_message(&m.message, &m.agent_name, format!("{thread}-{k}")))
        .collect();
    json!({ "messages": messages })
}

/// The interrupts the thread's head waits on, as `[{"value", "id"}]`.
pub(crate) fn interrupts(head: Option<&ThreadHead>) -> Vec<Value> {
    match head.map(|h| &h.last.end) {
        Some(RecordEnd::Interrupted { interrupts, .. }) => interrupts
            .iter()
            .map(|i| json!({ "value": i.info, "id": i.id }))
            .collect(),
        _ => Vec::new(),
    }
}

/// The thread's state.
pub(crate) fn state(thread: &str, messages: &[ThreadMessage], head: Option<&ThreadHead>) -> Value {
    let waiting = interrupts(head);
    let next: Vec<Value> = match head.map(|h| &h.last.end) {
        Some(RecordEnd::Interrupted { interrupts, .. }) => interrupts
            .iter()
            .filter_map(|i| i.address.last().map(|f| json!(f.agent)))
            .collect(),
        _ => Vec::new(),
    };
    let version = head.map_or(0, |h| h.version);
    json!({
        "values": values(thread, messages),
        "next": next,
        "tasks": [],
        "interrupts": waiting,
        "metadata": { "turns": head.map_or(0, |h| h.turns) },
        "created_at": null,
        "checkpoint": {
            "thread_id": thread,
            "checkpoint_ns": "",
            "checkpoint_id": format!("{thread}-v{version}"),
        },
        "parent_checkpoint": null,
    })
}

/// Which stream modes were asked for (default `values`).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Modes {
    pub values: bool,
    pub updates: bool,
    pub messages: bool,
}

impl Modes {
    /// From the request's `stream_mode` (a string or a list); unknown modes are ignored.
    pub(crate) fn of(mode: Option<&Value>) -> Modes {
        let names: Vec<&str> = match mode {
            None | Some(Value::Null) => vec!["values"],
            Some(Value::String(s)) => vec![s.as_str()],
            Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).collect(),
            Some(_) => vec!["values"],
        };
        let mut modes = Modes::default();
        for name in names {
            match name {
                "values" => modes.values = true,
                "updates" => modes.updates = true,
                "messages" | "messages-tuple" => modes.messages = true,
                _ => {}
            }
        }
        modes
    }
}

/// The protocol's events for one run event (name, data), in order.
pub(crate) fn events_of(
    event: &RunEvent,
    modes: Modes,
    run_id: &str,
) -> Vec<(&'static str, Value)> {
    let mut out = Vec::new();
    // An error goes out in its public face (code, message for people, correlation id); its
    // text, which may name internal URLs or store keys, is logged under the same id.
    // (A run's failure is keyed by event 0, so `wait` and every stream show one id.)
    let public_error = |text: &str, key: u64| {
        let e = PublicError::of_run_failure(event.failure(), text, (run_id, key));
        json!({ "error": e.code.as_str(), "message": e.message, "correlation_id": e.correlation_id })
    };
    match &event.item {
        RunItem::Started { .. } => {
            out.push(("metadata", json!({ "run_id": run_id, "attempt": 1 })));
        }
        RunItem::Chunk {
            agent_name,
            run_path,
            content,
            ..
        } if modes.messages => {
            out.push((
                "messages",
                json!([
                    { "type": "AIMessageChunk", "content": content, "id": format!("{run_id}-{run_path}") },
                    { "langgraph_node": agent_name, "run_path": run_path.to_string() },
                ]),
            ));
        }
        RunItem::Chunk { .. } => {}
        RunItem::Event(e) => {
            let error = e
                .error
                .as_ref()
                .map(|error| public_error(&error.message, event.id));
            event_json(e, error, modes, run_id, &mut out)
        }
        RunItem::Ended(RunOutcome::Error { message }) => {
            out.push(("error", public_error(message, 0)));
        }
        RunItem::Ended(_) => {}
    }
    out
}

fn event_json(
    e: &EventJson,
    error: Option<Value>,
    modes: Modes,
    run_id: &str,
    out: &mut Vec<(&'static str, Value)>,
) {
    if let Some(m) = &e.message {
        let id = format!("{run_id}-{}", e.run_path);
        let message = lc_message(m, &e.agent_name, id);
        if modes.messages && !e.streamed {
            out.push((
                "messages",
                json!([message, { "langgraph_node": e.agent_name, "run_path": e.run_path.to_string() }]),
            ));
        }
        if modes.updates {
            let mut update = serde_json::Map::new();
            update.insert(e.agent_name.to_string(), json!({ "messages": [message] }));
            out.push(("updates", Value::Object(update)));
        }
    }
    if let Some(Action::Interrupted(info)) = &e.action {
        if modes.updates {
            out.push((
                "updates",
                json!({ "__interrupt__": [{ "value": info.info, "id": info.id }] }),
            ));
        }
    }
    if let Some(error) = error {
        if modes.updates {
            out.push(("updates", json!({ "__error__": error })));
        }
    }
}
