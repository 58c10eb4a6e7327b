//! [`A2aAgent`]: a remote A2A agent as an agent of a tree (or, wrapped in an
//! [`AgentTool`](agentweave_runtime::AgentTool), as a tool).
//!
//! | agentflow | A2A |
//! | --- | --- |
//! | the node runs | `SendStreamingMessage`: one text part per message of the conversation the node sees under its context policy (`{"agentflow": {"role"}}` in each part's metadata), the turn's last user message last (`{"agentflow": {"role": "user", "request": true}}`) |
//! | the node's events, at the node's run path | the task's status messages, as assistant messages |
//! | an interrupt (`info.question`, `info.remote`; the remote task in its saved state) | the task's `input-required` status |
//! | the resume data | the next message of the same task (a text part for a string, else a data part) |
//! | the node's answer, then a transfer back to its parent | the task's completion (its artifacts) |
//! | an error event naming the peer and what went wrong | a failed, rejected or cancelled task, a JSON-RPC error, a bound of [`HttpLimits`](agentweave_runtime::model::HttpLimits) met |

use std::sync::Arc;

use agentweave_runtime::{
    generate, Agent, AgentError, AgentInput, Context, EventStream, ResumeInfo, Role, RunContext,
};
use futures::StreamExt;
use serde_json::{json, Value};

use crate::client::{A2aClient, A2aError};
use crate::meta::path_metadata;
use crate::wire::{
    AgentCard, Message as A2aMessage, Part, Role as A2aRole, SendMessageRequest, TaskState,
};

/// A remote A2A agent as an [`Agent`]: see the module documentation for the mapping.
///
/// ```no_run
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// use agentweave_a2a::{A2aAgent, A2aClient};
/// use agentweave_runtime::{set_sub_agents, FlowAgent, FnAgent};
///
/// let billing = A2aAgent::from_card("billing", "http://127.0.0.1:9999", None).await?;
/// let triage = FnAgent::new("triage", |cx, _| async move {
///     cx.transfer("billing");
///     Ok(())
/// });
/// let desk = set_sub_agents(FlowAgent::new(triage), [FlowAgent::new(billing)])?;
/// # let _ = desk; Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct A2aAgent {
    name: Arc<str>,
    description: String,
    client: A2aClient,
    transfer_back: bool,
}

impl A2aAgent {
    /// The remote agent `client` calls, named `name` in the tree.
    pub fn new(name: impl Into<Arc<str>>, client: A2aClient) -> Self {
        A2aAgent {
            name: name.into(),
            description: String::new(),
            client,
            transfer_back: true,
        }
    }

    /// Fetches the card of the agent at `base` (its URL, or its card's own URL) and calls the
    /// JSON-RPC interface it names; the card's description and skills become the node's
    /// description (what a transfer prompt tells the model about it). An interface on another
    /// origin than `base` is the card's choice, not yours: it is held to the strict outbound
    /// policy (`agentweave_runtime::outbound::OutboundPolicy::default`), so a card cannot point the
    /// node at a loopback, private or metadata address ([`A2aError::Refused`]).
    pub async fn from_card(
        name: impl Into<Arc<str>>,
        base: &str,
        token: Option<&str>,
    ) -> Result<Self, A2aError> {
        let mut probe = A2aClient::new(base)?;
        if let Some(t) = token {
            probe = probe.bearer(t);
        }
        let card = probe.fetch_card(base).await?;
        let endpoint = card
            .supported_interfaces
            .iter()
            .find(|i| i.protocol_binding.eq_ignore_ascii_case("JSONRPC"))
            .map(|i| i.url.clone())
            .ok_or_else(|| A2aError::Malformed {
                url: base.to_owned(),
                reason: "the agent card names no JSONRPC interface".into(),
            })?;
        // The card chose the endpoint: on another origin than `base`, it is held to the
        // strict outbound policy (a card must not send this client to an internal address).
        let same_origin = match (reqwest::Url::parse(base), reqwest::Url::parse(&endpoint)) {
            (Ok(b), Ok(e)) => b.origin() == e.origin(),
            _ => false,
        };
        let mut client = A2aClient::new(endpoint)?;
        if !same_origin {
            client = client.outbound(agentweave_runtime::outbound::OutboundPolicy::default())?;
        }
        if let Some(t) = token {
            client = client.bearer(t);
        }
        Ok(A2aAgent::new(name, client).description(describe(&card)))
    }

