//! One tool of an MCP server, as a [`Tool`] for an agent.

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use futures::future::{self, Either};

use super::limits::cut;
use super::{result_text, McpServer};
use crate::llm::tool::{Tool, ToolContext, ToolError};

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
    pub(super) fn new(server: McpServer, tool: rmcp::model::Tool, name: Option<Arc<str>>) -> Self {
        let remote_name: Arc<str> = tool.name.as_ref().into();
        let limit = server.config().limits.max_description_bytes;
        let description = cut(
            tool.description
                .as_deref()
                .or(tool.title.as_deref())
                .unwrap_or_default(),
            limit,
        )
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

    async fn call(&self, cx: &ToolContext, arguments: &str) -> Result<String, ToolError> {
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
        let Some(gate) = self.server.config().gate.clone() else {
            return self.call_server(cx, arguments).await;
        };
        // Elicitation through interrupts: the answers this call brings (those kept from its
        // earlier interrupts, then the one it resumes with), its questions beyond them an
        // interrupt of the thread.
        let mut kept: Vec<serde_json::Value> = cx
            .saved_state()
            .and_then(|s| s.get("answers"))
            .and_then(serde_json::Value::as_array)
            .cloned()
            .unwrap_or_default();
        if let Some(data) = cx.resume_data() {
            kept.push(data.clone());
        }
        let mut answers = Vec::with_capacity(kept.len());
        for data in &kept {
            let answer = super::elicitation::parse_answer(data).map_err(|e| {
                ToolError::failed(
                    Arc::clone(&self.name),
                    format_args!("server '{}': {e}", self.server.name()),
                )
            })?;
            answers.push(answer);
        }
        // Kept in the form they parse back from.
        let kept: Vec<serde_json::Value> = answers
            .iter()
            .map(super::elicitation::answer_json)
            .collect();
        let guard = gate.enter(answers).await;
        let result = self.call_server(cx, arguments).await;
        match guard.finish() {
            Some(asked) => Err(cx.interrupt_with_state(
                super::elicitation::interrupt_info(&asked),
                serde_json::json!({ "answers": kept }),
            )),
            None => result,
        }
    }
}

impl McpTool {
    /// Calls the server's tool, its progress notifications this call's progress events.
    async fn call_server(
        &self,
        cx: &ToolContext,
        arguments: serde_json::Map<String, serde_json::Value>,
    ) -> Result<String, ToolError> {
        // The server's progress notifications become this call's progress events
        // (`ToolContext::progress`) while the call runs.
        let (sink, mut progress) = tokio::sync::mpsc::unbounded_channel();
        let call =
            self.server
                .call_tool_with_progress(&self.remote_name, Some(arguments), Some(sink));
        let mut call = Box::pin(call);
        // Progress first: what the server sent before its result is shown before it.
        let result = loop {
            match future::select(Box::pin(progress.recv()), call).await {
                Either::Left((Some(p), rest)) => {
                    call = rest;
                    let mut event = serde_json::json!({ "progress": p.progress });
                    if let Some(total) = p.total {
                        event["total"] = total.into();
                    }
                    if let Some(message) = p.message {
                        event["message"] = message.into();
                    }
                    cx.progress(event).await;
                }
                Either::Left((None, rest)) => break rest.await,
                Either::Right((result, _)) => break result,
            }
        }
        .map_err(|e| ToolError::failed(Arc::clone(&self.name), e))?;
        let text = result_text(&result);
        if result.is_error == Some(true) {
            return Err(ToolError::failed(Arc::clone(&self.name), text));
        }
        Ok(text)
    }
}
