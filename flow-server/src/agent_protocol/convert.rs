//! agentflow's messages, thread records and run events in the Agent Protocol's JSON.

use agentweave_runtime::store::{RecordEnd, ThreadHead};
use agentweave_runtime::{Message, Role, ThreadMessage};
use serde_json::{json, Value};

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
