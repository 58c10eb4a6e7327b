//! One live connection to an MCP server: connecting, reconnecting, listing tools, calls.

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex as StdMutex};

use rmcp::model::{
    CallToolRequest, ClientRequest, ProgressNotificationParam, ProgressToken, ServerResult,
};
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, ContentBlock,
    ErrorCode, Implementation, PaginatedRequestParams, ResourceContents,
};
use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction, ProtocolVersion};
use rmcp::service::PeerRequestOptions;
use rmcp::service::{NotificationContext, RequestContext, RunningService};
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{ClientCacheConfig, ClientHandler, RoleClient, ServiceError, ServiceExt};

use super::auth::Authorizer;
use super::config::TransportConfig;
use super::guarded::{guarded_client, with_causes};
use super::{ElicitationHandler, McpError, McpServerConfig, McpTool};
use crate::llm::tool::Tool;

/// Receives the server's notifications: remembers that its tool list changed; hands progress
/// notifications to the call whose token they carry.
pub(super) struct Handler {
    pub(super) tools_changed: Arc<AtomicBool>,
    pub(super) progress: ProgressRoutes,
    /// The server's name, for elicitation requests.
    pub(super) server: Arc<str>,
    /// Answers the server's elicitation requests (none: declined, and not offered).
    pub(super) elicitation: Option<Arc<dyn ElicitationHandler>>,
}

impl ClientHandler for Handler {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.tools_changed.store(true, Ordering::SeqCst);
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.progress.deliver(params);
    }

    async fn create_elicitation(
        &self,
        params: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, rmcp::ErrorData> {
        let (Some(handler), Some(request)) = (
            &self.elicitation,
            super::elicitation::request(&self.server, params),
        ) else {
            return Ok(ElicitResult::new(ElicitationAction::Decline));
        };
        let answer = handler.elicit(request.clone()).await;
        Ok(super::elicitation::result(&request, answer))
    }

    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        if self.elicitation.is_some() {
            capabilities.elicitation = Some(
                rmcp::model::ElicitationCapability::default()
                    .with_form(rmcp::model::FormElicitationCapability::default()),
            );
        }
        let mut config = ClientConfig::new(
            capabilities,
            Implementation::new("agentflow", env!("CARGO_PKG_VERSION")),
        );
        // The latest version the specification defines with an `initialize` handshake (the
        // SDK's default names a draft past it).
        config.protocol_version = ProtocolVersion::V_2025_11_25;
        config
    }
}

/// One live connection: the running client (which owns the transport and so the child
/// process) and the tools as last listed.
pub(super) struct Live {
    pub(super) service: RunningService<RoleClient, Handler>,
    pub(super) tools: Vec<rmcp::model::Tool>,
    pub(super) tools_changed: Arc<AtomicBool>,
    generation: u64,
    process_id: Option<u32>,
}

pub(super) struct Inner {
    config: McpServerConfig,
    live: tokio::sync::Mutex<Option<Live>>,
    /// The process id of the current stdio connection, readable without the async lock.
    process_id: StdMutex<Option<u32>>,
    /// The tools as last listed, readable without the async lock.
    pub(super) listed: StdMutex<Vec<rmcp::model::Tool>>,
    connections: AtomicU64,
    /// Where progress notifications go, by token (shared by every connection's handler).
    progress: ProgressRoutes,
    /// The OAuth state of an HTTP server configured with an `McpAuth` (made on first use).
    authorizer: tokio::sync::OnceCell<Arc<Authorizer>>,
}

/// The calls waiting for progress notifications, by the token their request carries; a
/// notification that comes before its call is routed (the token is known only once the
/// request is sent) waits among the last few.
#[derive(Clone, Default)]
pub(super) struct ProgressRoutes(Arc<StdMutex<Routes>>);

#[derive(Default)]
struct Routes {
    calls: std::collections::HashMap<ProgressToken, ProgressSink>,
    early: std::collections::VecDeque<ProgressNotificationParam>,
}

