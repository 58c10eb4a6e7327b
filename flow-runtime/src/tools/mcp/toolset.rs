//! The tools of several MCP servers for one agent, named by the prefix rule.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::{McpError, McpServer, McpServerConfig, McpTool, PREFIX_SEPARATOR};
use crate::llm::tool::Tool;
use crate::llm::EXIT_TOOL_NAME;
use crate::transfer::TRANSFER_TOOL_NAME;

/// The tools of several MCP servers for one agent, named by the
/// [prefix rule](super#several-servers-the-prefix-rule).
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
