//! Tools from [Model Context Protocol](https://modelcontextprotocol.io) servers (cargo feature
//! `mcp`), on the official Rust SDK (`rmcp`).
//!
//! - [`McpServerConfig`] says how to reach one server: a child process speaking MCP on its
//!   stdin/stdout ([`McpServerConfig::stdio`]) or a streamable HTTP endpoint
//!   ([`McpServerConfig::http`]).
//! - [`McpServer`] is one live connection; [`McpServer::tools`] gives the server's tools as
//!   [`Tool`]s for a [`ChatModelAgent`](crate::ChatModelAgent), each with its input schema
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
//! answered to the model as a [`ToolError::Failed`] carrying that text, so the model can
//! correct itself; so are protocol errors and the failures of [`McpError`].
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
//!   [`call_timeout`](McpServerConfig::call_timeout); when either fires the call is dropped and
//!   the server is sent `notifications/cancelled`; the connection stays usable. Connecting
//!   (starting the process, the MCP handshake, listing tools) is bounded by
//!   [`connect_timeout`](McpServerConfig::connect_timeout).
//! - **Ending the process.** A stdio server's process is ended when the last handle on its
//!   connection is dropped (the [`McpServer`], the [`McpToolset`] and every tool taken from
//!   them, so: the agent holding them): it is sent EOF on stdin and killed if it does not exit
//!   (and killed at once if the tokio runtime is shutting down). [`McpServer::shutdown`] does
//!   it now and waits.
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
//! # async fn demo() -> Result<(), flow_runtime::mcp::McpError> {
//! use std::time::Duration;
//! use flow_runtime::mcp::{McpServerConfig, McpToolset};
//! use flow_runtime::model::{ScriptStep, ScriptedModel};
//! use flow_runtime::ChatModelAgent;
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

use std::collections::{HashMap, HashSet};
use std::ffi::OsString;
use std::fmt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

use async_trait::async_trait;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, ContentBlock,
    ErrorCode, Implementation, ResourceContents,
};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientCacheConfig, ClientHandler, RoleClient, ServiceError, ServiceExt};

use crate::llm::tool::{Tool, ToolContext, ToolError};
use crate::llm::EXIT_TOOL_NAME;
use crate::transfer::TRANSFER_TOOL_NAME;

/// Default bound on connecting to a server: starting it, the MCP handshake, listing its tools.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// The separator of the prefix rule: a clashing tool `t` of server `s` is named `s__t`.
pub const PREFIX_SEPARATOR: &str = "__";

/// Why an MCP server could not be reached or a call to it failed. A tool call's error reaches
/// the model as [`ToolError::Failed`] with this text.
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
    /// [`connect_timeout`](McpServerConfig::connect_timeout).
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
    /// The call took longer than the server's [`call_timeout`](McpServerConfig::call_timeout);
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

/// How to reach an MCP server, and the bounds on talking to it.
#[derive(Clone)]
pub struct McpServerConfig {
    name: Arc<str>,
    transport: TransportConfig,
    connect_timeout: Duration,
    call_timeout: Option<Duration>,
}

#[derive(Clone)]
enum TransportConfig {
    Stdio {
        program: OsString,
        args: Vec<OsString>,
        env: Vec<(OsString, OsString)>,
        current_dir: Option<PathBuf>,
        inherit_stderr: bool,
    },
    Http {
        url: Arc<str>,
        bearer_token: Option<Arc<str>>,
    },
}

impl fmt::Debug for McpServerConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpServerConfig")
            .field("name", &self.name)
            .field("target", &self.target())
            .field("connect_timeout", &self.connect_timeout)
            .field("call_timeout", &self.call_timeout)
            .finish_non_exhaustive()
    }
}

impl McpServerConfig {
    /// A server run as a child process (`program` with the [`args`](Self::args) given next),
    /// speaking MCP over its stdin and stdout. `name` names it in errors and in the
    /// [prefix rule](self#several-servers-the-prefix-rule): letters, digits, `_` and `-`.
    /// Its stderr is discarded unless [`inherit_stderr`](Self::inherit_stderr) is set.
    ///
    /// Run the server itself (`node server.js`, `python server.py`) rather than through a
    /// launcher that forks it, so that ending the process ends the server.
    pub fn stdio(name: impl Into<Arc<str>>, program: impl Into<OsString>) -> Self {
        Self::new(
            name,
            TransportConfig::Stdio {
                program: program.into(),
                args: Vec::new(),
                env: Vec::new(),
                current_dir: None,
                inherit_stderr: false,
            },
        )
    }