/// Where one call's progress notifications go.
pub(super) type ProgressSink = tokio::sync::mpsc::UnboundedSender<ProgressNotificationParam>;

/// How many notifications of calls not routed yet are kept.
const EARLY_PROGRESS: usize = 64;

impl ProgressRoutes {
    fn deliver(&self, progress: ProgressNotificationParam) {
        let mut routes = self.0.lock().expect("progress routes lock");
        match routes.calls.get(&progress.progress_token) {
            Some(sink) => {
                let _ = sink.send(progress);
            }
            None => {
                if routes.early.len() == EARLY_PROGRESS {
                    routes.early.pop_front();
                }
                routes.early.push_back(progress);
            }
        }
    }

    fn route(&self, token: ProgressToken, sink: ProgressSink) {
        let mut routes = self.0.lock().expect("progress routes lock");
        let early = std::mem::take(&mut routes.early);
        for p in early {
            if p.progress_token == token {
                let _ = sink.send(p);
            } else {
                routes.early.push_back(p);
            }
        }
        routes.calls.insert(token, sink);
    }

    fn unroute(&self, token: &ProgressToken) {
        let mut routes = self.0.lock().expect("progress routes lock");
        routes.calls.remove(token);
        routes.early.retain(|p| p.progress_token != *token);
    }
}

