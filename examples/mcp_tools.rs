//! An agent whose tools come from an MCP server: the reference "everything" server
//! (`@modelcontextprotocol/server-everything`, run with node), or, without it, the small server
//! on the Python MCP SDK in `flow-runtime/tests/mcp/server.py`. The model is scripted, so the run
//! is offline and the same every time; the tools are the server's, called over MCP.
//!
//! ```text
//! source .ci/mcp.sh   # installs both servers into a temporary directory, exports their paths
//! cargo run --example mcp_tools --features mcp
//! ```
//!
//! `AGENTFLOW_MCP_EVERYTHING` names the everything server's `dist/index.js`;
//! `AGENTFLOW_MCP_PYTHON` a Python that has the `mcp` package. With neither, the example says so
//! and exits 0 (1 in CI, where `.ci/mcp.sh` provides them).

use std::time::Duration;

use agentweave::mcp::{McpServerConfig, McpToolset};
use agentweave::model::{ScriptStep, ScriptedModel};
use agentweave::{event::EventOutput, ChatModelAgent, FlowAgent, Runner};
use futures::StreamExt;
use serde_json::json;

/// The server to use and what the scripted model does with its tools.
fn server_and_script() -> Option<(McpServerConfig, Vec<ScriptStep>)> {
    if let Some(index_js) = std::env::var_os("AGENTFLOW_MCP_EVERYTHING") {
        let server = McpServerConfig::stdio("everything", "node")
            .arg(index_js)
            .arg("stdio");
        let script = vec![
            ScriptStep::tool_call("get-sum", json!({"a": 19, "b": 23})),
            ScriptStep::tool_call("echo", json!({"message": "tools over MCP"})),
            ScriptStep::text("19 + 23 = 42, and the server echoed back."),
        ];
        return Some((server, script));
    }
    if let Some(python) = std::env::var_os("AGENTFLOW_MCP_PYTHON") {
        let script_path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/flow-runtime/tests/mcp/server.py"
        );
        let server = McpServerConfig::stdio("python", python).arg(script_path);
        let script = vec![
            ScriptStep::tool_call("add", json!({"a": 19, "b": 23})),
            ScriptStep::text("19 + 23 = 42."),
        ];
        return Some((server, script));
    }
    None
}

#[tokio::main]
async fn main() {
    let Some((server, script)) = server_and_script() else {
        eprintln!(
            "mcp_tools: no MCP server here: set AGENTFLOW_MCP_EVERYTHING (the everything \
             server's dist/index.js) or AGENTFLOW_MCP_PYTHON (a python with `pip install mcp`), \
             e.g. by `source .ci/mcp.sh`"
        );
        // In CI a missing server is a failure, not a skip.
        std::process::exit(if std::env::var_os("CI").is_some() {
            1
        } else {
            0
        });
    };
    println!("connecting to MCP server '{}'", server.name());
    let toolset = McpToolset::connect([server])
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let tools = toolset.tools().unwrap_or_else(|e| panic!("{e}"));
    println!(
        "its tools: {}",
        tools
            .iter()
            .map(|t| t.name())
            .collect::<Vec<_>>()
            .join(", ")
    );

    let agent = ChatModelAgent::builder("assistant", ScriptedModel::new(script))
        .instruction("Use the tools to answer.")
        .tools(tools)
        .tool_timeout(Duration::from_secs(30))
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let mut events = Runner::new(FlowAgent::new(agent)).run("What is 19 + 23?");
    let mut tool_results = 0;
    while let Some(event) = events.next().await {
        if let Some(error) = &event.error {
            panic!("the run failed: {error}");
        }
        let Some(EventOutput::Message(message)) = &event.output else {
            continue;
        };
        for call in &message.tool_calls {
            println!(
                "{} calls {}({})",
                event.agent_name(),
                call.name,
                call.arguments
            );
        }
        if message.tool_calls.is_empty() {
            println!(
                "{} ({}): {}",
                event.agent_name(),
                message.role,
                message.content
            );
        }
        if message.role == agentweave::Role::Tool {
            tool_results += 1;
            assert!(
                !message.content.starts_with("error:"),
                "a tool failed: {}",
                message.content
            );
        }
    }
    assert!(tool_results > 0, "no tool was called");
    // Dropping the toolset (and the agent, inside the runner) ends the server's process.
    drop(toolset);
    println!("done");
}
