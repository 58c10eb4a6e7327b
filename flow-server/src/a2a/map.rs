//! Every mapping between agentflow and A2A, in one place: an event's message and run path to
//! an A2A message and its metadata, a transfer to a status update's metadata, an interrupt to
//! the `input-required` state and the client's next message back to resume data, a turn's
//! outcome to a final state and an artifact, a stored turn to a task, and the server's errors
//! to JSON-RPC error codes.
//!
//! What a client sees goes through the [outward form](crate::outward): an interrupt is an
//! [`OutwardInterrupt`] (never its saved state), a failure a [`PublicError`] (a stable code,
//! a short message and a correlation id; the internal error is only in the server's log).

use std::collections::HashMap;

use agentweave_a2a::rpc::RpcError;
use agentweave_a2a::wire::{self, Artifact, Part, Role, TaskState, TaskStatus};
use agentweave_runtime::store::{RecordEnd, RecordStart, ThreadRecord};
use agentweave_runtime::{Action, InterruptInfo, Message, RunPath};
use serde_json::{json, Map, Value};

use crate::error::ApiError;
use crate::outward::{OutwardInterrupt, PublicError};

pub(crate) use agentweave_a2a::meta::METADATA_KEY;

/// The id of the artifact carrying a task's answer.
pub(crate) const ANSWER_ARTIFACT: &str = "answer";

/// The id of the artifact carrying the agent's plan (the kit's `write_plan`).
pub(crate) const PLAN_ARTIFACT: &str = "plan";

/// A new message id.
pub(crate) fn new_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// The metadata naming where an event came from:
/// `{"agentflow": {"agent": NAME, "runPath": "triage/refund"}}`.
pub(crate) fn path_metadata(agent: &str, run_path: &RunPath) -> Map<String, Value> {
    agentweave_a2a::meta::path_metadata(agent, &run_path.to_string())
}

/// The A2A form of an agent's message, or `None` for one with nothing to show (an empty
/// assistant message). Tool calls go in a data part `{"toolCalls": [...]}`; a tool's result
/// is a text part with `{"agentflow": {"toolResult": CALL_ID}}` in the part's metadata.
pub(crate) fn agent_message(
    message: &Message,
    agent: &str,
    run_path: &RunPath,
    context_id: &str,
    task_id: &str,
) -> Option<wire::Message> {
    let mut parts = Vec::new();
    if !message.content.is_empty() {
        let mut part = Part::text(message.content.clone());
        if let Some(call) = message.tool_call_id.as_deref() {
            let mut m = Map::new();
            m.insert(METADATA_KEY.into(), json!({ "toolResult": call }));
            part.metadata = Some(m);
        }
        parts.push(part);
    }
    if !message.tool_calls.is_empty() {
        let calls: Vec<Value> = message
            .tool_calls
            .iter()
            .map(|c| json!({ "id": c.id, "name": c.name, "arguments": c.arguments }))
            .collect();
        parts.push(Part::data(json!({ "toolCalls": calls })));
    }
    if parts.is_empty() {
        return None;
    }
    Some(wire::Message {
        message_id: new_id(),
        context_id: context_id.to_owned(),
        task_id: task_id.to_owned(),
        role: Role::Agent,
        parts,
        metadata: Some(path_metadata(agent, run_path)),
        reference_task_ids: Vec::new(),
    })
}

/// The metadata of a status update for an action worth telling the client: a transfer
/// (`{"agentflow": {"agent", "runPath", "transfer": TARGET}}`) or an exit. `None` for the
/// others (an interrupt is told by the `input-required` state).
pub(crate) fn action_metadata(
    action: &Action,
    agent: &str,
    run_path: &RunPath,
) -> Option<Map<String, Value>> {
    let mut m = path_metadata(agent, run_path);
    let entry = m.get_mut(METADATA_KEY)?.as_object_mut()?;
    match action {
        Action::TransferToAgent(target) => {
            entry.insert("transfer".into(), json!(target.to_string()));
        }
        Action::Exit => {
            entry.insert("exit".into(), json!(true));
        }
        _ => return None,
    }
    Some(m)
}

