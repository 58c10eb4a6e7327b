//! Elicitation: an MCP server asks the user for input during a tool call
//! (`elicitation/create`); the application's `ElicitationHandler` answers (accept with values,
//! decline, cancel) and the answer goes back to the server. Against a tool of the Python
//! SDK's MCPServer (`tests/mcp/server.py`, `ask_contact`), which `.ci/mcp.sh` installs
//! (`AGENTFLOW_MCP_PYTHON`); without it the tests skip locally and fail in CI.
//!
//! Run with `cargo test -p flow-runtime --features mcp --test it -- mcp_elicitation::`.

use std::sync::{Arc, Mutex};

use flow_runtime::mcp::{
    ElicitationAnswer, ElicitationHandler, ElicitationRequest, McpServer, McpServerConfig,
};
use flow_runtime::testing::skip_missing_component;
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
    flow_runtime::mcp::result_text(&result)
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