    /// A server at a streamable HTTP endpoint (`http://host:port/mcp`; `https` too).
    pub fn http(name: impl Into<Arc<str>>, url: impl Into<Arc<str>>) -> Self {
        Self::new(
            name,
            TransportConfig::Http {
                url: url.into(),
                bearer_token: None,
            },
        )
    }

    fn new(name: impl Into<Arc<str>>, transport: TransportConfig) -> Self {
        McpServerConfig {
            name: name.into(),
            transport,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            call_timeout: None,
        }
    }

    /// Adds an argument to a stdio server's command line (ignored for HTTP).
    pub fn arg(mut self, arg: impl Into<OsString>) -> Self {
        if let TransportConfig::Stdio { args, .. } = &mut self.transport {
            args.push(arg.into());
        }
        self
    }

    /// Adds arguments to a stdio server's command line (ignored for HTTP).
    pub fn args<I, S>(mut self, more: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        if let TransportConfig::Stdio { args, .. } = &mut self.transport {
            args.extend(more.into_iter().map(Into::into));
        }
        self
    }

    /// Sets an environment variable of a stdio server's process (ignored for HTTP).
    pub fn env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        if let TransportConfig::Stdio { env, .. } = &mut self.transport {
            env.push((key.into(), value.into()));
        }
        self
    }

    /// The working directory of a stdio server's process (ignored for HTTP).
    pub fn current_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        if let TransportConfig::Stdio { current_dir, .. } = &mut self.transport {
            *current_dir = Some(dir.into());
        }
        self
    }

    /// Lets a stdio server's stderr through to this process's stderr (default: discarded).
    pub fn inherit_stderr(mut self, inherit: bool) -> Self {
        if let TransportConfig::Stdio { inherit_stderr, .. } = &mut self.transport {
            *inherit_stderr = inherit;
        }
        self
    }

    /// Sends `Authorization: Bearer TOKEN` to an HTTP server (ignored for stdio).
    pub fn bearer_token(mut self, token: impl Into<Arc<str>>) -> Self {
        if let TransportConfig::Http { bearer_token, .. } = &mut self.transport {
            *bearer_token = Some(token.into());
        }
        self
    }

    /// Bounds connecting: starting the process or opening the session, the MCP handshake and
    /// listing the tools (default [`DEFAULT_CONNECT_TIMEOUT`]).
    pub fn connect_timeout(mut self, limit: Duration) -> Self {
        self.connect_timeout = limit;
        self
    }

    /// Bounds each tool call (default: none; the agent's
    /// [`tool_timeout`](crate::ChatModelAgentBuilder::tool_timeout) bounds it too).
    pub fn call_timeout(mut self, limit: Duration) -> Self {
        self.call_timeout = Some(limit);
        self
    }

    /// The server's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The command line or URL, for messages.
    fn target(&self) -> String {
        match &self.transport {
            TransportConfig::Stdio { program, args, .. } => std::iter::once(program)
                .chain(args)
                .map(|a| a.to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join(" "),
            TransportConfig::Http { url, .. } => url.to_string(),
        }
    }

    fn validate(&self) -> Result<(), McpError> {
        let ok = !self.name.is_empty()
            && self
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if ok {
            Ok(())
        } else {
            Err(McpError::Config {
                server: Arc::clone(&self.name),
                message: "a server name must be non-empty and use only ASCII letters, digits, \
                          '_' and '-' (it may prefix tool names, which models restrict so)"
                    .into(),
            })
        }
    }
}

/// Receives the server's notifications: remembers that its tool list changed.
struct Handler {
    tools_changed: Arc<AtomicBool>,
}

impl ClientHandler for Handler {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.tools_changed.store(true, Ordering::SeqCst);
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("agentflow", env!("CARGO_PKG_VERSION")),
        )
    }
}

/// One live connection: the running client (which owns the transport and so the child
/// process) and the tools as last listed.
struct Live {
    service: RunningService<RoleClient, Handler>,
    tools: Vec<rmcp::model::Tool>,
    tools_changed: Arc<AtomicBool>,
    generation: u64,
    process_id: Option<u32>,
}

