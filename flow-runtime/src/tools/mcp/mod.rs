//! Tools from [Model Context Protocol](https://modelcontextprotocol.io) servers (cargo feature
//! `mcp`), on the official Rust SDK (`rmcp`).
//!
//! - [`McpServerConfig`] says how to reach one server: a child process speaking MCP on its
//!   stdin/stdout ([`McpServerConfig::stdio`]) or a streamable HTTP endpoint
//!   ([`McpServerConfig::http`]).
//! - [`McpServer`] is one live connection; [`McpServer::tools`] gives the server's tools as
//!   [`Tool`](crate::Tool)s for a [`ChatModelAgent`](crate::ChatModelAgent), each with its input schema
//!   exactly as the server states it.
//! - [`McpToolset`] connects several servers and names their tools by the prefix rule below.
//!
//! # Calls and results
//!
//! The model's arguments (a JSON object) are sent as they are; the server checks them against
//! its schema. A result becomes the tool's text: its content blocks, one per line: text as it
//! is, an embedded text resource by its text, and anything else (an image, audio, a binary
//! resource, a resource link) described in brackets, e.g. `[image: image/png, 68 bytes]`. A
//! result with structured content and no content blocks becomes that content's JSON (a server
//! that sends both puts the same JSON in a text block, as the protocol asks). A result the server marks as an error (`isError`) is
//! answered to the model as a [`ToolError::Failed`](crate::ToolError::Failed) carrying that text, so the model can
//! correct itself; so are protocol errors and the failures of [`McpError`].
//!
//! Each call asks its server for progress (a progress token in the request): every
//! `notifications/progress` the server sends for it becomes a progress event of the call
//! (see `ToolContext::progress`), `{"progress": 2.0, "total": 5.0, "message": ...}` (`total`
//! and `message` when the server gives them), before the call's result.
//!
//! # Restarts, tool-list changes, hanging servers
//!
//! - **A server that exits or drops the connection.** The call that was running fails with
//!   [`McpError::Disconnected`]; it is not sent again (it may have had effects). The next call
//!   reconnects: for a stdio server it starts the process again, for HTTP it opens a new
//!   session; if that fails, the call fails with [`McpError::Connect`].
//! - **Tools that change.** The tools an agent has are fixed when it is built. When the server
//!   announces that its tool list changed, or answers a call with a protocol error, the list
//!   is read again (also when a call fails, since servers answer a call to a tool they do not
//!   have with an error); a call to a tool the server no longer has fails with
//!   [`McpError::ToolRemoved`], naming the tools it has now. Tools added later reach an agent
//!   built afterwards ([`McpServer::tools`] reads the current list).
//! - **A server that never answers.** A call is bounded by the agent's
//!   [`tool_timeout`](crate::ChatModelAgentBuilder::tool_timeout) and by the server's own
//!   [`call_timeout`](McpServerConfig::call_timeout) (default [`DEFAULT_CALL_TIMEOUT`]); when
//!   either fires the call is dropped and the server is sent `notifications/cancelled`; the
//!   connection stays usable. The call timeout bounds the whole call: the wait for the
//!   connection's lock, a reconnect, the re-read of the tool list before it, the call, and the
//!   re-read after an error answer (past the deadline that re-read is dropped and the answer
//!   stands). Connecting (starting the process, the MCP handshake, listing tools) and every
//!   re-read of the tool list are also bounded by
//!   [`connect_timeout`](McpServerConfig::connect_timeout), so no wait under the connection's
//!   lock is unbounded.
//! - **A server that sends too much.** Tool-list pages and tools, description bytes, result
//!   blocks and bytes are bounded by [`McpLimits`]: a description is cut, anything else over
//!   its limit is [`McpError::LimitExceeded`] naming the limit. (The SDK reads one message
//!   whole before this client sees it; its transport caps a line.)
//!
//! # Least privilege
//!
//! - A stdio server starts with an **empty environment** plus the variables named by
//!   [`inherit_env`](McpServerConfig::inherit_env) (`PATH` by default) and those set with
//!   [`env`](McpServerConfig::env): the service's tokens and API keys do not reach it. Give
//!   it a [`current_dir`](McpServerConfig::current_dir) of its own.
//! - [`allow_tools`](McpServerConfig::allow_tools) / [`deny_tools`](McpServerConfig::deny_tools)
//!   ([`ToolFilter`]) say which of a server's tools an agent gets: a tool left out is never
//!   offered to the model and a call to it is refused ([`McpError::ToolDenied`]).
//! - The SDK (`rmcp`) logs through `tracing`; it logs a server's instructions at INFO. Filter
//!   its target to WARN in production (`RUST_LOG=info,rmcp=warn`).
//! - **Ending the process.** A stdio server's process is ended when the last handle on its
//!   connection is dropped (the [`McpServer`], the [`McpToolset`] and every tool taken from
//!   them, so: the agent holding them): it is sent EOF on stdin and killed if it does not exit
//!   (and killed at once if the tokio runtime is shutting down). [`McpServer::shutdown`] does
//!   it now and waits.
//!
//! # Protocol version
//!
//! The client offers [`PROTOCOL_VERSION`] (`2025-11-25`, the latest version the MCP
//! specification defines with an `initialize` handshake) and accepts a server's answer if it is
//! one of [`SUPPORTED_PROTOCOL_VERSIONS`]; any other answer fails the connection with
//! [`McpError::UnsupportedProtocolVersion`], naming both.
//!
//! # Authorization (OAuth 2.1)
//!
//! An HTTP server that answers `401` with a `WWW-Authenticate` challenge needs authorization:
//! give its config an [`McpAuth`] ([`McpServerConfig::auth`]). The client then does what the
//! MCP authorization specification asks, on the SDK's implementation (`rmcp`'s `auth`, chosen
//! over code of our own: it follows the spec's discovery order and registration priority and
//! is checked by the same conformance suite):
//!
//! - discovery: the protected resource metadata the challenge names (`resource_metadata`), else
//!   the well-known paths of the server's URL; then the authorization server's metadata (OAuth,
//!   then OpenID Connect discovery), its issuer checked;
//! - the client: a pre-registered one ([`McpAuth::preregistered_client`]), a client ID metadata
//!   document ([`McpAuth::client_metadata_url`]) where the server supports them, else dynamic
//!   registration;
//! - the grant: the authorization code with PKCE (S256), the user sent to the authorization
//!   server by the application's [`AuthorizationRedirect`] (which returns the redirect it got
//!   back), client credentials with a secret ([`McpAuth::client_credentials`]) or with a JWT
//!   signed by the client's private key (`McpAuth::client_credentials_jwt`, feature
//!   `mcp-jwt`), or enterprise-managed
//!   authorization ([`McpAuth::enterprise_managed`]: an ID token exchanged at the enterprise
//!   identity provider, then the `jwt-bearer` grant); the `resource` indicator on
//!   every request; scopes from the challenge, else the resource's `scopes_supported`;
//! - tokens in a [`CredentialStore`] ([`McpAuth::token_store`]; [`InMemoryCredentialStore`] by
//!   default), refreshed when they expire or when the server rejects one (a `401` on a token:
//!   one silent refresh, then a new authorization);
//! - `403 insufficient_scope` (on the handshake or a call): authorization again for the scopes
//!   held plus the one asked for, then the call is sent again (a refused call had no effect);
//!   at most three times.
//!
//! A server that asks for authorization when no [`McpAuth`] is configured fails with
//! [`McpError::AuthRequired`] (its challenge in the message); a failed authorization (discovery,
//! registration, the user's consent, a token request) with [`McpError::Auth`]. A server with
//! an outbound policy ([`McpServerConfig::outbound`]) has its OAuth requests held to it as its
//! MCP requests are (discovery, registration, tokens, the enterprise-managed exchange: every
//! name resolved through the policy, refused addresses never connected to, same-origin
//! redirects, the policy's timeouts); without one, the SDK's own client refuses metadata URLs
//! that leave the server's address class (a public server's metadata naming a private
//! address), and the enterprise-managed exchange goes where the application and the metadata
//! say.
//!
//! Metadata whose `issuer` is not the URL it was fetched from is refused (RFC 8414 section
//! 3.3: the defence against an authorization server mix-up), with one exception for servers
//! of the 2025-03-26 revision: metadata at the root of the MCP server's own origin naming an
//! issuer on that same origin (`https://mcp.example.com/oauth`) is taken, since whoever answers
//! for the server answers for that issuer too. An issuer on another origin is refused with
//! [`McpError::Auth`] naming both.
//!
//! # Elicitation
//!
//! A server may ask the user for input while one of its tools runs (`elicitation/create`: a
//! message and the JSON schema of the answer, or a URL to open). With
//! [`McpServerConfig::elicitation`] the client declares the capability and hands each request
//! to the application's [`ElicitationHandler`] as an [`ElicitationRequest`]; its
//! [`ElicitationAnswer`] (accept with values, decline, cancel) goes back to the server, an
//! accepted form completed with the schema's `default`s for the properties the user left out.
//! Without a handler the capability is not declared and every request is declined
//! ([`DeclineElicitation`]). The call waits for the answer within its `call_timeout`.
//!
//! Or the thread asks the human, durably, as it asks approvals:
//! [`McpServerConfig::elicitation_by_interrupt`] turns the server's question into an interrupt
//! of the agent's run (the server told `cancel`); the answer given as resume data goes to the
//! server when the resumed call is made again and the server asks again.
//!
//! # Several servers: the prefix rule
//!
//! A tool keeps the name its server gives it, unless that name is not unique: when two or more
//! servers of an [`McpToolset`] offer a tool of the same name, or a tool has the name of a
//! built-in tool (`transfer_to_agent`, `exit`), each such tool is named
//! `<server>__<tool>` (the server's name from its [`McpServerConfig`], two underscores, the
//! tool's name). With [`McpToolset::always_prefix`] every tool is named that way. If a name is
//! still not unique, [`McpToolset::tools`] fails with [`McpError::NameClash`]. The server is
//! always called with the tool's own name.
//!
//! ```no_run
//! # async fn demo() -> Result<(), agentweave_runtime::mcp::McpError> {
//! use std::time::Duration;
//! use agentweave_runtime::mcp::{McpServerConfig, McpToolset};
//! use agentweave_runtime::model::{ScriptStep, ScriptedModel};
//! use agentweave_runtime::ChatModelAgent;
//!
//! let toolset = McpToolset::connect([
//!     McpServerConfig::stdio("files", "npx")
//!         .args(["-y", "@modelcontextprotocol/server-filesystem", "."]),
//!     McpServerConfig::http("docs", "http://127.0.0.1:8000/mcp"),
//! ])
//! .await?;
//! let agent = ChatModelAgent::builder("helper", ScriptedModel::new(Vec::<ScriptStep>::new()))
//!     .tools(toolset.tools()?)
//!     .tool_timeout(Duration::from_secs(30))
//!     .build()
//!     .expect("valid agent");
//! # let _ = agent;
//! # Ok(())
//! # }
//! ```
//!
//! # Files
//!
//! One concept a file: the server's configuration (`config`: [`McpServerConfig`], the
//! transport and its bounds), the errors (`error`: [`McpError`]), one live connection and its
//! reconnects (`connection`: [`McpServer`]), OAuth (`auth`: [`McpAuth`]), the server's questions
//! to the user (`elicitation`: [`ElicitationHandler`]), one server tool as a [`Tool`](crate::llm::tool::Tool)
//! (`tool`: [`McpTool`]), a call's result as text (`result`: [`result_text`]), and several
//! servers' tools under the prefix rule (`toolset`: [`McpToolset`]), the bounds on what a
//! server may send (`limits`: [`McpLimits`]) and which of its tools an agent gets (`filter`:
//! [`ToolFilter`]).

