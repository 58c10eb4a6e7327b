//! Elicitation: a server asking the user for input during a tool call (`elicitation/create`),
//! answered by the application's [`ElicitationHandler`] while the call waits, or through the
//! thread's interrupts ([`ElicitationGate`], set by
//! [`McpServerConfig::elicitation_by_interrupt`](super::McpServerConfig::elicitation_by_interrupt)).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use serde_json::json;

use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction};

/// What an MCP server asks the user while one of its tools runs.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ElicitationRequest {
    /// The server's name (from its [`McpServerConfig`](super::McpServerConfig)).
    pub server: Arc<str>,
    /// The server's message to the user.
    pub message: String,
    /// For a form: the JSON schema of the answer the server asks for (an object of
    /// primitive properties). `None` for a URL request.
    pub schema: Option<serde_json::Value>,
    /// For a URL request: the page the server asks the user to open. `None` for a form.
    pub url: Option<String>,
}

/// The user's answer to an [`ElicitationRequest`].
#[derive(Debug, Clone, PartialEq)]
pub enum ElicitationAnswer {
    /// The user answered: the form's values (a property the user left out that has a
    /// `default` in the schema is filled with it before the answer is sent), or nothing for a
    /// URL request.
    Accept(serde_json::Map<String, serde_json::Value>),
    /// The user said no; the server's tool goes on without the input.
    Decline,
    /// The user dismissed the question; the server's tool should stop.
    Cancel,
}

/// Answers the elicitation requests of MCP servers, on behalf of the user (set with
/// [`McpServerConfig::elicitation`](super::McpServerConfig::elicitation)). A server's request
/// waits for the answer; the tool call it belongs to is bounded by its `call_timeout` as usual.
///
/// ```
/// use agentweave_runtime::mcp::{ElicitationAnswer, ElicitationHandler, ElicitationRequest};
///
/// struct AlwaysDefaults;
///
/// #[async_trait::async_trait]
/// impl ElicitationHandler for AlwaysDefaults {
///     async fn elicit(&self, request: ElicitationRequest) -> ElicitationAnswer {
///         // A real application asks the user; this one accepts the schema's defaults.
///         let _ = request;
///         ElicitationAnswer::Accept(Default::default())
///     }
/// }
/// ```
#[async_trait::async_trait]
pub trait ElicitationHandler: Send + Sync {
    /// Asks the user `request` and returns the answer.
    async fn elicit(&self, request: ElicitationRequest) -> ElicitationAnswer;
}

/// The handler of a server configured without one: declines every request. (Such a client
/// does not declare the elicitation capability, so a server following the protocol does not
/// ask.)
#[derive(Debug, Clone, Copy, Default)]
pub struct DeclineElicitation;

#[async_trait::async_trait]
impl ElicitationHandler for DeclineElicitation {
    async fn elicit(&self, _request: ElicitationRequest) -> ElicitationAnswer {
        ElicitationAnswer::Decline
    }
}

/// Elicitation through the thread's interrupts: a tool call whose server asks the user is
/// answered `cancel` at once (a server that asks before it acts does nothing), and the call
/// ends the agent's run with an interrupt carrying the question; the thread waits, durably,
/// like any approval. The human's answer resumes the thread: the call is made again, and when
/// the server asks again its question gets the answer. Several questions in one call take as
/// many interrupts, the earlier answers kept in the interrupt's state.
///
/// MCP does not say which call an elicitation belongs to, so with the gate the calls to that
/// server are made one at a time.
pub(super) struct ElicitationGate {
    /// One call at a time.
    turn: tokio::sync::Mutex<()>,
    /// The call being made: the answers it brings, and the first question left unanswered.
    current: Mutex<Option<GatedCall>>,
}

struct GatedCall {
    answers: VecDeque<ElicitationAnswer>,
    asked: Option<ElicitationRequest>,
}

impl ElicitationGate {
    pub(super) fn new() -> Self {
        ElicitationGate {
            turn: tokio::sync::Mutex::new(()),
            current: Mutex::new(None),
        }
    }

    /// Holds the server for one call, which answers the server's questions with `answers` in
    /// order; the guard's [`finish`](GateGuard::finish) says what was asked beyond them.
    pub(super) async fn enter(&self, answers: Vec<ElicitationAnswer>) -> GateGuard<'_> {
        let turn = self.turn.lock().await;
        *self.current.lock().expect("elicitation gate") = Some(GatedCall {
            answers: answers.into(),
            asked: None,
        });
        GateGuard {
            gate: self,
            _turn: turn,
        }
    }
}

/// A call holding its server's [`ElicitationGate`].
pub(super) struct GateGuard<'a> {
    gate: &'a ElicitationGate,
    _turn: tokio::sync::MutexGuard<'a, ()>,
}

impl GateGuard<'_> {
    /// The first question the call's answers did not cover, if the server asked one.
    pub(super) fn finish(self) -> Option<ElicitationRequest> {
        let call = self.gate.current.lock().expect("elicitation gate").take();
        call.and_then(|c| c.asked)
    }
}

impl Drop for GateGuard<'_> {
    fn drop(&mut self) {
        if let Ok(mut current) = self.gate.current.lock() {
            *current = None;
        }
    }
}