struct Inner {
    config: McpServerConfig,
    live: tokio::sync::Mutex<Option<Live>>,
    /// The process id of the current stdio connection, readable without the async lock.
    process_id: StdMutex<Option<u32>>,
    /// The tools as last listed, readable without the async lock.
    listed: StdMutex<Vec<rmcp::model::Tool>>,
    connections: AtomicU64,
}

/// A connection to one MCP server; cheap to clone (clones share the connection). See the
/// [module docs](self) for how calls, restarts and tool-list changes are handled.
#[derive(Clone)]
pub struct McpServer {
    inner: Arc<Inner>,
}

impl fmt::Debug for McpServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpServer")
            .field("name", &self.inner.config.name)
            .field("target", &self.inner.config.target())
            .field("connections", &self.connections())
            .finish_non_exhaustive()
    }
}

impl McpServer {
    /// Connects to the server (starting its process, for stdio) and lists its tools.
    ///
    /// Must be called inside a tokio runtime with I/O, process and time drivers enabled
    /// (`#[tokio::main]`, or a runtime built with `enable_all`).
    pub async fn connect(config: McpServerConfig) -> Result<McpServer, McpError> {
        config.validate()?;
        let server = McpServer {
            inner: Arc::new(Inner {
                config,
                live: tokio::sync::Mutex::new(None),
                process_id: StdMutex::new(None),
                listed: StdMutex::new(Vec::new()),
                connections: AtomicU64::new(0),
            }),
        };
        let live = server.open().await?;
        *server.inner.live.lock().await = Some(live);
        Ok(server)
    }

    /// The server's name (from its config).
    pub fn name(&self) -> &str {
        &self.inner.config.name
    }

    /// How many times a connection was opened: 1 after [`connect`](Self::connect), one more
    /// per reconnect (a restarted stdio server, a new HTTP session).
    pub fn connections(&self) -> u64 {
        self.inner.connections.load(Ordering::SeqCst)
    }

    /// The process id of a stdio server's current process (`None` for HTTP, or after
    /// [`shutdown`](Self::shutdown)).
    pub fn process_id(&self) -> Option<u32> {
        *self.inner.process_id.lock().expect("process id lock")
    }

    /// The server's tools as [`Tool`]s named as the server names them, reading the tool list
    /// again if the server said it changed (reconnecting if the server went away).
    pub async fn tools(&self) -> Result<Vec<Arc<dyn Tool>>, McpError> {
        let listed = self.list_tools().await?;
        Ok(listed
            .into_iter()
            .map(|t| Arc::new(McpTool::new(self.clone(), t, None)) as Arc<dyn Tool>)
            .collect())
    }

    /// The server's tools as it describes them (name, description, input schema, ...).
    pub async fn list_tools(&self) -> Result<Vec<rmcp::model::Tool>, McpError> {
        let mut guard = self.live().await?;
        let live = guard.as_mut().expect("live after live()");
        if live.tools_changed.swap(false, Ordering::SeqCst) {
            live.tools = self.fetch_tools(&live.service).await?;
        }
        Ok(live.tools.clone())
    }

    /// Ends the connection now: closes the transport and, for a stdio server, waits for its
    /// process to exit (killing it if it does not exit on its own within a few seconds). Calls
    /// made afterwards reconnect.
    pub async fn shutdown(&self) {
        let live = self.inner.live.lock().await.take();
        *self.inner.process_id.lock().expect("process id lock") = None;
        if let Some(mut live) = live {
            let _ = live.service.close().await;
        }
    }