    /// What the node does (replaces the card's).
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = description.into();
        self
    }

    /// Whether the node transfers back to its parent when the remote task completes (on by
    /// default; without a parent, as a tool or a root, it never does).
    pub fn transfer_back(mut self, on: bool) -> Self {
        self.transfer_back = on;
        self
    }

    /// The client it calls through.
    pub fn client(&self) -> &A2aClient {
        &self.client
    }

    fn failed(&self, message: impl std::fmt::Display) -> AgentError {
        AgentError::Failed {
            agent: Arc::clone(&self.name),
            message: message.to_string().into(),
        }
    }

    /// Sends `message` and turns the remote task's updates into this node's events, to the
    /// task's end or its `input-required`.
    async fn exchange(&self, cx: &Context, message: A2aMessage) -> Result<(), AgentError> {
        let request = SendMessageRequest {
            message,
            ..SendMessageRequest::default()
        };
        let mut updates = self
            .client
            .send_streaming(&request)
            .await
            .map_err(|e| self.failed(e))?;
        let (mut task_id, mut context_id) = (String::new(), String::new());
        let mut said: Option<String> = None;
        let mut answer: Option<String> = None;
        while let Some(update) = updates.next().await {
            let update = update.map_err(|e| self.failed(e))?;
            let mut status = None;
            if let Some(task) = update.task {
                task_id = task.id;
                context_id = task.context_id;
                if let Some(text) = artifacts_text(&task.artifacts) {
                    answer = Some(text);
                }
                status = Some(task.status);
            }
            if let Some(m) = update.message {
                // A message instead of a task: the whole answer.
                let text = m.text();
                if !text.is_empty() {
                    cx.say(text);
                }
                return self.finish(cx);
            }
            if let Some(a) = update.artifact_update {
                if let Some(text) = artifacts_text(std::slice::from_ref(&a.artifact)) {
                    answer = Some(match (answer.take(), a.append) {
                        (Some(before), true) => before + &text,
                        _ => text,
                    });
                }
            }
            if let Some(s) = update.status_update {
                if task_id.is_empty() {
                    task_id = s.task_id;
                    context_id = s.context_id;
                }
                status = Some(s.status);
            }
            let Some(status) = status else { continue };
            let text = status.message.as_ref().map(said_text);
            match status.state {
                TaskState::InputRequired | TaskState::AuthRequired => {
                    let question = text.unwrap_or_default();
                    let data = status.message.as_ref().and_then(|m| m.data().cloned());
                    let info = json!({
                        "question": question,
                        "data": data,
                        "remote": {"agent": &*self.name, "taskId": task_id, "contextId": context_id},
                    });
                    let state = json!({"taskId": task_id, "contextId": context_id});
                    cx.interrupt_with_state(info, state);
                    return Ok(());
                }
                TaskState::Completed => {
                    if let Some(text) = text.filter(|t| !t.is_empty()) {
                        if said.as_deref() != Some(&text) {
                            cx.say(text.clone());
                            said = Some(text);
                        }
                    }
                    if let Some(answer) = answer.filter(|a| said.as_deref() != Some(a)) {
                        cx.say(answer);
                    }
                    return self.finish(cx);
                }
                TaskState::Failed | TaskState::Rejected | TaskState::Canceled => {
                    return Err(self.failed(format!(
                        "the remote task {task_id} ended {:?}: {}",
                        status.state,
                        text.unwrap_or_default()
                    )));
                }
                TaskState::Submitted | TaskState::Working | TaskState::Unspecified => {
                    if let Some(text) = text.filter(|t| !t.is_empty()) {
                        cx.say(text.clone());
                        said = Some(text);
                    }
                }
            }
        }
        Err(self.failed(format!(
            "the remote agent's stream ended before its task {task_id} ended or asked for input"
        )))
    }

    /// The node's end: back to the parent, if it has one and `transfer_back` is on.
    fn finish(&self, cx: &Context) -> Result<(), AgentError> {
        if self.transfer_back {
            if let Some(parent) = cx.node().and_then(|n| n.parent()) {
                cx.transfer(parent.name());
            }
        }
        Ok(())
    }

    fn message(&self, run: &RunContext, parts: Vec<Part>) -> A2aMessage {
        A2aMessage {
            message_id: uuid::Uuid::new_v4().to_string(),
            role: A2aRole::User,
            parts,
            metadata: Some(path_metadata(&self.name, &run.run_path().to_string())),
            ..A2aMessage::default()
        }
    }
}

/// What a remote message says: its text parts, less the tool results an agentflow peer marks
/// (`{"agentflow": {"toolResult": ID}}` in a part's metadata), which are its own business.
fn said_text(message: &A2aMessage) -> String {
    let texts: Vec<&str> = message
        .parts
        .iter()
        .filter(|p| {
            !p.metadata
                .as_ref()
                .and_then(|m| m.get(crate::meta::METADATA_KEY))
                .is_some_and(|e| e.get("toolResult").is_some())
        })
        .filter_map(|p| p.text.as_deref())
        .collect();
    texts.join("\n")
}

/// The text of `artifacts`' text parts, if any.
fn artifacts_text(artifacts: &[crate::wire::Artifact]) -> Option<String> {
    let texts: Vec<&str> = artifacts
        .iter()
        .flat_map(|a| a.parts.iter().filter_map(|p| p.text.as_deref()))
        .collect();
    (!texts.is_empty()).then(|| texts.join("\n"))
}

/// A node description from a card: its description, then its skills.
pub fn describe(card: &AgentCard) -> String {
    let mut out = card.description.clone();
    let skills: Vec<String> = card
        .skills
        .iter()
        .map(|s| {
            if s.description.is_empty() {
                s.name.clone()
            } else {
                format!("{}: {}", s.name, s.description.trim_end_matches('.'))
            }
        })
        .collect();
    if !skills.is_empty() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str("Skills: ");
        out.push_str(&skills.join("; "));
        out.push('.');
    }
    out
}