#[async_trait::async_trait]
impl ElicitationHandler for ElicitationGate {
    async fn elicit(&self, request: ElicitationRequest) -> ElicitationAnswer {
        let mut current = self.current.lock().expect("elicitation gate");
        // Outside a tool call (`McpServer::call_tool` called directly): nobody to ask.
        let Some(call) = current.as_mut() else {
            return ElicitationAnswer::Cancel;
        };
        if call.asked.is_none() {
            if let Some(answer) = call.answers.pop_front() {
                return answer;
            }
            call.asked = Some(request);
        }
        ElicitationAnswer::Cancel
    }
}

/// The interrupt's `info` for `request`: the question, and how to answer it.
pub(super) fn interrupt_info(request: &ElicitationRequest) -> serde_json::Value {
    let mut elicitation = json!({ "server": &*request.server, "message": request.message });
    if let Some(schema) = &request.schema {
        elicitation["schema"] = schema.clone();
    }
    if let Some(url) = &request.url {
        elicitation["url"] = json!(url);
    }
    json!({
        "elicitation": elicitation,
        "answer": {
            "action": ["accept", "decline", "cancel"],
            "content": request.schema.clone().unwrap_or(serde_json::Value::Null),
        },
    })
}

/// A human's answer to an elicitation interrupt, as resume data:
/// `{"action": "accept", "content": {...}}`, `{"action": "decline"}` or
/// `{"action": "cancel"}`.
pub(super) fn parse_answer(data: &serde_json::Value) -> Result<ElicitationAnswer, String> {
    let action = data.get("action").and_then(serde_json::Value::as_str);
    match action {
        Some("accept") => match data.get("content") {
            None | Some(serde_json::Value::Null) => {
                Ok(ElicitationAnswer::Accept(Default::default()))
            }
            Some(serde_json::Value::Object(values)) => {
                Ok(ElicitationAnswer::Accept(values.clone()))
            }
            Some(_) => {
                Err("the answer's `content` must be a JSON object of the form's values".into())
            }
        },
        Some("decline") => Ok(ElicitationAnswer::Decline),
        Some("cancel") => Ok(ElicitationAnswer::Cancel),
        _ => Err(format!(
            "the answer to an MCP server's question must be {{\"action\": \"accept\", \"content\": \
             {{...}}}}, {{\"action\": \"decline\"}} or {{\"action\": \"cancel\"}}; got {}",
            data.to_string().chars().take(200).collect::<String>()
        )),
    }
}

/// An answer as kept in the interrupt's state (the inverse of [`parse_answer`]).
pub(super) fn answer_json(answer: &ElicitationAnswer) -> serde_json::Value {
    match answer {
        ElicitationAnswer::Accept(values) => json!({ "action": "accept", "content": values }),
        ElicitationAnswer::Decline => json!({ "action": "decline" }),
        ElicitationAnswer::Cancel => json!({ "action": "cancel" }),
    }
}

/// The server's request as an [`ElicitationRequest`] (`None` for a kind this client does not
/// know, which is declined).
pub(super) fn request(
    server: &Arc<str>,
    params: ElicitRequestParams,
) -> Option<ElicitationRequest> {
    match params {
        ElicitRequestParams::FormElicitationParams {
            message,
            requested_schema,
            ..
        } => Some(ElicitationRequest {
            server: Arc::clone(server),
            message,
            schema: serde_json::to_value(&requested_schema).ok(),
            url: None,
        }),
        ElicitRequestParams::UrlElicitationParams { message, url, .. } => {
            Some(ElicitationRequest {
                server: Arc::clone(server),
                message,
                schema: None,
                url: Some(url),
            })
        }
        #[allow(unreachable_patterns)]
        _ => None,
    }
}

/// The answer as the protocol's result, an accepted form completed with the schema's defaults
/// for the properties the answer leaves out (SEP-1034).
pub(super) fn result(request: &ElicitationRequest, answer: ElicitationAnswer) -> ElicitResult {
    match answer {
        ElicitationAnswer::Accept(mut content) => {
            let Some(schema) = &request.schema else {
                return ElicitResult::new(ElicitationAction::Accept);
            };
            if let Some(properties) = schema["properties"].as_object() {
                for (name, property) in properties {
                    if let Some(default) = property.get("default") {
                        content
                            .entry(name.clone())
                            .or_insert_with(|| default.clone());
                    }
                }
            }
            ElicitResult::new(ElicitationAction::Accept)
                .with_content(serde_json::Value::Object(content))
        }
        ElicitationAnswer::Decline => ElicitResult::new(ElicitationAction::Decline),
        ElicitationAnswer::Cancel => ElicitResult::new(ElicitationAction::Cancel),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_accepted_form_is_completed_with_the_schema_defaults() {
        let request = ElicitationRequest {
            server: "s".into(),
            message: "m".into(),
            schema: Some(json!({"type": "object", "properties": {
                "name": {"type": "string", "default": "John"},
                "age": {"type": "integer", "default": 30},
                "note": {"type": "string"}
            }})),
            url: None,
        };
        let mut given = serde_json::Map::new();
        given.insert("name".into(), json!("Ann"));
        let out = result(&request, ElicitationAnswer::Accept(given));
        assert_eq!(out.action, ElicitationAction::Accept);
        assert_eq!(out.content, Some(json!({"name": "Ann", "age": 30})));
        let out = result(&request, ElicitationAnswer::Decline);
        assert_eq!(
            (out.action, out.content),
            (ElicitationAction::Decline, None)
        );
        let out = result(&request, ElicitationAnswer::Cancel);
        assert_eq!(out.action, ElicitationAction::Cancel);
    }
}