/// The agent's message of an `input-required` status: the question as text (an interrupt's
/// `info.question` when it is text, else its `info` as JSON) and a data part
/// `{"interrupts": [{"id", "info", "address", "answer"?}]}` (the agent's saved state stays in
/// the checkpoint); an approval's `answer` states what it takes (see [`approval_answer`]).
pub(crate) fn input_required(
    interrupts: &[InterruptInfo],
    context_id: &str,
    task_id: &str,
) -> wire::Message {
    let questions: Vec<String> = interrupts
        .iter()
        .map(|i| match i.info.get("question").and_then(Value::as_str) {
            Some(q) => q.to_owned(),
            None => i.info.to_string(),
        })
        .collect();
    let public: Vec<Value> = interrupts
        .iter()
        .map(|i| {
            let mut entry = json!(OutwardInterrupt::of(i));
            if is_approval(i) {
                entry["answer"] = approval_answer();
            }
            entry
        })
        .collect();
    wire::Message {
        message_id: new_id(),
        context_id: context_id.to_owned(),
        task_id: task_id.to_owned(),
        role: Role::Agent,
        parts: vec![
            Part::text(questions.join("\n")),
            Part::data(json!({ "interrupts": public })),
        ],
        metadata: None,
        reference_task_ids: Vec::new(),
    }
}

/// The agent's message of a `failed` status: the public error as text (its message and
/// correlation id) and in the metadata, `{"agentflow": {"error": {"code", "message",
/// "correlation_id", "agent"?}}}`. The internal error was logged when `error` was made.
pub(crate) fn failed(error: &PublicError, context_id: &str, task_id: &str) -> wire::Message {
    let mut metadata = Map::new();
    metadata.insert(METADATA_KEY.into(), json!({ "error": error }));
    wire::Message {
        message_id: new_id(),
        context_id: context_id.to_owned(),
        task_id: task_id.to_owned(),
        role: Role::Agent,
        parts: vec![Part::text(error.to_string())],
        metadata: Some(metadata),
        reference_task_ids: Vec::new(),
    }
}

/// Whether an interrupt asks for an approval: its info has `approval` (the shape of a tool
/// approval's interrupt, `{"approval": {"tool", "arguments"}, "question"}`).
pub(crate) fn is_approval(interrupt: &InterruptInfo) -> bool {
    interrupt.info.get("approval").is_some_and(Value::is_object)
}

/// The texts an approval takes as "yes" and as "no" (compared without case or surrounding
/// spaces and a final full stop).
const APPROVE_TEXTS: [&str; 3] = ["approve", "yes", "approved"];
const DENY_TEXTS: [&str; 3] = ["deny", "no", "denied"];

/// What an approval takes as an answer, stated in the input-required message: a data part
/// of this JSON schema, or one of these texts.
pub(crate) fn approval_answer() -> Value {
    json!({
        "schema": {
            "type": "object",
            "properties": {
                "approve": {"type": "boolean"},
                "reason": {"type": "string"}
            },
            "required": ["approve"]
        },
        "text": {"approve": APPROVE_TEXTS, "deny": DENY_TEXTS},
    })
}

/// The decision a text answer to an approval gives, or a refusal naming what is accepted
/// (never a silent "no", never the same question asked again).
fn approval_from_text(text: &str) -> Result<Value, RpcError> {
    let word = text
        .trim()
        .trim_end_matches(['.', '!'])
        .trim()
        .to_lowercase();
    if APPROVE_TEXTS.contains(&word.as_str()) {
        return Ok(json!({ "approve": true }));
    }
    if DENY_TEXTS.contains(&word.as_str()) {
        return Ok(json!({ "approve": false }));
    }
    Err(RpcError::InvalidParams(format!(
        "the task waits for an approval and the answer '{}' is neither a yes nor a no: answer \
         the text \"approve\" or \"deny\" (also \"yes\" or \"no\"), or a data part \
         {{\"approve\": true|false, \"reason\"?: TEXT}}; the task still waits",
        text.chars().take(64).collect::<String>()
    )))
}

/// The resume data the client's answer to an `input-required` task gives each pending
/// interrupt:
/// - a data part that is an object keyed by pending interrupt ids: each id gets its value;
/// - else the first data part's value, or the message's text as a JSON string, for every
///   pending interrupt; an approval takes a text as [`approval_from_text`] reads it.
pub(crate) fn resume_targets(
    message: &wire::Message,
    pending: &[InterruptInfo],
) -> Result<HashMap<String, Value>, RpcError> {
    if let Some(Value::Object(by_id)) = message.data() {
        if !by_id.is_empty() && by_id.keys().all(|k| pending.iter().any(|i| &i.id == k)) {
            return Ok(by_id.iter().map(|(k, v)| (k.clone(), v.clone())).collect());
        }
    }
    let text = match message.data() {
        Some(v) => return Ok(pending.iter().map(|i| (i.id.clone(), v.clone())).collect()),
        None => message.text(),
    };
    if text.trim().is_empty() {
        return Err(RpcError::InvalidParams(
            "the task waits for input: answer with a text or data part (a data part \
             keyed by interrupt id answers each interrupt apart)"
                .into(),
        ));
    }
    pending
        .iter()
        .map(|i| {
            let value = if is_approval(i) {
                approval_from_text(&text)?
            } else {
                Value::String(text.clone())
            };
            Ok((i.id.clone(), value))
        })
        .collect()
}

