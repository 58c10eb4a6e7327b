//! The official `langgraph-sdk` Python client, unchanged, against agentflow's Agent Protocol
//! routes on a real server: `tests/langgraph/sdk_check.py` creates threads, streams a run in
//! `messages` and `updates` modes, meets the refund's interrupt and resumes it with a command,
//! joins a background run's stream, cancels a run and exercises `multitask_strategy`.
//!
//! Needs a Python with `langgraph-sdk` (`AGENTFLOW_LANGGRAPH_PYTHON`, installed by
//! `.ci/langgraph.sh`); skips without it unless `AGENTFLOW_REQUIRE_COMPONENTS=1`.

use crate::common;

use std::time::Duration;

use common::{spawn, TOKEN};
use flow_runtime::async_trait;
use flow_runtime::model::{ChatRequest, ModelError};
use flow_runtime::{
    tool_fn, ChatModel, ChatModelAgent, FlowAgent, InMemoryStore, Message, ToolCall,
};
use flow_server::{AppState, Auth};

/// Calls its never-ending tool.
struct Patient;

#[async_trait]
impl ChatModel for Patient {
    fn model_name(&self) -> &str {
        "patient"
    }

    async fn generate(&self, _request: &ChatRequest) -> Result<Message, ModelError> {
        Ok(Message::assistant_tool_calls(
            "",
            vec![ToolCall::new("call-1", "ponder", "{}")],
        ))
    }
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Nothing {}

fn state() -> AppState {
    let ponder = tool_fn("ponder", "Thinks for ever.", |_: Nothing| async {
        std::future::pending::<()>().await;
        Ok::<_, std::convert::Infallible>(String::new())
    });
    let slow = ChatModelAgent::builder("slow", Patient)
        .tool(ponder)
        .build()
        .unwrap();
    AppState::builder(InMemoryStore::new())
        .flow("desk", flow_server::demo::desk())
        .flow("slow", FlowAgent::new(slow))
        .auth(Auth::bearer(TOKEN))
        .turn_routing(flow_runtime::TurnRouting::Root)
        .build()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_langgraph_sdk_client_works_unchanged() {
    let Some(python) = std::env::var_os("AGENTFLOW_LANGGRAPH_PYTHON") else {
        flow_runtime::testing::skip_missing_component(
            "a Python with langgraph-sdk",
            "set AGENTFLOW_LANGGRAPH_PYTHON to a virtualenv's python with `pip install \
             langgraph-sdk` (.ci/langgraph.sh does it)",
        );
        return;
    };
    let server = spawn(state()).await;
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/langgraph/sdk_check.py");
    let run = tokio::process::Command::new(python)
        .arg(script)
        .env("AGENTFLOW_LG_URL", format!("{}/v1", server.base))
        .env("AGENTFLOW_LG_TOKEN", TOKEN)
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(Duration::from_secs(120), run)
        .await
        .expect("the SDK script finished within 120 s")
        .expect("the SDK script started");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the langgraph-sdk script failed ({}):\n{stdout}\n{stderr}",
        output.status
    );
    assert!(stdout.contains("all checks passed"), "{stdout}");
}
