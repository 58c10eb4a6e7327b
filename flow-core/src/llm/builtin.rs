//! The built-in tools: `transfer_to_agent` and `exit`.

use schemars::JsonSchema;
use serde::Deserialize;

use crate::agent::AgentInfo;
use crate::llm::tool::schema_for;
use crate::model::ToolDefinition;
use crate::transfer::TRANSFER_TOOL_NAME;

/// Name of the built-in tool that ends the run with a final result.
pub const EXIT_TOOL_NAME: &str = "exit";

#[derive(Deserialize, JsonSchema)]
pub(super) struct TransferArgs {
    /// The name of the agent to hand the conversation to.
    pub(super) agent_name: String,
}

#[derive(Deserialize, JsonSchema)]
pub(super) struct ExitArgs {
    /// The final answer of the conversation.
    pub(super) final_result: String,
}

/// The `transfer_to_agent` tool for an agent with these transfer targets: its description
/// lists each target with its description, its schema (derived from `{"agent_name": string}`)
/// restricts `agent_name` to exactly their names (`enum`).
///
/// ```
/// use std::sync::Arc;
/// use agentweave_runtime::{transfer_tool_definition, AgentInfo};
/// let targets = [AgentInfo { name: Arc::from("refund"), description: Arc::from("Refunds orders.") }];
/// let tool = transfer_tool_definition(&targets);
/// assert_eq!(tool.name, "transfer_to_agent");
/// assert_eq!(tool.parameters["properties"]["agent_name"]["enum"], serde_json::json!(["refund"]));
/// assert!(tool.description.ends_with("- refund: Refunds orders."));
/// ```
pub fn transfer_tool_definition(targets: &[AgentInfo]) -> ToolDefinition {
    let mut parameters = schema_for::<TransferArgs>();
    let names: Vec<&str> = targets.iter().map(|t| &*t.name).collect();
    parameters["properties"]["agent_name"]["enum"] = serde_json::json!(names);
    let mut description = String::from(
        "Hands the conversation to another agent, which answers the user from then on. Call it \
         when one of these agents is better placed to handle the request:",
    );
    for t in targets {
        description.push_str("\n- ");
        description.push_str(&t.name);
        if !t.description.is_empty() {
            description.push_str(": ");
            description.push_str(&t.description);
        }
    }
    ToolDefinition {
        name: TRANSFER_TOOL_NAME.to_owned(),
        description,
        parameters,
    }
}

/// The `exit` tool: takes `{"final_result": string}`, ends the run.
pub fn exit_tool_definition() -> ToolDefinition {
    ToolDefinition {
        name: EXIT_TOOL_NAME.to_owned(),
        description: "Ends the conversation with a final result. Call it when the task is done."
            .to_owned(),
        parameters: schema_for::<ExitArgs>(),
    }
}