use std::time::Duration;

mod auth;
mod bounded;
mod config;
mod connection;
mod elicitation;
mod error;
mod filter;
mod guarded;
mod limits;
mod oauth_http;
mod result;
mod tool;
mod toolset;

#[cfg(feature = "mcp-jwt")]
pub use auth::JwtAlgorithm;
pub use auth::{
    AuthorizationRedirect, CredentialStore, EnterpriseIdp, InMemoryCredentialStore, McpAuth,
    StoredCredentials,
};
pub use config::McpServerConfig;
pub use connection::McpServer;
pub use elicitation::{
    DeclineElicitation, ElicitationAnswer, ElicitationHandler, ElicitationRequest,
};
pub use error::McpError;
pub use filter::ToolFilter;
pub use limits::McpLimits;
pub use result::result_text;
pub use tool::McpTool;
pub use toolset::McpToolset;

/// Default bound on connecting to a server: starting it, the MCP handshake, listing its tools.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// Default bound on one tool call ([`McpServerConfig::call_timeout`]).
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(60);

/// The separator of the prefix rule: a clashing tool `t` of server `s` is named `s__t`.
pub const PREFIX_SEPARATOR: &str = "__";

/// The protocol version this client offers in `initialize`: the latest the MCP specification
/// defines with an `initialize` handshake.
pub const PROTOCOL_VERSION: &str = "2025-11-25";

/// The protocol versions this client speaks, oldest first: a server may answer `initialize`
/// with any of them; another answer fails with [`McpError::UnsupportedProtocolVersion`].
pub const SUPPORTED_PROTOCOL_VERSIONS: &[&str] =
    &["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];
