//! The MCP server handler of one session: who owns it, the tools (a tool per served flow), and
//! the calls (see `call`).

use std::borrow::Cow;
use std::sync::{Arc, OnceLock};

use axum::http::request::Parts;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ErrorCode, ErrorData, Implementation,
    InitializeRequestParams, InitializeResult, JsonObject, ListToolsResult, PaginatedRequestParams,
    ProtocolVersion, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{RoleServer, ServerHandler};
use serde_json::{json, Value};

use crate::auth::Tenant;
use crate::error::ApiError;
use crate::principal::{Principal, Scope};
use crate::state::{AppState, ServedFlow};

/// Who may list the tools: as `GET /v1/flows`.
const TOOL_READERS: &[Scope] = &[Scope::Read, Scope::Chat, Scope::Approve];

/// One MCP session's handler: the server's state and the principal that opened the session.
pub(crate) struct FlowTools {
    state: AppState,
    /// The principal id and tenant of the session's `initialize`: every later request of the
    /// session must come from them.
    owner: OnceLock<(Arc<str>, String)>,
}

/// The caller of one request: the principal and tenant the auth layer put in its extensions,
/// and the session id of its `Mcp-Session-Id` header.
pub(super) struct Caller {
    pub principal: Principal,
    pub tenant: String,
    pub session: Option<String>,
}

impl FlowTools {
    pub(super) fn new(state: AppState) -> Self {
        FlowTools {
            state,
            owner: OnceLock::new(),
        }
    }

    /// The request's caller, checked against the session's owner.
    fn caller(&self, context: &RequestContext<RoleServer>) -> Result<Caller, ErrorData> {
        let parts = context.extensions.get::<Parts>().ok_or_else(|| {
            tracing::error!("an MCP request came without its HTTP request's parts");
            ErrorData::internal_error("the server could not read the request", None)
        })?;
        let principal = parts.extensions.get::<Principal>().cloned();
        let tenant = parts.extensions.get::<Tenant>().map(|t| t.0.clone());
        let (Some(principal), Some(tenant)) = (principal, tenant) else {
            tracing::error!("the MCP endpoint is mounted outside the auth layer");
            return Err(refused(ApiError::Unauthorized));
        };
        let owner = self
            .owner
            .get_or_init(|| (Arc::from(principal.id()), tenant.clone()));
        if &*owner.0 != principal.id() || owner.1 != tenant {
            return Err(refused(ApiError::Forbidden(
                "this MCP session was opened by another principal: open a session of your own \
                 (initialize without an Mcp-Session-Id)"
                    .into(),
            )));
        }
        let session = parts
            .headers
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        Ok(Caller {
            principal,
            tenant,
            session,
        })
    }
}

/// A refusal of the server as a JSON-RPC error: `-32602` for bad input, `-32600` otherwise,
/// `data` `{"code": PUBLIC_CODE}`. The message is the public one ([`ApiError`]'s messages
/// carry no internal text; an incident's is its public message and correlation id).
pub(super) fn refused(error: ApiError) -> ErrorData {
    let code = match error {
        ApiError::BadRequest(_)
        | ApiError::PayloadTooLarge { .. }
        | ApiError::UnknownFlow { .. }
        | ApiError::Unprocessable(_) => ErrorCode::INVALID_PARAMS,
        ApiError::Incident(_) | ApiError::Internal | ApiError::StoreUnavailable => {
            ErrorCode::INTERNAL_ERROR
        }
        _ => ErrorCode::INVALID_REQUEST,
    };
    let body = error.body();
    let message = body["error"]["message"]
        .as_str()
        .unwrap_or("the request was refused")
        .to_owned();
    ErrorData::new(code, message, Some(json!({ "code": error.code() })))
}

/// The tool of a served flow: its name, its docs, and its input (the user's message, at most
/// `max_message_bytes`).
fn tool_of(flow: &ServedFlow, max_message_bytes: usize) -> Tool {
    let schema = json!({
        "type": "object",
        "properties": {
            "message": {
                "type": "string",
                "description": "The user's message: one turn of this MCP session's conversation with the flow.",
                "minLength": 1,
                "maxLength": max_message_bytes,
            }
        },
        "required": ["message"],
        "additionalProperties": false,
    });
    let Value::Object(schema) = schema else {
        unreachable!("a JSON object literal")
    };
    let description = flow.agent().flow_description();
    let description = if description.is_empty() {
        format!("The agentflow flow '{}'.", flow.name())
    } else {
        description.to_owned()
    };
    Tool::new(flow.name().to_owned(), description, Arc::new(schema))
}