/// The request: the run's last user message (what the user asked this turn, not the
/// "For context:" forms of what other agents said), else its input's last message.
fn input_text(cx: &RunContext, input: &AgentInput) -> String {
    cx.root_input()
        .iter()
        .rev()
        .find(|m| m.role == Role::User)
        .or_else(|| input.messages.last())
        .map(|m| m.content.clone())
        .unwrap_or_default()
}

/// What the node sends: the conversation its input holds (the earlier turns and what other
/// agents said, as its context policy shaped them), one text part per message with text,
/// each marked with its role; then the request (see [`input_text`]), marked as such.
fn input_parts(cx: &RunContext, input: &AgentInput) -> Vec<Part> {
    let request = input_text(cx, input);
    // The request's own message, if the input holds it: it goes last.
    let own = input
        .messages
        .iter()
        .rposition(|m| m.role == Role::User && m.content == request);
    let mut parts: Vec<Part> = input
        .messages
        .iter()
        .enumerate()
        .filter(|(k, m)| Some(*k) != own && !m.content.is_empty())
        .map(|(_, m)| {
            marked(
                Part::text(m.content.clone()),
                json!({"role": m.role.to_string()}),
            )
        })
        .collect();
    parts.push(marked(
        Part::text(request),
        json!({"role": "user", "request": true}),
    ));
    parts
}

/// `part` with agentflow's entry `entry` in its metadata.
fn marked(mut part: Part, entry: Value) -> Part {
    let mut m = serde_json::Map::new();
    m.insert(crate::meta::METADATA_KEY.into(), entry);
    part.metadata = Some(m);
    part
}

impl Agent for A2aAgent {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn run(self: Arc<Self>, cx: RunContext, input: AgentInput) -> EventStream {
        let message = self.message(&cx, input_parts(&cx, &input));
        generate(
            cx,
            move |cx| async move { self.exchange(&cx, message).await },
        )
    }

    fn resume(
        self: Arc<Self>,
        cx: RunContext,
        _input: AgentInput,
        info: ResumeInfo,
    ) -> EventStream {
        let state = info.state().cloned().unwrap_or(Value::Null);
        let data = info.data().cloned();
        let question = info.info().cloned().unwrap_or(Value::Null);
        let mut message = self.message(&cx, Vec::new());
        generate(cx, move |cx| async move {
            let (Some(task), Some(context)) = (
                state.get("taskId").and_then(Value::as_str),
                state.get("contextId").and_then(Value::as_str),
            ) else {
                return Err(self.failed(
                    "resumed without the remote task it waits on (its saved state is missing)",
                ));
            };
            let Some(data) = data else {
                // Resumed without an answer for it: it keeps waiting.
                cx.interrupt_with_state(question, state.clone());
                return Ok(());
            };
            message.parts = vec![match data {
                Value::String(s) => Part::text(s),
                other => Part::data(other),
            }];
            message.task_id = task.to_owned();
            message.context_id = context.to_owned();
            self.exchange(&cx, message).await
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::AgentSkill;
    use agentweave_runtime::{Message, Session};

    #[test]
    fn the_node_sends_the_conversation_it_sees_and_the_request_last() {
        let request = Arc::new(Message::user("Send the invoice"));
        let cx = RunContext::new_run(Session::new(), [Arc::clone(&request)], false, "billing");
        let input = AgentInput {
            messages: vec![
                Arc::new(Message::user("Hi, I am Ada")),
                Arc::new(Message::assistant("Hello Ada.")),
                Arc::clone(&request),
                Arc::new(Message::user("For context: [triage] said: over to billing")),
                Arc::new(Message::assistant("")),
            ]
            .into(),
            streaming: false,
        };
        let parts = input_parts(&cx, &input);
        let texts: Vec<&str> = parts.iter().filter_map(|p| p.text.as_deref()).collect();
        assert_eq!(
            texts,
            [
                "Hi, I am Ada",
                "Hello Ada.",
                "For context: [triage] said: over to billing",
                "Send the invoice"
            ]
        );
        let entry = |k: usize| parts[k].metadata.as_ref().unwrap()["agentflow"].clone();
        assert_eq!(entry(1), json!({"role": "assistant"}));
        assert_eq!(entry(3), json!({"role": "user", "request": true}));
    }

    #[test]
    fn a_cards_skills_become_the_node_description() {
        let card = AgentCard {
            description: "Handles invoices.".into(),
            skills: vec![
                AgentSkill {
                    name: "refunds".into(),
                    description: "Pays money back.".into(),
                    ..AgentSkill::default()
                },
                AgentSkill {
                    name: "quotes".into(),
                    ..AgentSkill::default()
                },
            ],
            ..AgentCard::default()
        };
        assert_eq!(
            describe(&card),
            "Handles invoices. Skills: refunds: Pays money back; quotes."
        );
    }
}
