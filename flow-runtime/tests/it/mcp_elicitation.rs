//! Elicitation: an MCP server asks the user for input during a tool call
//! (`elicitation/create`); the application's `ElicitationHandler` answers (accept with values,
//! decline, cancel) and the answer goes back to the server. Against a tool of the Python
//! SDK's MCPServer (`tests/mcp/server.py`, `ask_contact`), which `.ci/mcp.sh` installs
//! (`AGENTFLOW_MCP_PYTHON`); without it the tests skip locally and fail in CI.
//!
//! Run with `cargo test -p agentweave-runtime --features mcp --test it -- mcp_elicitation::`.

use std::sync::{Arc, Mutex};

use agentweave_runtime::mcp::{
    ElicitationAnswer, ElicitationHandler, ElicitationRequest, McpServer, McpServerConfig,
};
use agentweave_runtime::testing::skip_missing_component;
use serde_json::json;

const PYTHON_SERVER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/mcp/server.py");

fn python_server() -> Option<McpServerConfig> {
    let Some(python) = std::env::var_os("AGENTFLOW_MCP_PYTHON") else {
        skip_missing_component(
            "the Python MCP SDK",
            "source .ci/mcp.sh, or set AGENTFLOW_MCP_PYTHON to a python with `pip install mcp`",
        );
        return None;
    };
    Some(McpServerConfig::stdio("py", python).arg(PYTHON_SERVER))
}

/// Answers with `answer` and remembers what it was asked.
#[derive(Clone)]
struct User {
    answer: ElicitationAnswer,
    asked: Arc<Mutex<Vec<ElicitationRequest>>>,
}

impl User {
    fn answering(answer: ElicitationAnswer) -> Self {
        User {
            answer,
            asked: Arc::default(),
        }
    }
}

#[async_trait::async_trait]
impl ElicitationHandler for User {
    async fn elicit(&self, request: ElicitationRequest) -> ElicitationAnswer {
        self.asked.lock().unwrap().push(request);
        self.answer.clone()
    }
}

async fn ask(config: McpServerConfig) -> String {
    let server = McpServer::connect(config).await.unwrap();
    let result = server.call_tool("ask_contact", None).await.unwrap();
    server.shutdown().await;
    agentweave_runtime::mcp::result_text(&result)
}

#[tokio::test]
async fn an_accepted_answer_reaches_the_server_with_the_schema_defaults() {
    let Some(config) = python_server() else {
        return;
    };
    let mut values = serde_json::Map::new();
    values.insert("name".into(), json!("Ann"));
    let user = User::answering(ElicitationAnswer::Accept(values));
    let text = ask(config.elicitation(user.clone())).await;
    // The user left `city` out: its default went back to the server.
    assert_eq!(text, "accept: Ann from Lisbon");
    let asked = user.asked.lock().unwrap();
    assert_eq!(asked.len(), 1);
    assert_eq!(&*asked[0].server, "py");
    assert_eq!(asked[0].message, "Who is asking?");
    let schema = asked[0].schema.as_ref().expect("a form has a schema");
    assert_eq!(schema["properties"]["city"]["default"], "Lisbon");
    assert_eq!(schema["properties"]["name"]["type"], "string");
}

#[tokio::test]
async fn a_declined_or_cancelled_question_says_so_to_the_server() {
    let Some(config) = python_server() else {
        return;
    };
    let declined = ask(config
        .clone()
        .elicitation(User::answering(ElicitationAnswer::Decline)))
    .await;
    assert_eq!(declined, "decline");
    let cancelled = ask(config.elicitation(User::answering(ElicitationAnswer::Cancel))).await;
    assert_eq!(cancelled, "cancel");
}

#[tokio::test]
async fn without_a_handler_the_client_does_not_offer_elicitation() {
    let Some(config) = python_server() else {
        return;
    };
    let text = ask(config).await;
    // The server asks anyway (the Python SDK does not check the capability): declined.
    assert_eq!(text, "decline");
}

