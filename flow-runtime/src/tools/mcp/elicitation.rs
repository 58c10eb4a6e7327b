//! Elicitation: a server asking the user for input during a tool call (`elicitation/create`).

use std::sync::Arc;

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
/// use flow_runtime::mcp::{ElicitationAnswer, ElicitationHandler, ElicitationRequest};
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