impl ServerHandler for FlowTools {
    fn get_info(&self) -> ServerConfig {
        let mut info = InitializeResult::new(ServerCapabilities::builder().enable_tools().build());
        info.server_info = Implementation::new("agentflow", env!("CARGO_PKG_VERSION"));
        info.instructions = Some(
            "Each tool is an agentflow flow: call it with {\"message\": TEXT}; the calls of one \
             session are one conversation (a thread of each flow)."
                .into(),
        );
        info
    }

    /// The versions that have sessions and let a server ask the client (elicitation):
    /// `2026-07-28` has neither.
    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(ProtocolVersion::known_up_to(&ProtocolVersion::V_2025_11_25))
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        self.caller(&context)?;
        context.peer.set_peer_info(request.clone());
        self.negotiate_initialize(&request)
    }

    /// rmcp logs each session's `initialized` at INFO; the access log has the request already.
    async fn on_initialized(&self, _context: NotificationContext<RoleServer>) {
        tracing::debug!(target: "agentweave_server::mcp", "an MCP session is initialized");
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let caller = self.caller(&context)?;
        caller
            .principal
            .require_any(TOOL_READERS)
            .map_err(refused)?;
        let limit = self.state.limits().max_message_bytes;
        Ok(ListToolsResult::with_all_items(
            self.state.flows().map(|f| tool_of(f, limit)).collect(),
        ))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let caller = self.caller(&context)?;
        caller.principal.require(Scope::Chat).map_err(refused)?;
        let served = self.state.flow(&request.name).map_err(|_| {
            ErrorData::invalid_params(
                format!(
                    "no tool named '{}': tools/list lists this server's tools (a tool per flow)",
                    request.name.chars().take(64).collect::<String>()
                ),
                Some(json!({ "code": "unknown_tool" })),
            )
        })?;
        let message = message_of(
            request.arguments.as_ref(),
            self.state.limits().max_message_bytes,
        )
        .map_err(|m| ErrorData::invalid_params(m, Some(json!({ "code": "bad_request" }))))?;
        let result = super::call::call(&self.state, served, &caller, message, &context).await?;
        Ok(result.into())
    }
}

/// The user's message of a call's arguments, or what is wrong with them.
fn message_of(arguments: Option<&JsonObject>, limit: usize) -> Result<String, String> {
    const SHAPE: &str = "the arguments are {\"message\": TEXT}";
    let arguments = arguments.ok_or_else(|| format!("no arguments: {SHAPE}"))?;
    if let Some(other) = arguments.keys().find(|k| *k != "message") {
        return Err(format!(
            "unknown argument '{}': {SHAPE}",
            other.chars().take(64).collect::<String>()
        ));
    }
    let text = match arguments.get("message") {
        Some(Value::String(text)) => text,
        Some(_) => return Err(format!("`message` is not a string: {SHAPE}")),
        None => return Err(format!("no `message`: {SHAPE}")),
    };
    if text.trim().is_empty() {
        return Err("`message` is empty: send the user's message as text".into());
    }
    if text.len() > limit {
        return Err(format!(
            "the message has {} bytes; this server takes at most {limit} (Limits::max_message_bytes)",
            text.len()
        ));
    }
    Ok(text.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(value: Value) -> JsonObject {
        match value {
            Value::Object(m) => m,
            _ => unreachable!(),
        }
    }

    #[test]
    fn a_message_is_the_one_argument_and_is_bounded() {
        assert_eq!(
            message_of(Some(&args(json!({"message": "hi"}))), 10).unwrap(),
            "hi"
        );
        assert!(message_of(None, 10).unwrap_err().contains("no arguments"));
        assert!(message_of(Some(&args(json!({"message": 3}))), 10)
            .unwrap_err()
            .contains("not a string"));
        assert!(
            message_of(Some(&args(json!({"message": "hi", "x": 1}))), 10)
                .unwrap_err()
                .contains("unknown argument 'x'")
        );
        assert!(message_of(Some(&args(json!({"message": "  "}))), 10)
            .unwrap_err()
            .contains("empty"));
        assert!(
            message_of(Some(&args(json!({"message": "x".repeat(11)}))), 10)
                .unwrap_err()
                .contains("at most 10")
        );
    }

    #[test]
    fn refusals_keep_the_public_code_and_message() {
        let e = refused(ApiError::Forbidden("needs `chat`".into()));
        assert_eq!(e.code, ErrorCode::INVALID_REQUEST);
        assert_eq!(e.message, "needs `chat`");
        assert_eq!(e.data.unwrap()["code"], "forbidden");
        let e = refused(ApiError::Incident(crate::outward::PublicError::internal(
            &"disk /var/x failed",
        )));
        assert_eq!(e.code, ErrorCode::INTERNAL_ERROR);
        assert!(!e.message.contains("/var/x"), "{}", e.message);
    }
}
