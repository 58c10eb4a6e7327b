//! How to reach an MCP server, and the bounds on talking to it.

use std::ffi::OsString;
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use super::{
    ElicitationHandler, McpAuth, McpError, McpLimits, ToolFilter, DEFAULT_CALL_TIMEOUT,
    DEFAULT_CONNECT_TIMEOUT,
};

/// How to reach an MCP server, and the bounds on talking to it.
#[derive(Clone)]
pub struct McpServerConfig {
    pub(super) name: Arc<str>,
    pub(super) transport: TransportConfig,
    pub(super) connect_timeout: Duration,
    pub(super) call_timeout: Option<Duration>,
    pub(super) limits: McpLimits,
    pub(super) tools: ToolFilter,
    pub(super) outbound: Option<crate::outbound::OutboundPolicy>,
    pub(super) elicitation: Option<Arc<dyn ElicitationHandler>>,
    /// Set by [`elicitation_by_interrupt`](Self::elicitation_by_interrupt).
    pub(super) gate: Option<Arc<super::elicitation::ElicitationGate>>,
}

#[derive(Clone)]
pub(super) enum TransportConfig {
    Stdio {
        program: OsString,
        args: Vec<OsString>,
        env: Vec<(OsString, OsString)>,
        inherit_env: Vec<OsString>,
        current_dir: Option<PathBuf>,
        inherit_stderr: bool,
    },
    Http {
        url: Arc<str>,
        bearer_token: Option<Arc<str>>,
        auth: Option<McpAuth>,
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
    /// [prefix rule](super#several-servers-the-prefix-rule): letters, digits, `_` and `-`.
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
                inherit_env: vec![OsString::from("PATH")],
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
                auth: None,
            },
        )
    }

    fn new(name: impl Into<Arc<str>>, transport: TransportConfig) -> Self {
        McpServerConfig {
            name: name.into(),
            transport,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            call_timeout: Some(DEFAULT_CALL_TIMEOUT),
            limits: McpLimits::default(),
            tools: ToolFilter::default(),
            outbound: None,
            elicitation: None,
            gate: None,
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
    ///
    /// A stdio server starts with an empty environment: only the variables named with
    /// [`inherit_env`](Self::inherit_env) (`PATH` by default) are copied from this process,
    /// and the ones set here are added; the service's own secrets never reach it.
    pub fn env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        if let TransportConfig::Stdio { env, .. } = &mut self.transport {
            env.push((key.into(), value.into()));
        }
        self
    }

    /// Copies these variables of this process's environment (when set) into a stdio server's
    /// otherwise empty environment, besides `PATH` (ignored for HTTP).
    pub fn inherit_env<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        if let TransportConfig::Stdio { inherit_env, .. } = &mut self.transport {
            inherit_env.extend(names.into_iter().map(Into::into));
        }
        self
    }

    /// Copies nothing of this process's environment into a stdio server's, not even `PATH`
    /// (give the program as a full path then); [`env`](Self::env) still applies.
    pub fn inherit_no_env(mut self) -> Self {
        if let TransportConfig::Stdio { inherit_env, .. } = &mut self.transport {
            inherit_env.clear();
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

    /// Holds an HTTP server's connections to `policy` (see [`crate::outbound`]; ignored for
    /// stdio): the URL checked before connecting, names resolved through the policy's guarded
    /// resolver on every connection (no loopback, private, link-local, multicast or
    /// unspecified address unless the policy lets it through), no proxy, redirects only to
    /// the same origin. For a URL that someone other than the operator chose; an operator's
    /// own servers need not opt in.
    pub fn outbound(mut self, policy: crate::outbound::OutboundPolicy) -> Self {
        self.outbound = Some(policy);
        self
    }

    /// Sends `Authorization: Bearer TOKEN` to an HTTP server (ignored for stdio).
    pub fn bearer_token(mut self, token: impl Into<Arc<str>>) -> Self {
        if let TransportConfig::Http { bearer_token, .. } = &mut self.transport {
            *bearer_token = Some(token.into());
        }
        self
    }

    /// Authorizes with an HTTP server that requires OAuth (ignored for stdio): see
    /// [`McpAuth`]. Without it, a server that answers `401` fails with
    /// [`McpError::AuthRequired`].
    pub fn auth(mut self, oauth: McpAuth) -> Self {
        if let TransportConfig::Http { auth, .. } = &mut self.transport {
            *auth = Some(oauth);
        }
        self
    }

    /// Answers the server's elicitation requests (`elicitation/create`: the server asks the
    /// user for input during a tool call) with `handler`, and tells the server this client
    /// can. Without it the client does not offer elicitation and declines any request.
    pub fn elicitation(mut self, handler: impl ElicitationHandler + 'static) -> Self {
        self.elicitation = Some(Arc::new(handler));
        self.gate = None;
        self
    }

    /// Asks the human the server's elicitation requests through the thread's interrupts,
    /// durably, as approvals are asked: when the server asks during a call made by an agent's
    /// tool, the server is answered `cancel` (a server that asks before it acts does nothing)
    /// and the agent's run stops with an interrupt addressed to the call, its `info`
    ///
    /// ```json
    /// {"elicitation": {"server": "crm", "message": "Who is asking?", "schema": {...}},
    ///  "answer": {"action": ["accept", "decline", "cancel"], "content": {...}}}
    /// ```
    ///
    /// (`url` instead of `schema` for a page to open). The thread waits, across restarts; the
    /// answer is the resume data `{"action": "accept", "content": {VALUES}}`,
    /// `{"action": "decline"}` or `{"action": "cancel"}`. Resumed, the call is made again and
    /// the server's question (asked again) gets that answer, an accepted form completed with
    /// the schema's defaults. A second question in the same call is a second interrupt (the
    /// first answer kept). A malformed answer fails the call with a tool error saying the
    /// form. Calls made with [`McpServer::call_tool`](super::McpServer::call_tool) directly,
    /// outside a run, have nobody to ask: their questions are answered `cancel`.
    ///
    /// MCP does not say which call an elicitation belongs to, so the calls to this server are
    /// made one at a time (give each tenant or thread its own connection for parallel calls).
    /// Replaces an [`elicitation`](Self::elicitation) handler.
    pub fn elicitation_by_interrupt(mut self) -> Self {
        let gate = Arc::new(super::elicitation::ElicitationGate::new());
        self.elicitation = Some(Arc::clone(&gate) as Arc<dyn ElicitationHandler>);
        self.gate = Some(gate);
        self
    }

    /// Bounds connecting: starting the process or opening the session, the MCP handshake and
    /// listing the tools (default [`DEFAULT_CONNECT_TIMEOUT`]).
    pub fn connect_timeout(mut self, limit: Duration) -> Self {
        self.connect_timeout = limit;
        self
    }

    /// Bounds each tool call (default [`DEFAULT_CALL_TIMEOUT`]; the agent's
    /// [`tool_timeout`](crate::ChatModelAgentBuilder::tool_timeout) bounds it too).
    pub fn call_timeout(mut self, limit: Duration) -> Self {
        self.call_timeout = Some(limit);
        self
    }

    /// Lets tool calls run without this server's own time limit (the agent's
    /// [`tool_timeout`](crate::ChatModelAgentBuilder::tool_timeout) may still bound them).
    pub fn no_call_timeout(mut self) -> Self {
        self.call_timeout = None;
        self
    }

    /// How much of the server's answers is read (default [`McpLimits::default`]).
    pub fn limits(mut self, limits: McpLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Only these of the server's tools (names or `prefix*` patterns) are offered and callable.
    pub fn allow_tools<I, S>(mut self, patterns: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<Arc<str>>,
    {
        self.tools = self.tools.allow(patterns);
        self
    }

    /// These of the server's tools (names or `prefix*` patterns) are never offered nor called.
    pub fn deny_tools<I, S>(mut self, patterns: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<Arc<str>>,
    {
        self.tools = self.tools.deny(patterns);
        self
    }

    /// The server's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The command line or URL, for messages.
    pub(super) fn target(&self) -> String {
        match &self.transport {
            TransportConfig::Stdio { program, args, .. } => std::iter::once(program)
                .chain(args)
                .map(|a| a.to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join(" "),
            TransportConfig::Http { url, .. } => url.to_string(),
        }
    }

    pub(super) fn validate(&self) -> Result<(), McpError> {
        if let (Some(policy), TransportConfig::Http { url, .. }) = (&self.outbound, &self.transport)
        {
            policy.check_url(url).map_err(|e| McpError::Config {
                server: Arc::clone(&self.name),
                message: e.to_string().into(),
            })?;
        }
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
