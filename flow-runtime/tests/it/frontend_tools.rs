//! Front-end tools (tools the caller runs, offered through `RunOptions::frontend_tools`): a
//! call interrupts the turn until the caller answers with the tool's result.

use std::collections::HashMap;

use agentweave_runtime::model::{ChatRequest, ScriptStep, ScriptedModel, ToolDefinition};
use agentweave_runtime::{
    ChatModelAgent, FlowAgent, InMemoryStore, Message, Role, RunOptions, Runner, TurnOutcome,
    TurnRequest, FRONTEND_TOOL_KEY,
};
use serde_json::json;

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
