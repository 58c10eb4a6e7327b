//! Every mapping between agentflow and AG-UI, in one place: an event's message to
//! `TEXT_MESSAGE_*` and `TOOL_CALL_*` events, a tool's result to `TOOL_CALL_RESULT`, a transfer
//! and an interrupt to `CUSTOM` events, the agent in charge to the state, a turn's outcome to
//! `RUN_FINISHED` (success or interrupt) or `RUN_ERROR`, the session values to the state
//! (`STATE_SNAPSHOT`, then `STATE_DELTA` as JSON Patch), and AG-UI's run input back to a
//! turn's message, resume data and session values.
//!
//! What a client sees goes through the [outward form](crate::outward): an interrupt is an
//! [`OutwardInterrupt`] (never its saved state), a failure a [`PublicError`] (`RUN_ERROR`
//! with its stable code, its message and correlation id; the internal error is only in the
//! server's log).

use std::collections::HashMap;

use agentweave_runtime::model::ToolDefinition;
use agentweave_runtime::{Action, InterruptInfo, Message, Role, RunPath};
use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::outward::{OutwardInterrupt, OutwardValues, PublicError};

/// The member of the AG-UI state that the server writes (the agent in charge, its run path,
/// the turn) and ignores on input; every other member is a session value.
pub(crate) const STATE_KEY: &str = "agentflow";

/// AG-UI's run input (`RunAgentInput`): what the client sends to start a run.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RunAgentInput {
    /// The conversation: an agentflow thread.
    pub thread_id: String,
    /// The run's id, chosen by the client.
    pub run_id: String,
    /// The conversation's messages as the client has them; the last user message starts a
    /// turn (earlier ones are in the thread already).
    #[serde(default)]
    pub messages: Vec<Value>,
    /// The front end's answers to the interrupts of the previous run.
    #[serde(default)]
    pub resume: Vec<ResumeEntry>,
    /// The shared state as the client has it: its members (but `agentweave`) become session
    /// values of the run.
    #[serde(default)]
    pub state: Value,
    /// The tools the front end offers: every LLM agent of the run may call them, and a call
    /// goes to the client.
    #[serde(default)]
    pub tools: Vec<FrontendToolInput>,
}

/// One tool the front end offers (AG-UI's `Tool`).
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct FrontendToolInput {
    /// Its name.
    pub name: String,
    /// What it does, for the model.
    #[serde(default)]
    pub description: String,
    /// The JSON Schema of its arguments.
    #[serde(default)]
    pub parameters: Value,
}

/// The most front-end tools one run takes.
pub(crate) const MAX_FRONTEND_TOOLS: usize = 64;

/// The definitions of the front-end tools `tools` for the run, and for each front-end tool
/// call of `pending` whose tool the input does not list again, a bare one (so the resumed
/// agent can take the call's result). Names are 1 to 64 of `a-z A-Z 0-9 _ -` (what model
/// APIs take), at most [`MAX_FRONTEND_TOOLS`] tools, and their JSON at most `limit` bytes.
pub(crate) fn frontend_tools(
    tools: &[FrontendToolInput],
    pending: &[InterruptInfo],
    limit: usize,
) -> Result<Vec<ToolDefinition>, String> {
    if tools.len() > MAX_FRONTEND_TOOLS {
        return Err(format!(
            "the input offers {} tools; a run takes at most {MAX_FRONTEND_TOOLS}",
            tools.len()
        ));
    }
    let mut size = 0;
    let mut out: Vec<ToolDefinition> = Vec::with_capacity(tools.len());
    for t in tools {
        let good = !t.name.is_empty()
            && t.name.len() <= 64
            && t.name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if !good {
            return Err(format!(
                "front-end tool '{}': a tool name is 1 to 64 letters, digits, `_` or `-`",
                t.name.chars().take(64).collect::<String>()
            ));
        }
        if out.iter().any(|d| d.name == t.name) {
            return Err(format!("two front-end tools are named '{}'", t.name));
        }
        let parameters = match &t.parameters {
            Value::Null => json!({"type": "object", "properties": {}}),
            Value::Object(_) => t.parameters.clone(),
            other => {
                return Err(format!(
                    "front-end tool '{}': `parameters` is a JSON Schema object, not {}",
                    t.name,
                    kind(other)
                ))
            }
        };
        size += t.name.len() + t.description.len() + parameters.to_string().len();
        if size > limit {
            return Err(format!(
                "the front-end tools take more than {limit} bytes (Limits::max_message_bytes)"
            ));
        }
        out.push(ToolDefinition {
            name: t.name.clone(),
            description: t.description.clone(),
            parameters,
        });
    }
    for i in pending {
        let Some(name) = i
            .info
            .get(super::frontend_tool::FRONTEND_TOOL)
            .and_then(Value::as_str)
        else {
            continue;
        };
        if !out.iter().any(|d| d.name == name) {
            out.push(ToolDefinition {
                name: name.to_owned(),
                description: String::new(),
                parameters: json!({"type": "object", "properties": {}}),
            });
        }
    }
    Ok(out)
}

