//! A remote A2A agent in a `flow!` tree (`remote desk`, given to the builder like a `dyn`
//! node) and as an agent tool, against agentflow's own server serving the desk over A2A on
//! loopback.

use std::collections::HashMap;

use agentweave::a2a::{A2aAgent, A2aClient};
use agentweave::prelude::*;
use agentweave::TurnRequest;
use agentweave::{
    model::ScriptStep, model::ScriptedModel, run::TurnOutcome, store::InMemoryStore,
    workflow::AgentTool, ChatModelAgent, Runner,
};
use agentweave_server::{AppState, Auth};
use futures::StreamExt;
use serde_json::json;

const TOKEN: &str = "remote-node-token-0123456789";

/// The desk served over A2A on a loopback port; the server stops when the runtime ends.
async fn serve_desk() -> String {
    let state = AppState::builder(InMemoryStore::new())
        .flow("desk", agentweave_server::demo::desk())
        .auth(Auth::bearer(TOKEN))
        .turn_routing(agentweave::run::TurnRouting::Root)
        .build()
        .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(agentweave_server::serve(listener, state));
    base
}

/// Hands every request to the remote desk; reports once it handed back.
#[agent(transfers = ["desk"])]
async fn front(cx: &AgentContext) -> Option<FrontTransfer> {
    let back = cx
        .session()
        .events()
        .iter()
        .any(|e| e.agent_name() == "desk");
    if back {
        cx.say("front: the desk has answered");
        None
    } else {
        Some(FrontTransfer::Desk)
    }
}

flow! {
    /// A front agent and a remote desk.
    Remote: front => [remote desk]
}

#[tokio::test]
async fn a_remote_node_of_a_flow_interrupts_resumes_and_hands_back() {
    let base = serve_desk().await;
    let client = A2aClient::new(format!("{base}/a2a/desk"))
        .unwrap()
        .bearer(TOKEN);
    let flow = Remote::builder()
        .desk(|node| A2aAgent::new(node, client))
        .build()
        .unwrap();
    assert_eq!(flow.flow().shape(), "front(desk)");
    let runner = Runner::builder(flow.flow().clone())
        .stores(InMemoryStore::new())
        .build();
    let turn = runner
        .turn(TurnRequest::new(
            "t",
            Message::user("I want a refund for order 42"),
        ))
        .await
        .unwrap();
    let paths: Vec<String> = turn
        .collect::<Vec<_>>()
        .await
        .iter()
        .map(|e| e.run_path().to_string())
        .collect();
    assert!(paths.iter().any(|p| p == "front/desk"), "{paths:?}");
    let head = runner.thread("t").records().await.unwrap();
    let interrupts = match &head.last().unwrap().end {
        agentweave::store::RecordEnd::Interrupted { interrupts, .. } => interrupts.clone(),
        other => panic!("the remote approval interrupts the turn: {other:?}"),
    };
    assert_eq!(
        interrupts[0].info["question"],
        "Approve a refund of 39.00 EUR for order 42?"
    );
    let targets = HashMap::from([(interrupts[0].id.clone(), json!({"approve": true}))]);
    let mut resumed = runner
        .turn(TurnRequest::resume("t", targets))
        .await
        .unwrap();
    let mut said = Vec::new();
    while let Some(e) = resumed.next().await {
        if let Some(m) = e.message_output() {
            if !m.content.is_empty() && m.tool_calls.is_empty() && m.tool_call_id.is_none() {
                said.push(format!("{}: {}", e.run_path(), m.content));
            }
        }
    }
    assert_eq!(
        said,
        [
            "front/desk: Done: 39 EUR for order 42 are on their way back to you.",
            "front/desk/front: front: the desk has answered",
        ]
    );
    assert!(matches!(
        resumed.outcome(),
        Some(TurnOutcome::Completed { .. })
    ));
}

#[tokio::test]
async fn a_remote_agent_is_a_tool() {
    let base = serve_desk().await;
    let desk = A2aAgent::from_card("desk", &format!("{base}/a2a/desk"), Some(TOKEN))
        .await
        .unwrap();
    let model = ScriptedModel::rules()
        .after_tool("desk", ScriptStep::text("The desk answered."))
        .otherwise(ScriptStep::tool_call(
            "desk",
            json!({"request": "Hello there"}),
        ));
    let assistant = ChatModelAgent::builder("assistant", model)
        .tool(AgentTool::new(FlowAgent::new(desk)))
        .build()
        .unwrap();
    let events: Vec<_> = Runner::new(FlowAgent::new(assistant))
        .run("ask the desk")
        .collect()
        .await;
    let tool_result = events
        .iter()
        .filter_map(|e| e.message_output())
        .find(|m| m.tool_call_id.is_some())
        .expect("the tool's result");
    assert_eq!(
        tool_result.content,
        "Hello! I can help with refunds and complaints."
    );
}