/// A connection to one MCP server; cheap to clone (clones share the connection). See the
/// [module docs](super) for how calls, restarts and tool-list changes are handled.
#[derive(Clone)]
pub struct McpServer {
    pub(super) inner: Arc<Inner>,
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
                progress: ProgressRoutes::default(),
                authorizer: tokio::sync::OnceCell::new(),
            }),
        };
        let live = server.open().await?;
        *server.inner.live.lock().await = Some(live);
        Ok(server)
    }

    /// The server's configuration.
    pub(super) fn config(&self) -> &McpServerConfig {
        &self.inner.config
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
        self.call_tool_with_progress(tool, arguments, None).await
    }

    /// [`call_tool`](Self::call_tool), sending the progress notifications the server makes
    /// for this call to `progress` while it runs.
    pub(super) async fn call_tool_with_progress(
        &self,
        tool: &str,
        arguments: Option<serde_json::Map<String, serde_json::Value>>,
        progress: Option<ProgressSink>,
    ) -> Result<CallToolResult, McpError> {
        // A call the server refused for want of authorization (401, or 403 for a scope) had
        // no effect: it is sent again once authorized, at most AUTH_ATTEMPTS times.
        let mut attempts = 0;
        loop {
            let answer = self
                .call_once(tool, arguments.clone(), progress.clone())
                .await;
            match answer {
                Err(McpError::AuthRequired { challenge, .. })
                    if attempts < AUTH_ATTEMPTS && self.has_auth() =>
                {
                    attempts += 1;
                    self.authorizer().await?.authorize(&challenge).await?;
                }
                answer => return answer,
            }
        }
    }

    async fn call_once(
        &self,
        tool: &str,
        arguments: Option<serde_json::Map<String, serde_json::Value>>,
        progress: Option<ProgressSink>,
    ) -> Result<CallToolResult, McpError> {
        if !self.inner.config.tools.permits(tool) {
            return Err(McpError::ToolDenied {
                server: Arc::clone(&self.inner.config.name),
                tool: tool.into(),
            });
        }
        // One deadline for the whole call: the wait for the connection's lock, a reconnect,
        // a re-read of the tool list before it, the call itself, and the re-read after an
        // error result (which, past the deadline, is skipped: the answer stands as it is).
        let deadline = self
            .inner
            .config
            .call_timeout
            .map(|limit| (tokio::time::Instant::now() + limit, limit));
        let timed_out = |limit| McpError::CallTimedOut {
            server: Arc::clone(&self.inner.config.name),
            tool: tool.into(),
            limit,
        };
        let prepare = async {
            let mut guard = self.live().await?;
            let live = guard.as_mut().expect("live after live()");
            if live.tools_changed.swap(false, Ordering::SeqCst) {
                live.tools = self.fetch_tools(&live.service).await?;
                self.check_listed(live, tool)?;
            }
            Ok::<_, McpError>((live.service.peer().clone(), live.generation))
        };
        let (peer, generation) = match deadline {
            None => prepare.await?,
            Some((at, limit)) => tokio::time::timeout_at(at, prepare)
                .await
                .map_err(|_| timed_out(limit))??,
        };
        let mut params = CallToolRequestParams::new(tool.to_owned());
        if let Some(arguments) = arguments {
            params = params.with_arguments(arguments);
        }
        let routes = &self.inner.progress;
        let call = async {
            let Some(sink) = progress else {
                return peer.call_tool(params).await;
            };
            // The client gives the request its progress token as it sends it.
            let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
            let handle = peer
                .send_cancellable_request(request, PeerRequestOptions::no_options())
                .await?;
            let token = handle.progress_token.clone();
            routes.route(token.clone(), sink);
            let _unroute = Unroute(routes, token);
            match handle.await_response().await? {
                ServerResult::CallToolResult(result) => Ok(result),
                _ => Err(ServiceError::UnexpectedResponse),
            }
        };
        let answer = match deadline {
            None => call.await,
            Some((at, limit)) => tokio::time::timeout_at(at, call)
                .await
                .map_err(|_| timed_out(limit))?,
        };
        // The re-read of the tool list after an error, within what is left of the deadline.
        let still_listed = || async {
            match deadline {
                None => self.check_still_listed(generation, tool).await,
                Some((at, _)) => {
                    tokio::time::timeout_at(at, self.check_still_listed(generation, tool))
                        .await
                        .unwrap_or(Ok(()))
                }
            }
        };
        match answer {
            Ok(result) => {
                self.check_result(&result)?;
                if result.is_error == Some(true) {
                    // Servers answer a call to a tool they do not have with an error result
                    // (or a protocol error, below): see whether the tool was removed.
                    still_listed().await?;
                }
                Ok(result)
            }
            Err(ServiceError::McpError(e)) if e.code.0 == super::bounded::OVER_LIMIT_CODE => {
                // The answer was over a limit while it was read (see `bounded.rs`).
                let field = e.data.as_ref().and_then(|d| d["field"].as_str());
                let (what, field, limit) = match field {
                    Some("max_message_bytes") => (
                        "a message of more bytes",
                        "max_message_bytes",
                        self.inner.config.limits.max_message_bytes,
                    ),
                    _ => (
                        "a result of more content blocks",
                        "max_result_blocks",
                        self.inner.config.limits.max_result_blocks,
                    ),
                };
                Err(McpError::LimitExceeded {
                    server: Arc::clone(&self.inner.config.name),
                    what,
                    field,
                    limit,
                })
            }
            Err(ServiceError::McpError(e)) => {
                if matches!(
                    e.code,
                    ErrorCode::INVALID_PARAMS | ErrorCode::METHOD_NOT_FOUND
                ) {
                    still_listed().await?;
                }
                Err(McpError::Protocol {
                    server: Arc::clone(&self.inner.config.name),
                    tool: tool.into(),
                    code: e.code.0,
                    message: e.message.as_ref().into(),
                })
            }
            Err(e) if over_http_limit(&e) => {
                // The HTTP answer was over the message limit while it was read: the SDK's
                // worker stops with it, so the next call connects afresh.
                self.forget(generation).await;
                Err(McpError::LimitExceeded {
                    server: Arc::clone(&self.inner.config.name),
                    what: "a message of more bytes",
                    field: "max_message_bytes",
                    limit: self.inner.config.limits.max_message_bytes,
                })
            }
            Err(ServiceError::TransportSend(e)) if challenge(&e).is_some() => {
                // The server refused the request for want of authorization: the session
                // is opened afresh with the new token.
                self.forget(generation).await;
                Err(self.auth_required(challenge(&e).unwrap_or_default()))
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
    pub(super) async fn live(&self) -> Result<tokio::sync::MutexGuard<'_, Option<Live>>, McpError> {
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

    /// Opens a connection; when the server asks for authorization and this client has an
    /// `McpAuth`, authorizes and opens again (at most AUTH_ATTEMPTS times).
    async fn open_unbounded(&self) -> Result<Live, McpError> {
        let mut attempts = 0;
        loop {
            match self.open_once().await {
                Err(McpError::AuthRequired { challenge, .. })
                    if attempts < AUTH_ATTEMPTS && self.has_auth() =>
                {
                    attempts += 1;
                    self.authorizer().await?.authorize(&challenge).await?;
                }
                opened => return opened,
            }
        }
    }

    /// Whether the server is configured with an `McpAuth`.
    fn has_auth(&self) -> bool {
        matches!(
            &self.inner.config.transport,
            TransportConfig::Http { auth: Some(_), .. }
        )
    }

    /// The server's OAuth state, made on first use (`has_auth` must be true).
    async fn authorizer(&self) -> Result<&Arc<Authorizer>, McpError> {
        let config = &self.inner.config;
        self.inner
            .authorizer
            .get_or_try_init(|| async {
                let TransportConfig::Http {
                    url,
                    auth: Some(auth),
                    ..
                } = &config.transport
                else {
                    return Err(McpError::Config {
                        server: Arc::clone(&config.name),
                        message: "OAuth is configured for HTTP servers only".into(),
                    });
                };
                let http = self.http_client()?;
                let outbound = config.outbound.as_ref();
                Authorizer::new(auth.clone(), Arc::clone(&config.name), url, http, outbound)
                    .await
                    .map(Arc::new)
            })
            .await
    }

    /// The HTTP client for the server: held to its outbound policy if it has one.
    fn http_client(&self) -> Result<reqwest013::Client, McpError> {
        let config = &self.inner.config;
        match &config.outbound {
            None => Ok(reqwest013::Client::new()),
            Some(policy) => guarded_client(policy).map_err(|e| McpError::Connect {
                server: Arc::clone(&config.name),
                target: config.target().into(),
                message: format!("the HTTP client: {e}").into(),
            }),
        }
    }

    /// The error for a server that answered with the authorization `challenge`.
    fn auth_required(&self, challenge: String) -> McpError {
        let config = &self.inner.config;
        McpError::AuthRequired {
            server: Arc::clone(&config.name),
            target: config.target().into(),
            challenge: challenge.into(),
        }
    }

    async fn open_once(&self) -> Result<Live, McpError> {
        let config = &self.inner.config;
        let connect_error = |message: String| McpError::Connect {
            server: Arc::clone(&config.name),
            target: config.target().into(),
            message: message.into(),
        };
        let tools_changed = Arc::new(AtomicBool::new(false));
        let handler = Handler {
            tools_changed: Arc::clone(&tools_changed),
            progress: self.inner.progress.clone(),
            server: Arc::clone(&config.name),
            elicitation: config.elicitation.clone(),
        };
        let (service, process_id) = match &config.transport {
            TransportConfig::Stdio {
                program,
                args,
                env,
                inherit_env,
                current_dir,
                inherit_stderr,
            } => {
                let mut command = tokio::process::Command::new(program);
                // Least privilege: an empty environment, the allow-listed variables of this
                // process, then the server's own.
                command.env_clear();
                for name in inherit_env {
                    if let Some(value) = std::env::var_os(name) {
                        command.env(name, value);
                    }
                }
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
                command
                    .stdin(std::process::Stdio::piped())
                    .stdout(std::process::Stdio::piped())
                    .stderr(stderr);
                let transport = ChildTransport::spawn(command, &config.limits)
                    .map_err(|e| connect_error(format!("could not start the process: {e}")))?;
                let process_id = transport.id();
                let service = handler
                    .serve(transport)
                    .await
                    .map_err(|e| connect_error(format!("the MCP handshake failed: {e}")))?;
                (service, process_id)
            }
            TransportConfig::Http {
                url,
                bearer_token,
                auth,
            } => {
                install_crypto_provider();
                let mut http = StreamableHttpClientTransportConfig::with_uri(Arc::clone(url));
                http.auth_header = bearer_token.as_deref().map(str::to_owned);
                // A server's answer is read within the message limit, as a stdio server's
                // line is: a whole JSON body, or one event of a streamed answer, before it is
                // parsed (the SDK's own defaults are 16 MiB each).
                let max = self.inner.config.limits.max_message_bytes;
                http.max_json_response_size = max;
                http.max_sse_event_size = max;
                let transport = match &self.inner.config.outbound {
                    _ if auth.is_some() => {
                        let client = self.authorizer().await?.client();
                        let transport = StreamableHttpClientTransport::with_client(client, http);
                        let service = handler.serve(transport).await.map_err(|e| {
                            match init_challenge(&e) {
                                Some(challenge) => self.auth_required(challenge),
                                None => connect_error(format!(
                                    "the MCP handshake failed: {}",
                                    with_causes(&e)
                                )),
                            }
                        })?;
                        return self.finish_open(service, None, tools_changed).await;
                    }
                    None => StreamableHttpClientTransport::from_config(http),
                    Some(policy) => {
                        let parsed = policy
                            .check_url(url)
                            .map_err(|e| connect_error(e.to_string()))?;
                        // Resolved and checked once here for a clear error; the client checks
                        // again on every connection it opens.
                        if let Some(url::Host::Domain(host)) = parsed.host() {
                            crate::outbound::GuardedResolver::new(policy.clone())
                                .resolve_checked(host)
                                .await
                                .map_err(|e| connect_error(e.to_string()))?;
                        }
                        let client = guarded_client(policy)
                            .map_err(|e| connect_error(format!("the HTTP client: {e}")))?;
                        StreamableHttpClientTransport::with_client(client, http)
                    }
                };
                let service =
                    handler
                        .serve(transport)
                        .await
                        .map_err(|e| match init_challenge(&e) {
                            Some(challenge) => self.auth_required(challenge),
                            None => connect_error(format!(
                                "the MCP handshake failed: {}",
                                with_causes(&e)
                            )),
                        })?;
                (service, None)
            }
        };
        self.finish_open(service, process_id, tools_changed).await
    }

    /// Checks the protocol version the server answered, reads its tools: the connection.
    async fn finish_open(
        &self,
        service: RunningService<RoleClient, Handler>,
        process_id: Option<u32>,
        tools_changed: Arc<AtomicBool>,
    ) -> Result<Live, McpError> {
        let config = &self.inner.config;
        let answered = service
            .peer()
            .peer_info()
            .map(|info| info.protocol_version.to_string())
            .unwrap_or_default();
        if !super::SUPPORTED_PROTOCOL_VERSIONS.contains(&answered.as_str()) {
            let mut service = service;
            let _ = service.close().await;
            return Err(McpError::UnsupportedProtocolVersion {
                server: Arc::clone(&config.name),
                offered: super::PROTOCOL_VERSION.into(),
                answered: answered.into(),
                supported: super::SUPPORTED_PROTOCOL_VERSIONS
                    .iter()
                    .map(|&v| v.into())
                    .collect(),
            });
        }
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

    /// Reads the server's tool list, page by page within [`McpLimits`](super::McpLimits), the
    /// whole read bounded by the connect timeout; keeps the tools the filter permits.
    pub(super) async fn fetch_tools(
        &self,
        service: &RunningService<RoleClient, Handler>,
    ) -> Result<Vec<rmcp::model::Tool>, McpError> {
        let config = &self.inner.config;
        let limit = config.connect_timeout;
        let tools = tokio::time::timeout(limit, self.fetch_pages(service))
            .await
            .map_err(|_| McpError::ListTimedOut {
                server: Arc::clone(&config.name),
                limit,
            })??;
        tools.clone_into(&mut self.inner.listed.lock().expect("tool list lock"));
        Ok(tools)
    }

    async fn fetch_pages(
        &self,
        service: &RunningService<RoleClient, Handler>,
    ) -> Result<Vec<rmcp::model::Tool>, McpError> {
        let config = &self.inner.config;
        let limits = &config.limits;
        let exceeded = |what, field, limit| McpError::LimitExceeded {
            server: Arc::clone(&config.name),
            what,
            field,
            limit,
        };
        let mut tools = Vec::new();
        let mut cursor: Option<String> = None;
        for page in 0.. {
            if page >= limits.max_list_pages {
                return Err(exceeded(
                    "a tool list of more pages",
                    "max_list_pages",
                    limits.max_list_pages,
                ));
            }
            let params = cursor
                .take()
                .map(|c| PaginatedRequestParams::default().with_cursor(Some(c)));
            let result = service
                .peer()
                .list_tools(params)
                .await
                .map_err(|e| match &e {
                    ServiceError::TransportSend(t) if challenge(t).is_some() => {
                        self.auth_required(challenge(t).unwrap_or_default())
                    }
                    _ => McpError::Other {
                        server: Arc::clone(&config.name),
                        message: format!("could not list its tools: {e}").into(),
                    },
                })?;
            if tools.len() + result.tools.len() > limits.max_tools {
                return Err(exceeded(
                    "a tool list of more tools",
                    "max_tools",
                    limits.max_tools,
                ));
            }
            tools.extend(
                result
                    .tools
                    .into_iter()
                    .filter(|t| config.tools.permits(&t.name)),
            );
            match result.next_cursor {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
        Ok(tools)
    }

    /// `Ok(())` when `result` is within the server's result limits.
    fn check_result(&self, result: &CallToolResult) -> Result<(), McpError> {
        let config = &self.inner.config;
        let limits = &config.limits;
        let exceeded = |what, field, limit| McpError::LimitExceeded {
            server: Arc::clone(&config.name),
            what,
            field,
            limit,
        };
        if result.content.len() > limits.max_result_blocks {
            return Err(exceeded(
                "a result of more content blocks",
                "max_result_blocks",
                limits.max_result_blocks,
            ));
        }
        let mut bytes = result
            .structured_content
            .as_ref()
            .map_or(0, |v| v.to_string().len());
        for block in &result.content {
            bytes += block_bytes(block);
            if bytes > limits.max_result_bytes {
                break;
            }
        }
        if bytes > limits.max_result_bytes {
            return Err(exceeded(
                "a result of more bytes",
                "max_result_bytes",
                limits.max_result_bytes,
            ));
        }
        Ok(())
    }
}

/// The bytes a content block carries (its text or its encoded data).
fn block_bytes(block: &ContentBlock) -> usize {
    match block {
        ContentBlock::Text(t) => t.text.len(),
        ContentBlock::Image(i) => i.data.len(),
        ContentBlock::Audio(a) => a.data.len(),
        ContentBlock::Resource(r) => match &r.resource {
            ResourceContents::TextResourceContents { text, .. } => text.len(),
            ResourceContents::BlobResourceContents { blob, .. } => blob.len(),
            #[allow(unreachable_patterns)]
            _ => 0,
        },
        ContentBlock::ResourceLink(l) => l.uri.len(),
        #[allow(unreachable_patterns)]
        _ => 0,
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

/// Stops routing a call's progress when the call ends or is dropped.
struct Unroute<'a>(&'a ProgressRoutes, ProgressToken);

impl Drop for Unroute<'_> {
    fn drop(&mut self) {
        self.0.unroute(&self.1);
    }
}

/// A stdio server's process and its transport, its output read through
/// [`BoundedLines`](super::bounded::BoundedLines) (see `bounded.rs`). Closing it closes the
/// server's stdin and waits a few seconds for the process to exit, then kills it; dropping it
/// kills the process.
struct ChildTransport {
    child: Option<tokio::process::Child>,
    transport: AsyncRwTransport<
        RoleClient,
        super::bounded::BoundedLines<tokio::process::ChildStdout>,
        tokio::process::ChildStdin,
    >,
}

/// How long a closed server's process has to exit before it is killed.
const EXIT_WAIT: std::time::Duration = std::time::Duration::from_secs(3);

impl ChildTransport {
    fn spawn(
        mut command: tokio::process::Command,
        limits: &super::McpLimits,
    ) -> std::io::Result<Self> {
        let mut child = command.spawn()?;
        let (Some(stdout), Some(stdin)) = (child.stdout.take(), child.stdin.take()) else {
            return Err(std::io::Error::other(
                "the process's stdin or stdout is not piped",
            ));
        };
        let read = super::bounded::BoundedLines::new(
            stdout,
            limits.max_message_bytes,
            limits.max_result_blocks,
        );
        Ok(ChildTransport {
            child: Some(child),
            // The bounded reader cuts lines first; the SDK's own cap only has to be above it.
            transport: AsyncRwTransport::new(read, stdin)
                .with_max_line_length(limits.max_message_bytes.saturating_add(1024)),
        })
    }

    fn id(&self) -> Option<u32> {
        self.child.as_ref()?.id()
    }
}

impl rmcp::transport::Transport<RoleClient> for ChildTransport {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: rmcp::service::TxJsonRpcMessage<RoleClient>,
    ) -> impl std::future::Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.transport.send(item)
    }

    fn receive(
        &mut self,
    ) -> impl std::future::Future<Output = Option<rmcp::service::RxJsonRpcMessage<RoleClient>>> + Send
    {
        self.transport.receive()
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.transport.close().await?;
        if let Some(mut child) = self.child.take() {
            if tokio::time::timeout(EXIT_WAIT, child.wait()).await.is_err() {
                let _ = child.kill().await;
            }
        }
        Ok(())
    }
}

/// Whether a call failed because the HTTP answer was larger than the transport's byte limit
/// ([`McpLimits::max_message_bytes`](super::McpLimits), given to the SDK's HTTP client).
fn over_http_limit(e: &ServiceError) -> bool {
    use rmcp::transport::streamable_http_client::StreamableHttpError;
    let ServiceError::TransportSend(error) = e else {
        return false;
    };
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error.error.as_ref());
    while let Some(current) = source {
        if let Some(StreamableHttpError::ResponseBodyTooLarge { .. }) =
            current.downcast_ref::<StreamableHttpError<reqwest013::Error>>()
        {
            return true;
        }
        source = current.source();
    }
    false
}

/// How many times a connection or a call is authorized again after the server refused it.
const AUTH_ATTEMPTS: u32 = 3;

/// The `WWW-Authenticate` challenge of an HTTP answer `401` or `403`, if that is what failed.
fn challenge(error: &rmcp::transport::DynamicTransportError) -> Option<String> {
    use rmcp::transport::streamable_http_client::StreamableHttpError;
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error.error.as_ref());
    while let Some(current) = source {
        if let Some(e) = current.downcast_ref::<StreamableHttpError<reqwest013::Error>>() {
            if let Some(challenge) = e.auth_challenge() {
                return Some(challenge.to_owned());
            }
        }
        source = current.source();
    }
    None
}

/// The challenge of a handshake that failed for want of authorization.
fn init_challenge(error: &rmcp::service::ClientInitializeError) -> Option<String> {
    match error {
        rmcp::service::ClientInitializeError::TransportError { error, .. } => challenge(error),
        _ => None,
    }
}