/// One answer to an interrupt.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ResumeEntry {
    /// The interrupt answered.
    pub interrupt_id: String,
    /// `resolved` or `cancelled`.
    pub status: String,
    /// The answer (for `resolved`).
    #[serde(default)]
    pub payload: Value,
}

/// The resume data of `resume` for the `pending` interrupts: each resolved entry's payload
/// (`null` for a cancelled one). Every pending interrupt must be answered, and nothing else.
pub(crate) fn resume_targets(
    resume: &[ResumeEntry],
    pending: &[InterruptInfo],
) -> Result<HashMap<String, Value>, String> {
    let mut targets = HashMap::new();
    for entry in resume {
        if !pending.iter().any(|i| i.id == entry.interrupt_id) {
            return Err(format!(
                "the thread waits on no interrupt '{}'",
                entry.interrupt_id.chars().take(64).collect::<String>()
            ));
        }
        let value = match entry.status.as_str() {
            "resolved" => entry.payload.clone(),
            "cancelled" => Value::Null,
            other => {
                return Err(format!(
                    "a resume entry's status is `resolved` or `cancelled`, not `{}`",
                    other.chars().take(32).collect::<String>()
                ))
            }
        };
        targets.insert(entry.interrupt_id.clone(), value);
    }
    if let Some(missing) = pending.iter().find(|i| !targets.contains_key(&i.id)) {
        return Err(format!(
            "the thread waits on interrupt '{}': answer every pending interrupt in `resume`",
            missing.id
        ));
    }
    Ok(targets)
}

/// The front-end tool call an interrupt stands for: its call id.
pub(crate) fn frontend_call(interrupt: &InterruptInfo) -> Option<&str> {
    interrupt.info.get(super::frontend_tool::FRONTEND_TOOL)?;
    interrupt.info.get("toolCallId")?.as_str()
}

/// The resume data the client's `tool` messages give the pending front-end tool calls: each
/// call's result, by interrupt id. Every pending interrupt must be such a call, answered.
pub(crate) fn tool_results(
    messages: &[Value],
    pending: &[InterruptInfo],
) -> Result<HashMap<String, Value>, String> {
    let mut targets = HashMap::new();
    for i in pending {
        let Some(call) = frontend_call(i) else {
            return Err(format!(
                "the thread waits on interrupt '{}': answer it in `resume`",
                i.id
            ));
        };
        let result = messages
            .iter()
            .rev()
            // Sent as the call went out (`ID~N` for a repeated model id: see `call_ids`).
            .find(|m| {
                m["role"] == "tool"
                    && m["toolCallId"]
                        .as_str()
                        .is_some_and(|id| super::call_ids::model_id(id) == call)
            })
            .ok_or_else(|| format!("the thread waits for the result of front-end tool call '{call}': send a `tool` message for it"))?;
        let content = match &result["content"] {
            Value::String(s) => Value::String(s.clone()),
            other => Value::String(other.to_string()),
        };
        targets.insert(i.id.clone(), content);
    }
    Ok(targets)
}

/// The text of the last user message of `messages` (a string, or the text parts of a list).
pub(crate) fn last_user_text(messages: &[Value]) -> Option<String> {
    let m = messages.iter().rev().find(|m| m["role"] == "user")?;
    match &m["content"] {
        Value::String(s) => Some(s.clone()),
        Value::Array(parts) => {
            let texts: Vec<&str> = parts
                .iter()
                .filter(|p| p["type"] == "text")
                .filter_map(|p| p["text"].as_str())
                .collect();
            Some(texts.join("\n"))
        }
        _ => None,
    }
}

