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

#[cfg(test)]
mod tests {
    use crate::TurnRequest;
    use std::collections::HashMap;

    use super::*;
    use crate::model::{ChatRequest, ScriptStep, ScriptedModel};
    use crate::{
        ChatModelAgent, FlowAgent, InMemoryStore, Message, Role, RunOptions, Runner, TurnOutcome,
    };

    #[tokio::test]
    async fn a_front_end_tool_is_offered_and_its_call_interrupts_until_the_caller_answers() {
        let model = ScriptedModel::rules()
            .when_with(
                |r: &ChatRequest| r.messages.last().is_some_and(|m| m.role == Role::Tool),
                |r: &ChatRequest| {
                    ScriptStep::text(format!("Picked {}.", r.messages.last().unwrap().content))
                },
            )
            .otherwise(ScriptStep::tool_call("pick_date", json!({"month": 5})));
        let agent = ChatModelAgent::builder("planner", model.clone())
            .build()
            .unwrap();
        let pick = ToolDefinition {
            name: "pick_date".into(),
            description: "Lets the user pick a date.".into(),
            parameters: json!({"type": "object", "properties": {"month": {"type": "integer"}}}),
        };
        let runner = Runner::builder(FlowAgent::new(agent))
            .stores(InMemoryStore::new())
            .run_options(RunOptions::new().frontend_tools([pick]))
            .build();
        let turn = runner
            .turn(TurnRequest::new("t", Message::user("when?")))
            .await
            .unwrap();
        let TurnOutcome::Interrupted { interrupts, .. } = turn.finish().await else {
            panic!("the call waits for the caller");
        };
        assert_eq!(model.requests()[0].tools[0].name, "pick_date");
        let info = &interrupts[0].info;
        assert_eq!(info[FRONTEND_TOOL_KEY], "pick_date");
        assert_eq!(info["arguments"], r#"{"month":5}"#);
        let targets = HashMap::from([(interrupts[0].id.clone(), json!("May 4"))]);
        let answer = runner
            .turn(TurnRequest::resume("t", targets))
            .await
            .unwrap()
            .final_output()
            .await
            .unwrap()
            .unwrap();
        assert_eq!(answer.content, "Picked May 4.");
    }
}