    /// Calls the tool the server names `tool` with `arguments` (a JSON object, or `None`)
    /// and returns the server's result as it is. [`Tool`]s from [`tools`](Self::tools) call
    /// this and turn the result into text.
    pub async fn call_tool(
        &self,
        tool: &str,
        arguments: Option<serde_json::Map<String, serde_json::Value>>,
    ) -> Result<CallToolResult, McpError> {
        let (peer, generation) = {
            let mut guard = self.live().await?;
            let live = guard.as_mut().expect("live after live()");
            if live.tools_changed.swap(false, Ordering::SeqCst) {
                live.tools = self.fetch_tools(&live.service).await?;
                self.check_listed(live, tool)?;
            }
            (live.service.peer().clone(), live.generation)
        };
        let mut params = CallToolRequestParams::new(tool.to_owned());
        if let Some(arguments) = arguments {
            params = params.with_arguments(arguments);
        }
        let call = peer.call_tool(params);
        let answer = match self.inner.config.call_timeout {
            None => call.await,
            Some(limit) => match tokio::time::timeout(limit, call).await {
                Ok(answer) => answer,
                Err(_) => {
                    return Err(McpError::CallTimedOut {
                        server: Arc::clone(&self.inner.config.name),
                        tool: tool.into(),
                        limit,
                    })
                }
            },
        };
        match answer {
            Ok(result) => {
                if result.is_error == Some(true) {
                    // Servers answer a call to a tool they do not have with an error result
                    // (or a protocol error, below): see whether the tool was removed.
                    self.check_still_listed(generation, tool).await?;
                }
                Ok(result)
            }
            Err(ServiceError::McpError(e)) => {
                if matches!(
                    e.code,
                    ErrorCode::INVALID_PARAMS | ErrorCode::METHOD_NOT_FOUND
                ) {
                    self.check_still_listed(generation, tool).await?;
                }
                Err(McpError::Protocol {
                    server: Arc::clone(&self.inner.config.name),
                    tool: tool.into(),
                    code: e.code.0,
                    message: e.message.as_ref().into(),
                })
            }
            Err(e @ (ServiceError::TransportClosed | ServiceError::TransportSend(_))) => {
                self.forget(generation).await;
                Err(McpError::Disconnected {
                    server: Arc::clone(&self.inner.config.name),
                    tool: tool.into(),
                    message: e.to_string().into(),
                })
            }
            Err(e) => Err(McpError::Other {
                server: Arc::clone(&self.inner.config.name),
                message: format!("the call to tool '{tool}' failed: {e}").into(),
            }),
        }
    }

    /// Reads the tool list again (on connection `generation`, if still current) and fails
    /// with [`McpError::ToolRemoved`] if `tool` is no longer on it.
    async fn check_still_listed(&self, generation: u64, tool: &str) -> Result<(), McpError> {
        let mut guard = self.inner.live.lock().await;
        if let Some(live) = guard.as_mut().filter(|l| l.generation == generation) {
            live.tools = self.fetch_tools(&live.service).await?;
            live.tools_changed.store(false, Ordering::SeqCst);
            self.check_listed(live, tool)?;
        }
        Ok(())
    }

    fn check_listed(&self, live: &Live, tool: &str) -> Result<(), McpError> {
        if live.tools.iter().any(|t| t.name == tool) {
            return Ok(());
        }
        Err(McpError::ToolRemoved {
            server: Arc::clone(&self.inner.config.name),
            tool: tool.into(),
            available: live.tools.iter().map(|t| t.name.as_ref().into()).collect(),
        })
    }

    /// Drops the connection `generation` if it is still the current one (it broke).
    async fn forget(&self, generation: u64) {
        let mut guard = self.inner.live.lock().await;
        if guard.as_ref().is_some_and(|l| l.generation == generation) {
            *guard = None;
            *self.inner.process_id.lock().expect("process id lock") = None;
        }
    }