/// A new id.
pub(crate) fn new_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// The `metadata` of an event from `agent` at `run_path`.
pub(crate) fn metadata(agent: &str, run_path: &RunPath) -> Value {
    json!({ "agentflow": { "agent": agent, "runPath": run_path.to_string() } })
}

/// The events of one whole message of `agent` at `run_path`: an assistant's text as
/// `TEXT_MESSAGE_START/CONTENT/END`, its tool calls as `TOOL_CALL_START/ARGS/END`, a tool's
/// result as `TOOL_CALL_RESULT`. `streamed_text` says the text went out already as chunks.
pub(crate) fn message_events(
    message: &Message,
    agent: &str,
    run_path: &RunPath,
    streamed_text: Option<&str>,
) -> Vec<Value> {
    let meta = metadata(agent, run_path);
    let mut out = Vec::new();
    let message_id = streamed_text.map_or_else(new_id, str::to_owned);
    match message.role {
        Role::Tool => {
            out.push(json!({
                "type": "TOOL_CALL_RESULT",
                "messageId": new_id(),
                "toolCallId": message.tool_call_id.clone().unwrap_or_default(),
                "content": message.content,
                "role": "tool",
                "metadata": meta,
            }));
        }
        _ => {
            if streamed_text.is_none() && !message.content.is_empty() {
                out.extend(text_events(&message_id, &message.content, &meta));
            }
            for call in &message.tool_calls {
                out.push(json!({
                    "type": "TOOL_CALL_START",
                    "toolCallId": call.id,
                    "toolCallName": call.name,
                    "parentMessageId": message_id,
                    "metadata": meta,
                }));
                if !call.arguments.is_empty() {
                    out.push(json!({"type": "TOOL_CALL_ARGS", "toolCallId": call.id, "delta": call.arguments}));
                }
                out.push(json!({"type": "TOOL_CALL_END", "toolCallId": call.id}));
            }
        }
    }
    out
}

/// `TEXT_MESSAGE_START`, one `TEXT_MESSAGE_CONTENT` and `TEXT_MESSAGE_END` for `text`.
pub(crate) fn text_events(message_id: &str, text: &str, meta: &Value) -> Vec<Value> {
    vec![
        json!({"type": "TEXT_MESSAGE_START", "messageId": message_id, "role": "assistant", "metadata": meta}),
        json!({"type": "TEXT_MESSAGE_CONTENT", "messageId": message_id, "delta": text}),
        json!({"type": "TEXT_MESSAGE_END", "messageId": message_id}),
    ]
}

/// The `CUSTOM` event of an action worth telling the front end: `agentflow.transfer`
/// (`{"from", "to", "runPath"}`) or `agentflow.interrupt` (`{"id", "info", "address"}`).
pub(crate) fn action_event(action: &Action, agent: &str, run_path: &RunPath) -> Option<Value> {
    let (name, value) = match action {
        Action::TransferToAgent(to) => (
            "agentflow.transfer",
            json!({ "from": agent, "to": &**to, "runPath": run_path.to_string() }),
        ),
        Action::Interrupted(info) => ("agentflow.interrupt", public_interrupt(info)),
        _ => return None,
    };
    Some(
        json!({"type": "CUSTOM", "name": name, "value": value, "metadata": metadata(agent, run_path)}),
    )
}

/// An interrupt as a client sees it: `{"id", "info", "address"}` (no saved state).
fn public_interrupt(info: &InterruptInfo) -> Value {
    json!(OutwardInterrupt::of(info))
}

/// The state the run starts with: the session values, and under `agentweave` the agent in
/// charge, where, and the turn.
pub(crate) fn state_snapshot(
    agent: &str,
    run_path: &RunPath,
    turn: u64,
    values: &OutwardValues,
) -> Value {
    let mut snapshot: Map<String, Value> = values
        .0
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    snapshot.insert(
        STATE_KEY.into(),
        json!({"agent": agent, "runPath": run_path.to_string(), "turn": turn}),
    );
    json!({"type": "STATE_SNAPSHOT", "snapshot": snapshot})
}

