//! A call to one of the run's front-end tools (see
//! [`RunOptions::frontend_tools`](crate::RunOptions::frontend_tools)): the call stops the run
//! with an interrupt for the caller, whose resume data is the call's result.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{json, Value};

use super::tool::{Tool, ToolContext, ToolError};
use crate::model::ToolDefinition;

/// The key of a front-end tool call's interrupt info: `{"frontendTool": NAME, "toolCallId":
/// ID, "arguments": TEXT}`.
pub const FRONTEND_TOOL_KEY: &str = "frontendTool";

/// One of the run's front-end tools, as the agent calls it.
pub(super) struct FrontendCall {
    definition: ToolDefinition,
}

impl FrontendCall {
    /// The tool `definition` describes, run by the caller.
    pub(super) fn tool(definition: ToolDefinition) -> Arc<dyn Tool> {
        Arc::new(FrontendCall { definition })
    }
}

#[async_trait]
impl Tool for FrontendCall {
    fn name(&self) -> &str {
        &self.definition.name
    }

    fn description(&self) -> &str {
        &self.definition.description
    }

    fn parameters(&self) -> Value {
        self.definition.parameters.clone()
    }

    async fn call(&self, cx: &ToolContext, arguments: &str) -> Result<String, ToolError> {
        match cx.resume_data() {
            Some(Value::String(s)) => Ok(s.clone()),
            Some(other) => Ok(other.to_string()),
            None => Err(cx.interrupt(json!({
                FRONTEND_TOOL_KEY: self.definition.name,
                "toolCallId": cx.call_id(),
                "arguments": arguments,
            }))),
        }
    }
}