    /// The live connection, reconnecting if there is none or it has closed.
    async fn live(&self) -> Result<tokio::sync::MutexGuard<'_, Option<Live>>, McpError> {
        let mut guard = self.inner.live.lock().await;
        let usable = guard
            .as_ref()
            .is_some_and(|l| !l.service.is_closed() && !l.service.peer().is_transport_closed());
        if !usable {
            *guard = None;
            *guard = Some(self.open().await?);
        }
        Ok(guard)
    }

    /// Opens a new connection and lists the tools, within the connect timeout.
    async fn open(&self) -> Result<Live, McpError> {
        let config = &self.inner.config;
        let limit = config.connect_timeout;
        let live = tokio::time::timeout(limit, self.open_unbounded())
            .await
            .map_err(|_| McpError::ConnectTimedOut {
                server: Arc::clone(&config.name),
                limit,
            })??;
        *self.inner.process_id.lock().expect("process id lock") = live.process_id;
        Ok(live)
    }

    async fn open_unbounded(&self) -> Result<Live, McpError> {
        let config = &self.inner.config;
        let connect_error = |message: String| McpError::Connect {
            server: Arc::clone(&config.name),
            target: config.target().into(),
            message: message.into(),
        };
        let tools_changed = Arc::new(AtomicBool::new(false));
        let handler = Handler {
            tools_changed: Arc::clone(&tools_changed),
        };
        let (service, process_id) = match &config.transport {
            TransportConfig::Stdio {
                program,
                args,
                env,
                current_dir,
                inherit_stderr,
            } => {
                let mut command = tokio::process::Command::new(program);
                command.args(args).envs(env.iter().cloned());
                if let Some(dir) = current_dir {
                    command.current_dir(dir);
                }
                // Killed, not left running, if the transport is dropped without closing
                // (the runtime shutting down, say).
                command.kill_on_drop(true);
                let stderr = if *inherit_stderr {
                    std::process::Stdio::inherit()
                } else {
                    std::process::Stdio::null()
                };
                let (transport, _) = TokioChildProcess::builder(command)
                    .stderr(stderr)
                    .spawn()
                    .map_err(|e| connect_error(format!("could not start the process: {e}")))?;
                let process_id = transport.id();
                let service = handler
                    .serve(transport)
                    .await
                    .map_err(|e| connect_error(format!("the MCP handshake failed: {e}")))?;
                (service, process_id)
            }
            TransportConfig::Http { url, bearer_token } => {
                install_crypto_provider();
                let mut http = StreamableHttpClientTransportConfig::with_uri(Arc::clone(url));
                http.auth_header = bearer_token.as_deref().map(str::to_owned);
                let transport = StreamableHttpClientTransport::from_config(http);
                let service = handler
                    .serve(transport)
                    .await
                    .map_err(|e| connect_error(format!("the MCP handshake failed: {e}")))?;
                (service, None)
            }
        };
        // This client keeps its own copy of the tool list and reads it again when it may
        // have changed: the SDK's response cache would only answer with an old one.
        service
            .peer()
            .set_response_cache_config(ClientCacheConfig::disabled())
            .await;
        let tools = self.fetch_tools(&service).await?;
        let generation = self.inner.connections.fetch_add(1, Ordering::SeqCst) + 1;
        Ok(Live {
            service,
            tools,
            tools_changed,
            generation,
            process_id,
        })
    }

    async fn fetch_tools(
        &self,
        service: &RunningService<RoleClient, Handler>,
    ) -> Result<Vec<rmcp::model::Tool>, McpError> {
        let tools = service
            .peer()
            .list_all_tools()
            .await
            .map_err(|e| McpError::Other {
                server: Arc::clone(&self.inner.config.name),
                message: format!("could not list its tools: {e}").into(),
            })?;
        tools.clone_into(&mut self.inner.listed.lock().expect("tool list lock"));
        Ok(tools)
    }
}

/// The HTTP transport's TLS needs a process-wide rustls crypto provider: ring, the one the
/// rest of the runtime's HTTP already uses. Installing fails harmlessly if one is installed.
fn install_crypto_provider() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// One tool of an MCP server, as a [`Tool`] for an agent.
pub struct McpTool {
    server: McpServer,
    /// The name the model calls it by (prefixed or not).
    name: Arc<str>,
    /// The server's name for it.
    remote_name: Arc<str>,
    description: Arc<str>,
    parameters: serde_json::Value,
}

impl fmt::Debug for McpTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpTool")
            .field("server", &self.server.name())
            .field("name", &self.name)
            .field("remote_name", &self.remote_name)
            .finish_non_exhaustive()
    }
}

impl McpTool {
    fn new(server: McpServer, tool: rmcp::model::Tool, name: Option<Arc<str>>) -> Self {
        let remote_name: Arc<str> = tool.name.as_ref().into();
        let description = tool
            .description
            .as_deref()
            .or(tool.title.as_deref())
            .unwrap_or_default()
            .into();
        McpTool {
            server,
            name: name.unwrap_or_else(|| Arc::clone(&remote_name)),
            remote_name,
            description,
            parameters: serde_json::Value::Object((*tool.input_schema).clone()),
        }
    }

    /// The server's name for the tool (the tool's own [`name`](Tool::name) may be prefixed).
    pub fn remote_name(&self) -> &str {
        &self.remote_name
    }

    /// The server the tool belongs to.
    pub fn server(&self) -> &McpServer {
        &self.server
    }
}