/// The text a new turn starts with: the message's text parts, else its first data part as
/// JSON text.
pub(crate) fn user_text(message: &wire::Message) -> Result<String, RpcError> {
    let text = message.text();
    if !text.trim().is_empty() {
        return Ok(text);
    }
    match message.data() {
        Some(v) => Ok(v.to_string()),
        None => Err(RpcError::InvalidParams(
            "the message has no text and no data part: send at least one".into(),
        )),
    }
}

/// The artifact carrying a task's answer.
pub(crate) fn answer_artifact(answer: &Message, agent: &str) -> Artifact {
    let mut metadata = Map::new();
    metadata.insert(METADATA_KEY.into(), json!({ "agent": agent }));
    Artifact {
        artifact_id: ANSWER_ARTIFACT.into(),
        name: ANSWER_ARTIFACT.into(),
        description: "The answer of the flow's last agent.".into(),
        parts: vec![Part::text(answer.content.clone())],
        metadata: Some(metadata),
    }
}

/// The artifact carrying the agent's plan as it is now (the thread value
/// [`PLAN_KEY`](agentweave_runtime::kit::PLAN_KEY) `plan` holds): a data part with the plan itself
/// (`{"steps": [{"step", "status"}]}`) and a text part with its checklist (`[x] done`,
/// `[>] in progress`, `[ ] pending`), for clients that show only text.
pub(crate) fn plan_artifact(plan: &Value) -> Artifact {
    let mut parts = vec![Part::data(plan.clone())];
    if let Ok(p) = <agentweave_runtime::kit::Plan as serde::Deserialize>::deserialize(plan) {
        parts.push(Part::text(p.render()));
    }
    Artifact {
        artifact_id: PLAN_ARTIFACT.into(),
        name: PLAN_ARTIFACT.into(),
        description: "The agent's plan: its steps and where each stands.".into(),
        parts,
        metadata: None,
    }
}

/// The JSON-RPC error for a request the server refused. A refusal of the request itself
/// (invalid parameters, an unknown task) keeps its helpful text; a failure inside the server
/// (the store, the model) is its public face only: [`ApiError`]'s text of it is the
/// [`PublicError`]'s message and correlation id, never the internal error.
pub(crate) fn rpc_error(e: ApiError) -> RpcError {
    let message = e.to_string();
    match e {
        ApiError::BadRequest(_)
        | ApiError::PayloadTooLarge { .. }
        | ApiError::IdempotencyKeyReused { .. }
        | ApiError::Unprocessable(_) => RpcError::InvalidParams(message),
        ApiError::UnknownThread { .. } | ApiError::UnknownCheckpoint { .. } => {
            RpcError::TaskNotFound(message)
        }
        ApiError::Forbidden(_) | ApiError::Unauthorized => RpcError::Forbidden(message),
        ApiError::Conflict(_) => RpcError::InvalidRequest(message),
        ApiError::UnknownFlow { .. } | ApiError::NoRoute | ApiError::MethodNotAllowed => {
            RpcError::MethodNotFound(message)
        }
        _ => RpcError::Internal(message),
    }
}

