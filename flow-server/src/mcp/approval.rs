//! An approval as MCP elicitation: the form asked (the question, `{"approve": boolean,
//! "reason"?: string}`), the answer read from it, and the tool result of a thread left waiting
//! (the question and the native route that answers it).

use std::collections::HashMap;
use std::time::Duration;

use agentweave_runtime::InterruptInfo;
use rmcp::model::{CallToolResult, ContentBlock, ElicitRequestParams, ElicitationAction};
use rmcp::service::{ElicitationMode, RequestContext};
use rmcp::RoleServer;
use serde_json::{json, Value};

use super::server::Caller;
use crate::outward::OutwardInterrupt;
use crate::state::ServedFlow;

/// How long the server waits for the client's answer to one approval form; past it the call
/// ends with the thread waiting (answered later through `/v1`).
pub const ELICITATION_TIMEOUT: Duration = Duration::from_secs(10 * 60);

/// The most characters of a `reason` kept.
const MAX_REASON_CHARS: usize = 2_000;

/// What asking the client gave.
pub(super) enum Asked {
    /// Every interrupt answered: interrupt id -> the approval's data.
    Answered(HashMap<String, Value>),
    /// Nobody answered here: why (said in the tool result).
    Waiting(String),
}

/// Whether an interrupt asks for an approval: its info has `approval` (a tool approval's
/// interrupt, `{"approval": {"tool", "arguments"}, "question"}`).
pub(super) fn is_approval(interrupt: &InterruptInfo) -> bool {
    interrupt.info.get("approval").is_some_and(Value::is_object)
}

/// An interrupt's question: its info's `question` when it is text, else its info as JSON.
fn question(interrupt: &InterruptInfo) -> String {
    match interrupt.info.get("question").and_then(Value::as_str) {
        Some(q) => q.to_owned(),
        None => interrupt.info.to_string(),
    }
}

/// Asks the client to answer `interrupts` when they are approvals, the caller may answer them
/// (the flow's rule, as the engine will check it) and the client takes form elicitation.
pub(super) async fn ask(
    served: &ServedFlow,
    caller: &Caller,
    interrupts: &[InterruptInfo],
    context: &RequestContext<RoleServer>,
) -> Asked {
    if !interrupts.iter().all(is_approval) {
        return Asked::Waiting("It asks a question an MCP approval form does not answer.".into());
    }
    let all: HashMap<String, Value> = interrupts
        .iter()
        .map(|i| (i.id.clone(), json!({ "approve": true })))
        .collect();
    let who = agentweave_runtime::Caller::from(&caller.principal);
    if let Err(refusal) =
        served
            .approvals()
            .rule()
            .check(Some(&who), interrupts, &all, Some(caller.principal.id()))
    {
        return Asked::Waiting(format!("You may not answer it here: {refusal}."));
    }
    if !context
        .peer
        .supported_elicitation_modes()
        .contains(&ElicitationMode::Form)
    {
        return Asked::Waiting("This MCP client does not take elicitation requests.".into());
    }
    let mut answers = HashMap::new();
    for interrupt in interrupts {
        let asked = context
            .peer
            .create_elicitation_with_timeout(form(interrupt), Some(ELICITATION_TIMEOUT))
            .await;
        let result = match asked {
            Ok(result) => result,
            Err(e) => {
                tracing::warn!(target: "agentweave_server::mcp", error = %e, "an approval form got no answer");
                return Asked::Waiting("The client gave no answer to the approval form.".into());
            }
        };
        match result.action {
            ElicitationAction::Accept => match decision(result.content.as_ref()) {
                Ok(data) => {
                    answers.insert(interrupt.id.clone(), data);
                }
                Err(why) => return Asked::Waiting(why),
            },
            ElicitationAction::Decline => {
                return Asked::Waiting("The approval form was declined without an answer.".into())
            }
            ElicitationAction::Cancel => {
                return Asked::Waiting("The approval form was cancelled.".into())
            }
            _ => return Asked::Waiting("The approval form came back unanswered.".into()),
        }
    }
    Asked::Answered(answers)
}