#[async_trait]
impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn parameters(&self) -> serde_json::Value {
        self.parameters.clone()
    }

    async fn call(&self, _cx: &ToolContext, arguments: &str) -> Result<String, ToolError> {
        let arguments = if arguments.trim().is_empty() {
            serde_json::Map::new()
        } else {
            match serde_json::from_str::<serde_json::Value>(arguments) {
                Ok(serde_json::Value::Object(map)) => map,
                Ok(_) => {
                    return Err(ToolError::invalid_arguments(
                        Arc::clone(&self.name),
                        "the arguments must be a JSON object",
                    ))
                }
                Err(e) => {
                    return Err(ToolError::invalid_arguments(
                        Arc::clone(&self.name),
                        format_args!("the arguments are not valid JSON ({e})"),
                    ))
                }
            }
        };
        let result = self
            .server
            .call_tool(&self.remote_name, Some(arguments))
            .await
            .map_err(|e| ToolError::failed(Arc::clone(&self.name), e))?;
        let text = result_text(&result);
        if result.is_error == Some(true) {
            return Err(ToolError::failed(Arc::clone(&self.name), text));
        }
        Ok(text)
    }
}

/// A tool call's result as text: its content blocks one per line, or its structured content as
/// JSON if it has no content blocks (see the [module docs](self#calls-and-results)).
pub fn result_text(result: &CallToolResult) -> String {
    if result.content.is_empty() {
        if let Some(structured) = &result.structured_content {
            return structured.to_string();
        }
    }
    result
        .content
        .iter()
        .map(block_text)
        .collect::<Vec<_>>()
        .join("\n")
}

fn block_text(block: &ContentBlock) -> String {
    match block {
        ContentBlock::Text(text) => text.text.clone(),
        ContentBlock::Image(image) => {
            format!(
                "[image: {}, {} bytes]",
                image.mime_type,
                base64_len(&image.data)
            )
        }
        ContentBlock::Audio(audio) => {
            format!(
                "[audio: {}, {} bytes]",
                audio.mime_type,
                base64_len(&audio.data)
            )
        }
        ContentBlock::Resource(embedded) => match &embedded.resource {
            ResourceContents::TextResourceContents { text, .. } => text.clone(),
            ResourceContents::BlobResourceContents {
                uri,
                mime_type,
                blob,
                ..
            } => format!(
                "[resource {uri}: {}, {} bytes]",
                mime_type.as_deref().unwrap_or("binary"),
                base64_len(blob)
            ),
            #[allow(unreachable_patterns)]
            _ => "[resource]".to_owned(),
        },
        ContentBlock::ResourceLink(link) => format!("[resource link: {}]", link.uri),
        #[allow(unreachable_patterns)]
        _ => "[content of a kind this client does not know]".to_owned(),
    }
}

/// The decoded size of base64 text.
fn base64_len(data: &str) -> usize {
    let data = data.trim_end();
    let padding = data.bytes().rev().take_while(|&b| b == b'=').count();
    (data.len() / 4 * 3).saturating_sub(padding)
}

/// The tools of several MCP servers for one agent, named by the
/// [prefix rule](self#several-servers-the-prefix-rule).
#[derive(Debug, Clone)]
pub struct McpToolset {
    servers: Vec<McpServer>,
    always_prefix: bool,
}

impl McpToolset {
    /// Connects to every server (concurrently); fails with the first server that cannot be
    /// reached, or if two servers share a name.
    pub async fn connect(
        configs: impl IntoIterator<Item = McpServerConfig>,
    ) -> Result<McpToolset, McpError> {
        let configs: Vec<McpServerConfig> = configs.into_iter().collect();
        let mut names = HashSet::new();
        for config in &configs {
            config.validate()?;
            if !names.insert(Arc::clone(&config.name)) {
                return Err(McpError::Config {
                    server: Arc::clone(&config.name),
                    message: "two servers of the toolset have this name; names must be unique"
                        .into(),
                });
            }
        }
        let servers =
            futures::future::try_join_all(configs.into_iter().map(McpServer::connect)).await?;
        Ok(McpToolset::from_servers(servers))
    }

    /// A toolset over servers already connected.
    pub fn from_servers(servers: impl IntoIterator<Item = McpServer>) -> McpToolset {
        McpToolset {
            servers: servers.into_iter().collect(),
            always_prefix: false,
        }
    }

    /// Names every tool `<server>__<tool>`, clashing or not (default: only clashing ones).
    pub fn always_prefix(mut self, always: bool) -> Self {
        self.always_prefix = always;
        self
    }