/// A task rebuilt from its turn's records in the store (the user's messages, what the agents
/// said, how it ended), for a task this process no longer holds.
pub(crate) fn task_from_records(
    records: &[ThreadRecord],
    turn: u64,
    context_id: &str,
    task_id: &str,
) -> Option<wire::Task> {
    let parts: Vec<&ThreadRecord> = records.iter().filter(|r| r.turn == turn).collect();
    let last = *parts.last()?;
    let mut history = Vec::new();
    let mut answer: Option<(&Message, &str)> = None;
    for record in &parts {
        match &record.start {
            RecordStart::Turn { input } => {
                for m in input {
                    history.push(user_message(&m.content, context_id, task_id));
                }
            }
            RecordStart::Resume { targets, .. } => {
                history.push(wire::Message {
                    parts: vec![Part::data(Value::Object(targets.clone()))],
                    ..user_message("", context_id, task_id)
                });
            }
            // A change of the thread's values is not a message.
            RecordStart::Values { .. } => {}
        }
        for event in &record.events {
            if let Some(m) = &event.message {
                if let Some(a) =
                    agent_message(m, &event.agent_name, &event.run_path, context_id, task_id)
                {
                    history.push(a);
                }
                if m.tool_calls.is_empty() && !m.content.is_empty() && m.tool_call_id.is_none() {
                    answer = Some((m, &event.agent_name));
                }
            }
        }
    }
    let mut task = wire::Task {
        id: task_id.to_owned(),
        context_id: context_id.to_owned(),
        history,
        ..wire::Task::default()
    };
    let at = Some(wire::rfc3339(last.at_ms));
    task.status = match &last.end {
        // Cancelled while it waited for input (`ThreadHandle::withdraw`).
        RecordEnd::Completed { .. } if agentweave_runtime::is_withdrawn(last) => TaskStatus {
            state: TaskState::Canceled,
            message: None,
            timestamp: at,
        },
        RecordEnd::Completed { .. } => {
            if let Some((m, agent)) = answer {
                task.artifacts.push(answer_artifact(m, agent));
            }
            TaskStatus {
                state: TaskState::Completed,
                message: None,
                timestamp: at,
            }
        }
        RecordEnd::Interrupted { interrupts, .. } => TaskStatus {
            state: TaskState::InputRequired,
            message: Some(input_required(interrupts, context_id, task_id)),
            timestamp: at,
        },
    };
    Some(task)
}