/// The form asking one approval.
fn form(interrupt: &InterruptInfo) -> ElicitRequestParams {
    let tool = interrupt.info["approval"]["tool"]
        .as_str()
        .unwrap_or_default();
    let message = match tool.is_empty() {
        true => question(interrupt),
        false => format!("{} (tool `{tool}`)", question(interrupt)),
    };
    serde_json::from_value(json!({
        "mode": "form",
        "message": message,
        "requestedSchema": {
            "type": "object",
            "properties": {
                "approve": {
                    "type": "boolean",
                    "title": "Approve",
                    "description": "true to approve, false to deny",
                },
                "reason": {
                    "type": "string",
                    "title": "Reason",
                    "description": "why (optional)",
                    "maxLength": MAX_REASON_CHARS,
                },
            },
            "required": ["approve"],
        },
    }))
    .expect("the approval form is a valid elicitation request")
}

/// The approval's data from an accepted form: `{"approve": BOOL, "reason"?: TEXT}`.
fn decision(content: Option<&Value>) -> Result<Value, String> {
    let approve = content
        .and_then(|c| c.get("approve"))
        .and_then(Value::as_bool)
        .ok_or_else(|| {
            "The approval form came back without `approve` (true or false); nothing was answered."
                .to_owned()
        })?;
    let mut data = json!({ "approve": approve });
    if let Some(reason) = content
        .and_then(|c| c.get("reason"))
        .and_then(Value::as_str)
        .filter(|r| !r.trim().is_empty())
    {
        data["reason"] = json!(reason.chars().take(MAX_REASON_CHARS).collect::<String>());
    }
    Ok(data)
}

/// The result of a call that leaves its thread waiting: not an error; the text asks the
/// question, says `why` nobody answered here and how to answer (the native route);
/// `structuredContent` is `{"status": "waiting", "flow", "thread", "interrupts"}`.
pub(super) fn waiting(
    flow: &str,
    thread: &str,
    interrupts: &[InterruptInfo],
    why: &str,
) -> CallToolResult {
    let questions: Vec<String> = interrupts.iter().map(question).collect();
    let ids: Vec<&str> = interrupts.iter().map(|i| i.id.as_str()).collect();
    let text = format!(
        "The flow waits for an answer: {}. {why} To answer, a principal the flow's approvals allow \
         sends POST /v1/flows/{flow}/threads/{thread}/resume with {{\"interrupt_id\": ID, \
         \"data\": {{\"approve\": true}}}} (or false) for the interrupt {}; the turn then goes on, \
         and the next call of this session continues the thread.",
        questions.join(" / "),
        ids.join(", "),
    );
    let public: Vec<Value> = interrupts
        .iter()
        .map(|i| json!(OutwardInterrupt::of(i)))
        .collect();
    let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
    result.structured_content = Some(json!({
        "status": "waiting",
        "flow": flow,
        "thread": thread,
        "interrupts": public,
    }));
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_accepted_form_gives_the_decision_and_a_bounded_reason() {
        assert_eq!(
            decision(Some(&json!({"approve": false, "reason": "too much"}))).unwrap(),
            json!({"approve": false, "reason": "too much"})
        );
        assert_eq!(
            decision(Some(&json!({"approve": true, "reason": " "}))).unwrap(),
            json!({"approve": true})
        );
        let long = "r".repeat(MAX_REASON_CHARS + 10);
        let data = decision(Some(&json!({"approve": true, "reason": long}))).unwrap();
        assert_eq!(data["reason"].as_str().unwrap().len(), MAX_REASON_CHARS);
        assert!(decision(Some(&json!({"approve": "yes"}))).is_err());
        assert!(decision(None).is_err());
    }

    #[test]
    fn the_form_asks_the_question_with_the_approval_schema() {
        let mut interrupt = InterruptInfo::default();
        interrupt.id = "i1".into();
        interrupt.info =
            json!({"question": "Refund 5 EUR?", "approval": {"tool": "refund", "arguments": {}}});
        let form = serde_json::to_value(form(&interrupt)).unwrap();
        assert_eq!(form["message"], "Refund 5 EUR? (tool `refund`)");
        assert_eq!(form["requestedSchema"]["required"], json!(["approve"]));
        assert_eq!(
            form["requestedSchema"]["properties"]["approve"]["type"],
            "boolean"
        );
    }
}