/// The state change when another agent takes over (JSON Patch).
pub(crate) fn state_delta(agent: &str, run_path: &RunPath) -> Value {
    json!({"type": "STATE_DELTA", "delta": [
        {"op": "replace", "path": format!("/{STATE_KEY}/agent"), "value": agent},
        {"op": "replace", "path": format!("/{STATE_KEY}/runPath"), "value": run_path.to_string()},
    ]})
}

/// The state change from session values `old` to `new` (JSON Patch, one operation per value
/// added, changed or removed), or `None` if none changed.
pub(crate) fn values_delta(old: &OutwardValues, new: &OutwardValues) -> Option<Value> {
    let pointer = |key: &str| format!("/{}", key.replace('~', "~0").replace('/', "~1"));
    let mut ops = Vec::new();
    for (k, v) in &new.0 {
        match old.0.get(k) {
            None => ops.push(json!({"op": "add", "path": pointer(k), "value": v})),
            Some(before) if before != v => {
                ops.push(json!({"op": "replace", "path": pointer(k), "value": v}))
            }
            Some(_) => {}
        }
    }
    for k in old.0.keys().filter(|k| !new.0.contains_key(*k)) {
        ops.push(json!({"op": "remove", "path": pointer(k)}));
    }
    (!ops.is_empty()).then(|| json!({"type": "STATE_DELTA", "delta": ops}))
}

