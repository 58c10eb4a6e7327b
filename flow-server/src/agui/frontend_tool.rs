//! [`FrontendTool`]: a tool the front end runs. Give it to an agent like any tool; over AG-UI
//! its call goes to the client as `TOOL_CALL_START/ARGS/END`, the run finishes with the call
//! pending, and the client's next run, carrying a `tool` message for that call, resumes the
//! agent with the message's content as the tool's result.
//!
//! Inside agentflow the call is an interrupt (`{"frontendTool": NAME, "toolCallId", "arguments"}`),
//! so the thread waits durably for the client, and any other client (the `/v1` resume, a test)
//! can answer it too.

use std::sync::Arc;

use agentweave_runtime::{Tool, ToolContext, ToolError};
use async_trait::async_trait;
use serde_json::{json, Value};

/// The key of a front-end tool's interrupt info (the same as for the front-end tools a run
/// is given, [`RunOptions::frontend_tools`](agentweave_runtime::RunOptions::frontend_tools)).
pub(crate) const FRONTEND_TOOL: &str = agentweave_runtime::FRONTEND_TOOL_KEY;

/// A tool the front end runs (see the module documentation).
///
/// ```
/// use agentweave_server::FrontendTool;
/// let tool = FrontendTool::new(
///     "confirm_address",
///     "Asks the customer to confirm their delivery address; returns it.",
///     serde_json::json!({"type": "object", "properties": {}}),
/// );
/// # let _ = tool;
/// ```
#[derive(Debug, Clone)]
pub struct FrontendTool {
    name: Arc<str>,
    description: Arc<str>,
    parameters: Value,
}

impl FrontendTool {
    /// A tool named `name` the model may call with arguments of JSON Schema `parameters`.
    pub fn new(
        name: impl Into<Arc<str>>,
        description: impl Into<Arc<str>>,
        parameters: Value,
    ) -> Self {
        FrontendTool {
            name: name.into(),
            description: description.into(),
            parameters,
        }
    }
}

#[async_trait]
impl Tool for FrontendTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn parameters(&self) -> Value {
        self.parameters.clone()
    }

    async fn call(&self, cx: &ToolContext, arguments: &str) -> Result<String, ToolError> {
        match cx.resume_data() {
            Some(Value::String(s)) => Ok(s.clone()),
            Some(other) => Ok(other.to_string()),
            None => Err(cx.interrupt(json!({
                FRONTEND_TOOL: &*self.name,
                "toolCallId": cx.call_id(),
                "arguments": arguments,
            }))),
        }
    }
}
