//! Why an MCP server could not be reached or a call to it failed.

use std::sync::Arc;
use std::time::Duration;

/// Why an MCP server could not be reached or a call to it failed. A tool call's error reaches
/// the model as [`ToolError::Failed`](crate::llm::tool::ToolError::Failed) with this text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum McpError {
    /// The configuration cannot work (an empty or ill-formed server name, say).
    #[error("MCP server '{server}' is misconfigured: {message}")]
    Config {
        /// The server's name.
        server: Arc<str>,
        /// What is wrong and how to fix it.
        message: Arc<str>,
    },
    /// The server could not be started or reached, or the MCP handshake failed.
    #[error(
        "could not connect to MCP server '{server}' ({target}): {message}; check that the \
         command runs (or the URL answers) and speaks MCP"
    )]
    Connect {
        /// The server's name.
        server: Arc<str>,
        /// The command line or URL.
        target: Arc<str>,
        /// What failed.
        message: Arc<str>,
    },
    /// Connecting took longer than the server's
    /// [`connect_timeout`](super::McpServerConfig::connect_timeout).
    #[error(
        "MCP server '{server}' did not finish connecting within {} ms (its connect_timeout); \
         the attempt was abandoned",
        .limit.as_millis()
    )]
    ConnectTimedOut {
        /// The server's name.
        server: Arc<str>,
        /// The limit.
        limit: Duration,
    },
    /// The server's process exited, or the connection dropped, while a call was running. The
    /// call was not sent again (it may have had effects); the next call reconnects.
    #[error(
        "MCP server '{server}' went away during the call to tool '{tool}' (its process exited \
         or the connection dropped): {message}; the call was not retried because it may have \
         had effects, and the next call will restart the server"
    )]
    Disconnected {
        /// The server's name.
        server: Arc<str>,
        /// The tool called.
        tool: Arc<str>,
        /// What the transport reported.
        message: Arc<str>,
    },
    /// The server no longer has the tool (its tool list changed since the agent was built).
    #[error(
        "MCP server '{server}' no longer has tool '{tool}'; its tools now are: {}",
        list_or_none(.available)
    )]
    ToolRemoved {
        /// The server's name.
        server: Arc<str>,
        /// The tool called (the server's name for it).
        tool: Arc<str>,
        /// The tools the server has now.
        available: Vec<Arc<str>>,
    },
    /// The server answered the call with a protocol error (not a tool error result).
    #[error("MCP server '{server}' refused the call to tool '{tool}': {message} (code {code})")]
    Protocol {
        /// The server's name.
        server: Arc<str>,
        /// The tool called.
        tool: Arc<str>,
        /// The JSON-RPC error code.
        code: i32,
        /// The server's message.
        message: Arc<str>,
    },
    /// The call took longer than the server's [`call_timeout`](super::McpServerConfig::call_timeout);
    /// the server was told to cancel it.
    #[error(
        "MCP server '{server}' did not answer the call to tool '{tool}' within {} ms (its \
         call_timeout); the call was cancelled",
        .limit.as_millis()
    )]
    CallTimedOut {
        /// The server's name.
        server: Arc<str>,
        /// The tool called.
        tool: Arc<str>,
        /// The limit.
        limit: Duration,
    },
    /// Two tools of a toolset would get the same name even after the prefix rule.
    #[error(
        "two MCP tools would both be named '{name}' (from servers {}); give the servers \
         names that do not make prefixed names collide",
        .servers.join(" and ")
    )]
    NameClash {
        /// The clashing name.
        name: Arc<str>,
        /// The servers offering it.
        servers: Vec<Arc<str>>,
    },
    /// The server sent more than the client reads ([`McpLimits`](super::McpLimits)): too many
    /// tool-list pages or tools, or a call result with too many blocks or bytes. What was read
    /// is dropped.
    #[error(
        "MCP server '{server}' sent {what} over this client's limit of {limit} \
         (McpLimits::{field}); the answer was dropped"
    )]
    LimitExceeded {
        /// The server's name.
        server: Arc<str>,
        /// What was too large (`a tool list of more pages`, `a result of more bytes`, ...).
        what: &'static str,
        /// The limit's field in [`McpLimits`](super::McpLimits).
        field: &'static str,
        /// The limit.
        limit: usize,
    },
    /// The tool is left out by the server's [`ToolFilter`](super::ToolFilter).
    #[error(
        "tool '{tool}' of MCP server '{server}' is not allowed for this agent (its tool \
         filter leaves it out)"
    )]
    ToolDenied {
        /// The server's name.
        server: Arc<str>,
        /// The tool (the server's name for it).
        tool: Arc<str>,
    },
    /// Listing the server's tools took longer than its
    /// [`connect_timeout`](super::McpServerConfig::connect_timeout).
    #[error(
        "MCP server '{server}' did not list its tools within {} ms (its connect_timeout)",
        .limit.as_millis()
    )]
    ListTimedOut {
        /// The server's name.
        server: Arc<str>,
        /// The limit.
        limit: Duration,
    },
    /// The server requires authorization (it answered `401` or `403` with a
    /// `WWW-Authenticate` challenge) and this client has no [`McpAuth`](super::McpAuth)
    /// for it.
    #[error(
        "MCP server '{server}' ({target}) requires authorization (it answered: \
         {challenge}); give its McpServerConfig an McpAuth (McpServerConfig::auth) or a \
         bearer_token"
    )]
    AuthRequired {
        /// The server's name.
        server: Arc<str>,
        /// The URL.
        target: Arc<str>,
        /// The server's `WWW-Authenticate` header.
        challenge: Arc<str>,
    },
    /// Authorizing with the server failed: metadata discovery, client registration, the
    /// user's consent, the token exchange or refresh, or the server refused the token again.
    #[error("MCP server '{server}': OAuth authorization failed: {message}")]
    Auth {
        /// The server's name.
        server: Arc<str>,
        /// What failed.
        message: Arc<str>,
    },
    /// The server answered the handshake with a protocol version this client does not speak.
    #[error(
        "MCP server '{server}' answered protocol version '{answered}', which this client does \
         not support (it offered '{offered}' and supports {}); use a server that speaks one \
         of them",
        .supported.join(", ")
    )]
    UnsupportedProtocolVersion {
        /// The server's name.
        server: Arc<str>,
        /// The version offered in `initialize`.
        offered: Arc<str>,
        /// The version the server answered.
        answered: Arc<str>,
        /// The versions this client speaks.
        supported: Vec<Arc<str>>,
    },
    /// Any other failure of the MCP client.
    #[error("MCP server '{server}': {message}")]
    Other {
        /// The server's name.
        server: Arc<str>,
        /// What failed.
        message: Arc<str>,
    },
}

fn list_or_none(names: &[Arc<str>]) -> String {
    if names.is_empty() {
        "none".to_owned()
    } else {
        names.join(", ")
    }
}