/// A desk agent whose model calls the server's `ask_contact` then answers `last`, on a runner
/// with a store, the server's questions asked through the thread's interrupts; its first turn
/// run to the interrupt. `None` without the Python SDK (skipped).
async fn interrupted_desk(
    last: &str,
) -> Option<(
    agentweave_runtime::Runner,
    agentweave_runtime::model::ScriptedModel,
    Vec<agentweave_runtime::InterruptInfo>,
)> {
    use agentweave_runtime::model::{ScriptStep, ScriptedModel};
    use agentweave_runtime::{
        ChatModelAgent, FlowAgent, InMemoryStore, Message, Runner, TurnOutcome, TurnRequest,
    };

    let config = python_server()?;
    let toolset = agentweave_runtime::mcp::McpToolset::connect([config.elicitation_by_interrupt()])
        .await
        .unwrap();
    let model = ScriptedModel::new([
        ScriptStep::tool_call("ask_contact", json!({})),
        ScriptStep::text(last),
    ]);
    let agent = ChatModelAgent::builder("desk", model.clone())
        .tools(toolset.tools().unwrap())
        .build()
        .unwrap();
    let runner = Runner::builder(FlowAgent::new(agent))
        .stores(InMemoryStore::new())
        .build();
    let first = runner
        .turn(TurnRequest::new("t", Message::user("add me")))
        .await
        .unwrap();
    let TurnOutcome::Interrupted { interrupts, .. } = first.finish().await else {
        panic!("the server's question stops the run")
    };
    Some((runner, model, interrupts))
}

/// The thread asks the human through its interrupts: the server's question stops the run as
/// an interrupt (the server told `cancel`), the thread waits in the store, and the answer
/// given with the resume reaches the server when the call is made again.
#[tokio::test]
async fn a_question_through_the_threads_interrupts_is_answered_on_resume() {
    use agentweave_runtime::TurnRequest;
    use std::collections::HashMap;

    let Some((runner, model, interrupts)) = interrupted_desk("Noted.").await else {
        return;
    };
    assert_eq!(interrupts.len(), 1);
    let asked = &interrupts[0].info;
    assert_eq!(asked["elicitation"]["server"], "py");
    assert_eq!(asked["elicitation"]["message"], "Who is asking?");
    assert_eq!(
        asked["elicitation"]["schema"]["properties"]["city"]["default"],
        "Lisbon"
    );
    assert_eq!(
        asked["answer"]["action"],
        json!(["accept", "decline", "cancel"])
    );
    assert_eq!(model.requests().len(), 1, "the model waits with the thread");

    let answer = json!({"action": "accept", "content": {"name": "Ann"}});
    let targets = HashMap::from([(interrupts[0].id.clone(), answer)]);
    let resumed = runner
        .turn(TurnRequest::resume("t", targets))
        .await
        .unwrap();
    let output = resumed.final_output().await.unwrap().unwrap();
    assert_eq!(output.content, "Noted.");
    let seen = model.requests()[1].clone();
    let tool_result = seen.messages.last().unwrap();
    assert_eq!(
        tool_result.content, "accept: Ann from Lisbon",
        "the answer reached the server, the schema's default filled in"
    );
}

#[tokio::test]
async fn a_malformed_answer_to_a_question_is_a_tool_error_naming_the_form() {
    use agentweave_runtime::TurnRequest;
    use std::collections::HashMap;

    let Some((runner, model, interrupts)) = interrupted_desk("Sorry.").await else {
        return;
    };
    let targets = HashMap::from([(interrupts[0].id.clone(), json!("yes, Ann"))]);
    let resumed = runner
        .turn(TurnRequest::resume("t", targets))
        .await
        .unwrap();
    assert_eq!(
        resumed.final_output().await.unwrap().unwrap().content,
        "Sorry."
    );
    let seen = model.requests()[1].clone();
    let tool_result = &seen.messages.last().unwrap().content;
    assert!(
        tool_result.contains(r#"{"action": "decline"}"#),
        "{tool_result}"
    );
}