    /// The servers.
    pub fn servers(&self) -> &[McpServer] {
        &self.servers
    }

    /// The tools of every server as last listed, named by the prefix rule.
    pub fn tools(&self) -> Result<Vec<Arc<dyn Tool>>, McpError> {
        let listed: Vec<(McpServer, Vec<rmcp::model::Tool>)> = self
            .servers
            .iter()
            .map(|s| {
                let tools = s.inner.listed.lock().expect("tool list lock").clone();
                (s.clone(), tools)
            })
            .collect();
        self.name_tools(listed)
    }

    /// Like [`tools`](Self::tools), reading each server's tool list again first (and
    /// reconnecting servers that went away).
    pub async fn refresh_tools(&self) -> Result<Vec<Arc<dyn Tool>>, McpError> {
        let mut listed = Vec::with_capacity(self.servers.len());
        for server in &self.servers {
            let mut guard = server.live().await?;
            let live = guard.as_mut().expect("live after live()");
            live.tools = server.fetch_tools(&live.service).await?;
            live.tools_changed.store(false, Ordering::SeqCst);
            listed.push((server.clone(), live.tools.clone()));
        }
        self.name_tools(listed)
    }

    fn name_tools(
        &self,
        listed: Vec<(McpServer, Vec<rmcp::model::Tool>)>,
    ) -> Result<Vec<Arc<dyn Tool>>, McpError> {
        let mut count: HashMap<String, usize> = HashMap::new();
        for (_, tools) in &listed {
            for tool in tools {
                *count.entry(tool.name.to_string()).or_default() += 1;
            }
        }
        let mut taken: HashMap<Arc<str>, Arc<str>> = HashMap::new();
        let mut out: Vec<Arc<dyn Tool>> = Vec::new();
        for (server, tools) in listed {
            for tool in tools {
                let builtin = tool.name == TRANSFER_TOOL_NAME || tool.name == EXIT_TOOL_NAME;
                let name: Arc<str> = if self.always_prefix || builtin || count[&*tool.name] > 1 {
                    format!("{}{PREFIX_SEPARATOR}{}", server.name(), tool.name).into()
                } else {
                    tool.name.as_ref().into()
                };
                let server_name: Arc<str> = server.name().into();
                if let Some(other) = taken.insert(Arc::clone(&name), Arc::clone(&server_name)) {
                    return Err(McpError::NameClash {
                        name,
                        servers: vec![other, server_name],
                    });
                }
                out.push(Arc::new(McpTool::new(server.clone(), tool, Some(name))));
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_sizes() {
        assert_eq!(base64_len(""), 0);
        assert_eq!(base64_len("TWFu"), 3);
        assert_eq!(base64_len("TWE="), 2);
        assert_eq!(base64_len("TQ=="), 1);
    }

    #[test]
    fn server_names_are_checked() {
        assert!(McpServerConfig::stdio("files-2_x", "x").validate().is_ok());
        let e = McpServerConfig::stdio("my server", "x")
            .validate()
            .unwrap_err();
        assert!(e
            .to_string()
            .starts_with("MCP server 'my server' is misconfigured"));
        assert!(McpServerConfig::http("", "http://x").validate().is_err());
    }

    #[test]
    fn results_map_to_text() {
        let text: CallToolResult = serde_json::from_value(serde_json::json!({
            "content": [
                {"type": "text", "text": "hello"},
                {"type": "image", "data": "TWFu", "mimeType": "image/png"},
                {"type": "resource", "resource": {"uri": "file:///a", "text": "inside"}},
                {"type": "resource_link", "uri": "file:///b", "name": "b"}
            ]
        }))
        .unwrap();
        assert_eq!(
            result_text(&text),
            "hello\n[image: image/png, 3 bytes]\ninside\n[resource link: file:///b]"
        );
        let both: CallToolResult = serde_json::from_value(serde_json::json!({
            "content": [{"type": "text", "text": "{\"t\": 1}"}],
            "structuredContent": {"t": 1}
        }))
        .unwrap();
        assert_eq!(result_text(&both), r#"{"t": 1}"#);
        let structured: CallToolResult = serde_json::from_value(serde_json::json!({
            "structuredContent": {"t": 1}
        }))
        .unwrap();
        assert_eq!(result_text(&structured), r#"{"t":1}"#);
    }
}