/// The session values the client's `state` gives the run: its members but `agentweave` (the
/// server's own, sent back as the client got it). `null` gives none; anything but an object,
/// a framework value's key (`agentflow.*`) or more than `limit` bytes is refused.
pub(crate) fn state_values(state: &Value, limit: usize) -> Result<Vec<(String, Value)>, String> {
    let members = match state {
        Value::Null => return Ok(Vec::new()),
        Value::Object(members) => members,
        other => {
            return Err(format!(
                "`state` is a JSON object of session values, not {}",
                kind(other)
            ))
        }
    };
    let size = serde_json::to_vec(state).map_or(0, |b| b.len());
    if size > limit {
        return Err(format!(
            "`state` has {size} bytes; this server takes at most {limit} (Limits::max_message_bytes)"
        ));
    }
    let mut values = Vec::new();
    for (k, v) in members {
        if k == STATE_KEY {
            continue;
        }
        if OutwardValues::is_reserved(k) {
            return Err(format!(
                "`state` sets '{}', a value the framework keeps for itself (keys starting with \
                 `agentflow.`): leave it out",
                k.chars().take(64).collect::<String>()
            ));
        }
        values.push((k.clone(), v.clone()));
    }
    Ok(values)
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// `RUN_FINISHED` of a run that waits on `interrupts`: AG-UI's interrupt outcome, each
/// interrupt's question as its message.
pub(crate) fn interrupted(thread_id: &str, run_id: &str, interrupts: &[InterruptInfo]) -> Value {
    let list: Vec<Value> = interrupts
        .iter()
        .map(|i| {
            let mut m = Map::new();
            m.insert("id".into(), json!(i.id));
            m.insert("reason".into(), json!("input_required"));
            let message = match i.info.get("question").and_then(Value::as_str) {
                Some(q) => q.to_owned(),
                None => i.info.to_string(),
            };
            m.insert("message".into(), json!(message));
            m.insert("metadata".into(), json!({"agentflow": public_interrupt(i)}));
            Value::Object(m)
        })
        .collect();
    json!({"type": "RUN_FINISHED", "threadId": thread_id, "runId": run_id,
           "outcome": {"type": "interrupt", "interrupts": list}})
}

/// `RUN_FINISHED` of a run that ended with `answer`, or that waits on the front end for the
/// `pending` tool calls.
pub(crate) fn finished(
    thread_id: &str,
    run_id: &str,
    answer: Option<&str>,
    pending: &[&str],
) -> Value {
    let mut outcome = json!({"type": "success"});
    if !pending.is_empty() {
        outcome["pendingToolCallIds"] = json!(pending);
    }
    json!({"type": "RUN_FINISHED", "threadId": thread_id, "runId": run_id,
           "result": answer, "outcome": outcome})
}

/// `RUN_ERROR` of a refusal the server explains itself (an event over the size limit): the
/// text is the server's own, not an internal error's.
pub(crate) fn run_error(message: &str, code: &str) -> Value {
    json!({"type": "RUN_ERROR", "message": message, "code": code})
}

/// `RUN_ERROR` of a run that failed: the public error's message with its correlation id
/// (`"... (ref ID)"`), its stable code, and the whole public error in the metadata
/// (`{"agentflow": {"error": {"code", "message", "correlation_id", "agent"?}}}`).
pub(crate) fn run_failed(error: &PublicError) -> Value {
    json!({"type": "RUN_ERROR", "message": error.to_string(), "code": error.code.as_str(),
           "metadata": {"agentflow": {"error": error}}})
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentweave_runtime::ToolCall;

    fn interrupt(id: &str) -> InterruptInfo {
        let mut i = InterruptInfo::new(json!({"question": "Approve?"})).with_state(json!("secret"));
        i.id = id.into();
        i
    }

    #[test]
    fn an_assistant_message_is_text_then_tool_calls_and_a_result_is_a_tool_result() {
        let path = RunPath::root("triage");
        let mut m = Message::assistant("Let me look.");
        m.tool_calls.push(ToolCall {
            index: None,
            id: "c1".into(),
            name: "lookup".into(),
            arguments: r#"{"id":42}"#.into(),
        });
        let types: Vec<String> = message_events(&m, "triage", &path, None)
            .iter()
            .map(|e| e["type"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(
            types,
            [
                "TEXT_MESSAGE_START",
                "TEXT_MESSAGE_CONTENT",
                "TEXT_MESSAGE_END",
                "TOOL_CALL_START",
                "TOOL_CALL_ARGS",
                "TOOL_CALL_END"
            ]
        );
        let result = message_events(
            &Message::tool("found", "c1", "lookup"),
            "triage",
            &path,
            None,
        );
        assert_eq!(result[0]["type"], "TOOL_CALL_RESULT");
        assert_eq!(result[0]["toolCallId"], "c1");
        assert_eq!(result[0]["metadata"]["agentflow"]["runPath"], "triage");
    }

    #[test]
    fn an_interrupt_is_a_custom_event_and_the_interrupt_outcome_without_its_state() {
        let i = interrupt("desk/refund");
        let custom = action_event(
            &Action::interrupted(i.clone()),
            "refund",
            &RunPath::root("refund"),
        )
        .unwrap();
        assert_eq!(custom["name"], "agentflow.interrupt");
        let done = interrupted("t", "r", &[i]);
        assert_eq!(done["outcome"]["interrupts"][0]["message"], "Approve?");
        assert!(!format!("{custom}{done}").contains("secret"));
        let transfer = action_event(
            &Action::transfer_to("refund"),
            "triage",
            &RunPath::root("triage"),
        )
        .unwrap();
        assert_eq!(transfer["value"]["to"], "refund");
    }

    #[test]
    fn resume_entries_answer_every_pending_interrupt() {
        let pending = [interrupt("a"), interrupt("b")];
        let entry = |id: &str, status: &str| ResumeEntry {
            interrupt_id: id.into(),
            status: status.into(),
            payload: json!({"approve": true}),
        };
        let t =
            resume_targets(&[entry("a", "resolved"), entry("b", "cancelled")], &pending).unwrap();
        assert_eq!(t["a"], json!({"approve": true}));
        assert_eq!(t["b"], Value::Null);
        assert!(resume_targets(&[entry("a", "resolved")], &pending)
            .unwrap_err()
            .contains("'b'"));
        assert!(resume_targets(&[entry("z", "resolved")], &pending).is_err());
        assert!(resume_targets(&[entry("a", "maybe"), entry("b", "resolved")], &pending).is_err());
    }

    #[test]
    fn a_front_end_tool_call_is_answered_by_a_tool_message() {
        let mut call = InterruptInfo::new(
            json!({"frontendTool": "confirm", "toolCallId": "c9", "arguments": "{}"}),
        );
        call.id = "ui/confirm".into();
        let messages = [json!({"id": "m", "role": "tool", "toolCallId": "c9", "content": "yes"})];
        let t = tool_results(&messages, std::slice::from_ref(&call)).unwrap();
        assert_eq!(t["ui/confirm"], json!("yes"));
        assert!(tool_results(&[], std::slice::from_ref(&call))
            .unwrap_err()
            .contains("c9"));
        assert!(tool_results(&messages, &[interrupt("x")]).is_err());
        let done = finished("t", "r", None, &["c9"]);
        assert_eq!(done["outcome"]["pendingToolCallIds"][0], "c9");
    }

    #[test]
    fn the_state_is_the_session_values_and_changes_are_json_patch() {
        let values = |pairs: &[(&str, Value)]| {
            OutwardValues::of(
                &pairs
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.clone()))
                    .collect(),
            )
        };
        let before = values(&[
            ("cart", json!(["kettle"])),
            ("a/b", json!(1)),
            ("gone", json!(true)),
            ("agentflow.usage", json!({})),
        ]);
        let snapshot = state_snapshot("triage", &RunPath::root("triage"), 3, &before);
        assert_eq!(snapshot["snapshot"]["cart"], json!(["kettle"]));
        assert_eq!(snapshot["snapshot"]["agentflow"]["agent"], "triage");
        assert!(snapshot["snapshot"].get("agentflow.usage").is_none());
        let after = values(&[
            ("cart", json!(["kettle", "mug"])),
            ("a/b", json!(1)),
            ("new", json!(2)),
        ]);
        let delta = values_delta(&before, &after).unwrap();
        assert_eq!(
            delta["delta"],
            json!([
                {"op": "replace", "path": "/cart", "value": ["kettle", "mug"]},
                {"op": "add", "path": "/new", "value": 2},
                {"op": "remove", "path": "/gone"},
            ])
        );
        assert!(values_delta(&after, &after).is_none());
        let escaped =
            values_delta(&OutwardValues::default(), &values(&[("a/~b", json!(0))])).unwrap();
        assert_eq!(escaped["delta"][0]["path"], "/a~1~0b");
    }

    #[test]
    fn the_clients_state_sets_session_values_but_not_the_frameworks() {
        let given = json!({"cart": ["kettle"], "agentflow": {"agent": "x"}});
        assert_eq!(
            state_values(&given, 1000).unwrap(),
            vec![("cart".to_owned(), json!(["kettle"]))]
        );
        assert!(state_values(&Value::Null, 10).unwrap().is_empty());
        assert!(state_values(&json!([1]), 1000)
            .unwrap_err()
            .contains("an array"));
        assert!(state_values(&json!({"agentflow.usage": 1}), 1000)
            .unwrap_err()
            .contains("agentflow.usage"));
        assert!(state_values(&json!({"big": "x".repeat(100)}), 50)
            .unwrap_err()
            .contains("max_message_bytes"));
    }

    #[test]
    fn the_front_ends_tools_become_definitions_and_pending_calls_keep_theirs() {
        let tool = |name: &str| FrontendToolInput {
            name: name.into(),
            description: "Picks a date.".into(),
            parameters: Value::Null,
        };
        let defs = frontend_tools(&[tool("pick_date")], &[], 1000).unwrap();
        assert_eq!(defs[0].name, "pick_date");
        assert_eq!(defs[0].parameters["type"], "object");
        assert!(frontend_tools(&[tool("bad name")], &[], 1000).is_err());
        assert!(frontend_tools(&[tool("a"), tool("a")], &[], 1000).is_err());
        assert!(frontend_tools(&[tool("pick_date")], &[], 10)
            .unwrap_err()
            .contains("max_message_bytes"));
        let many: Vec<_> = (0..=MAX_FRONTEND_TOOLS)
            .map(|k| tool(&format!("t{k}")))
            .collect();
        assert!(frontend_tools(&many, &[], usize::MAX).is_err());
        let mut call = InterruptInfo::new(
            json!({"frontendTool": "confirm", "toolCallId": "c9", "arguments": "{}"}),
        );
        call.id = "ui/confirm".into();
        let defs = frontend_tools(&[], &[call, interrupt("x")], 1000).unwrap();
        assert_eq!(defs.len(), 1);
        assert_eq!(defs[0].name, "confirm");
    }

    #[test]
    fn the_last_user_message_starts_the_turn() {
        let messages = [
            json!({"id": "1", "role": "user", "content": "first"}),
            json!({"id": "2", "role": "assistant", "content": "ok"}),
            json!({"id": "3", "role": "user", "content": [{"type": "text", "text": "second"}]}),
        ];
        assert_eq!(last_user_text(&messages).unwrap(), "second");
        assert_eq!(last_user_text(&messages[1..2]), None);
    }
}
