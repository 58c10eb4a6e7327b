//! Every served flow as a tool of an MCP server (the `mcp` feature), for clients of the Model
//! Context Protocol (the official TypeScript and Python SDKs, Claude Desktop, IDEs, other agent
//! frameworks).
//!
//! | method and path | scope | what it does |
//! | --- | --- | --- |
//! | `POST`, `GET`, `DELETE /v1/mcp` | `read`, `chat` or `approve` to list the tools (as `GET /v1/flows`), `chat` to call one (`approve` to answer an approval) | MCP's streamable HTTP transport (protocol versions 2024-11-05 to 2025-11-25, sessions) |
//!
//! How agentflow's concepts map to MCP's:
//!
//! | agentflow | MCP |
//! | --- | --- |
//! | a served flow | a tool named like the flow, described by the flow's docs (`flow_description`), taking `{"message": TEXT}` (the user's message) |
//! | a thread | an MCP session (`Mcp-Session-Id`): each flow's thread of the session is `mcp-HASH` (a hash of the session id) under the caller's tenant; a session belongs to the principal that opened it |
//! | a turn | a `tools/call`: the flow's answer is the tool result's text; a turn runs through the engine like every door's (journaled, recorded), to its end even if the client goes away |
//! | what the agents say while the turn runs | `notifications/progress` (when the call has a `progressToken`): the count of messages and the last one's text |
//! | an approval (an interrupt whose info has `approval`) | `elicitation/create` with the question and the schema `{"approve": boolean, "reason"?: string}`, sent when the caller may answer it (the flow's [`Approvals`](crate::Approvals)) and the client declared elicitation; the answer resumes the turn (the engine checks who answered) and the call goes on to the turn's end |
//! | an interrupt nobody in the session may answer (no `approve`, a client without elicitation, a declined or cancelled form, another kind of question) | the tool result (not an error) says the thread waits, asks the question, and names the native route that answers it (`POST /v1/flows/{flow}/threads/{thread}/resume`); `structuredContent` is `{"status": "waiting", "thread", "interrupts"}` |
//! | a failed turn | a tool result with `isError`: the public message and its correlation id (the internal error only in the server's log) |
//! | the server's refusals | JSON-RPC errors: `-32602` an unknown tool, arguments that are not `{"message": TEXT}` or a message over [`Limits::max_message_bytes`](crate::Limits); `-32600` a missing scope (`data.code` `"forbidden"`); any request of another principal's (or tenant's) session is HTTP 403, a closed or unknown session 404, a body over [`Limits::max_body_bytes`](crate::Limits) 413 |
//!
//! Sessions live in the memory of the process that opened them (rmcp's session manager; idle
//! ones close after [`SESSION_IDLE`]); the threads live in the store, so a client that opens a
//! new session starts a new thread, and the old one stays readable through `/v1`.
//!
//! Files:
//! - `owners`: a session belongs to the principal that opened it (a layer before the transport).
//! - `server`: the MCP server handler (the session's owner, `tools/list`, `tools/call`).
//! - `call`: one tool call: the turn, its progress, its approvals, its result.
//! - `approval`: an approval as an elicitation form, and the result of a thread left waiting.

mod approval;
mod call;
mod owners;
mod server;

use std::sync::Arc;
use std::time::Duration;

use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

use crate::state::AppState;

/// How long an MCP session may stay idle before the server closes it (its threads stay).
pub const SESSION_IDLE: Duration = Duration::from_secs(30 * 60);

/// The MCP endpoint's route, `/mcp`, to merge into `/v1` before its authentication layer: the
/// sessions' owners checked, then rmcp's transport.
pub(crate) fn routes(state: &AppState) -> axum::Router<AppState> {
    axum::Router::new()
        .route_service("/mcp", service(state))
        .layer(axum::middleware::from_fn_with_state(
            owners::Owners::default(),
            owners::guard,
        ))
}

/// rmcp's streamable HTTP transport, a [`server::FlowTools`] per session.
fn service(state: &AppState) -> StreamableHttpService<server::FlowTools, LocalSessionManager> {
    let mut sessions = LocalSessionManager::default();
    sessions.session_config.keep_alive = Some(SESSION_IDLE);
    let mut config = StreamableHttpServerConfig::default()
        .with_max_request_body_bytes(state.limits().max_body_bytes)
        .with_sse_keep_alive(Some(state.limits().sse_keep_alive));
    if !state.auth().is_dev_mode() {
        // Every request carries the server's credentials (a bearer token, never a cookie), so a
        // page of another site cannot use a browser's; without auth (dev mode, loopback only)
        // rmcp's loopback `Host` check stays, against DNS rebinding.
        config = config.disable_allowed_hosts();
    }
    let state = state.clone();
    StreamableHttpService::new(
        move || Ok(server::FlowTools::new(state.clone())),
        Arc::new(sessions),
        config,
    )
}