/// A user's message of a task, as text.
fn user_message(text: &str, context_id: &str, task_id: &str) -> wire::Message {
    wire::Message {
        message_id: new_id(),
        context_id: context_id.to_owned(),
        task_id: task_id.to_owned(),
        role: Role::User,
        parts: if text.is_empty() {
            Vec::new()
        } else {
            vec![Part::text(text)]
        },
        metadata: None,
        reference_task_ids: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentweave_a2a::meta::run_path_of;
    use agentweave_a2a::wire::Message as A2aMessage;

    fn interrupt(id: &str, info: Value) -> InterruptInfo {
        let mut i = InterruptInfo::new(info).with_state(json!({"secret": "saved state"}));
        i.id = id.into();
        i
    }

    fn answer(parts: Vec<Part>) -> A2aMessage {
        A2aMessage {
            role: Role::User,
            parts,
            ..A2aMessage::default()
        }
    }

    #[test]
    fn an_approval_takes_approve_or_deny_as_text_and_refuses_other_text() {
        let pending = [interrupt(
            "a1",
            json!({"question": "Refund?", "approval": {"tool": "refund", "arguments": {}}}),
        )];
        let asked = input_required(&pending, "c", "t");
        assert_eq!(
            asked.data().unwrap()["interrupts"][0]["answer"]["schema"]["required"][0],
            "approve"
        );
        let said = |text: &str| resume_targets(&answer(vec![Part::text(text)]), &pending);
        assert_eq!(said(" Approve. ").unwrap()["a1"], json!({"approve": true}));
        assert_eq!(said("deny").unwrap()["a1"], json!({"approve": false}));
        let refused = said("yes, approve it").unwrap_err();
        assert_eq!(refused.code(), -32602);
        assert!(
            refused.to_string().contains("\"approve\" or \"deny\""),
            "{refused}"
        );
        // Another interrupt takes the text as it is.
        let free = [interrupt("q1", json!({"question": "Which order?"}))];
        let targets = resume_targets(&answer(vec![Part::text("order 42")]), &free).unwrap();
        assert_eq!(targets["q1"], "order 42");
    }

    #[test]
    fn an_interrupt_is_input_required_with_its_question_and_without_its_state() {
        let pending = [interrupt("i1", json!({"question": "Approve 39 EUR?"}))];
        let m = input_required(&pending, "ctx", "task");
        assert_eq!(m.role, Role::Agent);
        assert_eq!(m.text(), "Approve 39 EUR?");
        assert_eq!(m.data().unwrap()["interrupts"][0]["id"], "i1");
        let wire = serde_json::to_string(&m).unwrap();
        assert!(!wire.contains("saved state"), "{wire}");
        // An interrupt without a textual question shows its info as JSON.
        let m = input_required(&[interrupt("i2", json!({"amount": 3}))], "c", "t");
        assert_eq!(m.text(), r#"{"amount":3}"#);
    }

    #[test]
    fn the_clients_next_message_is_the_resume_data() {
        let pending = [
            interrupt("i1", json!({"question": "a?"})),
            interrupt("i2", json!({"question": "b?"})),
        ];
        // A data part answers every pending interrupt.
        let t = resume_targets(
            &answer(vec![Part::data(json!({"approve": true}))]),
            &pending,
        )
        .unwrap();
        assert_eq!(t["i1"], json!({"approve": true}));
        assert_eq!(t["i2"], json!({"approve": true}));
        // Keyed by interrupt id: each gets its own.
        let t = resume_targets(
            &answer(vec![Part::data(
                json!({"i1": {"approve": true}, "i2": false}),
            )]),
            &pending,
        )
        .unwrap();
        assert_eq!(t["i1"], json!({"approve": true}));
        assert_eq!(t["i2"], json!(false));
        // Text alone is a JSON string.
        let t = resume_targets(&answer(vec![Part::text("yes")]), &pending[..1]).unwrap();
        assert_eq!(t["i1"], json!("yes"));
        // Nothing at all is refused with a code that says the parameters are wrong.
        let e = resume_targets(&answer(vec![]), &pending).unwrap_err();
        assert_eq!(e.code(), -32602);
    }

    #[test]
    fn a_run_path_goes_into_metadata_and_back() {
        let path = RunPath::root("triage").child("refund");
        let m = path_metadata("refund", &path);
        assert_eq!(m["agentflow"]["runPath"], "triage/refund");
        assert_eq!(run_path_of(Some(&m)).unwrap(), ["triage", "refund"]);
        assert_eq!(run_path_of(None), None);
        let message = agent_message(&Message::assistant("hi"), "refund", &path, "c", "t").unwrap();
        assert_eq!(
            run_path_of(message.metadata.as_ref()).unwrap(),
            ["triage", "refund"]
        );
        let transfer = action_metadata(
            &Action::transfer_to("refund"),
            "triage",
            &RunPath::root("triage"),
        )
        .unwrap();
        assert_eq!(transfer["agentflow"]["transfer"], "refund");
        assert!(agent_message(&Message::assistant(""), "a", &path, "c", "t").is_none());
    }

    #[test]
    fn server_errors_map_to_jsonrpc_codes() {
        let cases = [
            (ApiError::BadRequest("x".into()), -32602),
            (
                ApiError::UnknownThread {
                    flow: "f".into(),
                    id: "t".into(),
                },
                -32001,
            ),
            (ApiError::Conflict("busy".into()), -32600),
            (ApiError::Forbidden("needs `approve`".into()), -32600),
            (ApiError::Internal, -32603),
            (
                ApiError::Overloaded {
                    what: "turns",
                    limit: 1,
                },
                -32603,
            ),
        ];
        for (e, code) in cases {
            assert_eq!(rpc_error(e).code(), code);
        }
        // A refusal of the caller's authority is sent with HTTP 403 and its public code.
        let refused = rpc_error(ApiError::Forbidden("needs `approve`".into()));
        assert_eq!(refused.http_status(), 403);
        assert_eq!(refused.to_object().data.unwrap()["code"], "forbidden");
        assert_eq!(
            rpc_error(ApiError::Conflict("busy".into())).http_status(),
            200
        );
    }

    #[test]
    fn a_failure_is_its_public_face_and_a_store_failure_says_no_store_text() {
        let internal = "POST http://127.0.0.1:4999/v1: Connection refused (os error 111)";
        let e = PublicError::new(
            crate::outward::PublicCode::ModelUnavailable,
            &internal,
            None,
        );
        let m = failed(&e, "ctx", "task");
        let text = m.text();
        assert!(
            text.contains(e.message) && text.contains(&e.correlation_id),
            "{text}"
        );
        let meta = &m.metadata.as_ref().unwrap()[METADATA_KEY]["error"];
        assert_eq!(meta["code"], "model_unavailable");
        assert_eq!(meta["correlation_id"], e.correlation_id.as_str());
        let wire = serde_json::to_string(&m).unwrap();
        assert!(
            !wire.contains("127.0.0.1") && !wire.contains("os error"),
            "{wire}"
        );

        let store = agentweave_runtime::StoreError::Other {
            id: "desk.acme.t-1".into(),
            message: "disk full (os error 28)".into(),
        };
        let e = rpc_error(ApiError::from(store));
        assert_eq!(e.code(), -32603);
        let wire =
            serde_json::to_string(&agentweave_a2a::rpc::Response::err(json!(1), &e)).unwrap();
        assert!(wire.contains("could not be saved or read"), "{wire}");
        assert!(
            !wire.contains("desk.acme.t-1") && !wire.contains("os error"),
            "{wire}"
        );
    }

    #[test]
    fn a_message_without_text_or_data_starts_nothing() {
        assert_eq!(user_text(&answer(vec![])).unwrap_err().code(), -32602);
        assert_eq!(
            user_text(&answer(vec![Part::data(json!({"q": 1}))])).unwrap(),
            r#"{"q":1}"#
        );
    }
}
