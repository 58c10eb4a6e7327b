//! MCP tools against real MCP servers nobody here wrote: the reference "everything" server
//! (npm `@modelcontextprotocol/server-everything`, over stdio and streamable HTTP) and small
//! servers on the Python SDK's MCPServer (`tests/mcp/server.py`) for the cases the reference
//! server has no tool for.
//!
//! `.ci/mcp.sh` installs both and exports `AGENTFLOW_MCP_EVERYTHING` (the everything server's
//! `index.js`) and `AGENTFLOW_MCP_PYTHON` (a Python with the `mcp` package); without them the
//! tests skip locally and fail in CI.
//!
//! Run with `cargo test -p agentweave-runtime --features mcp --test it -- mcp::`.
#![cfg(feature = "mcp")]

use std::sync::Arc;
use std::time::Duration;

use agentweave_runtime::mcp::{McpError, McpServer, McpServerConfig, McpToolset};
use agentweave_runtime::model::{ScriptStep, ScriptedModel};
use agentweave_runtime::testing::skip_missing_component;
use agentweave_runtime::{ChatModelAgent, FlowAgent, Runner, Tool, ToolContext};
use futures::StreamExt;
use serde_json::{json, Value};

const PYTHON_SERVER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/mcp/server.py");

/// The everything server over stdio, or `None` (after reporting the skip).
fn everything(name: &str) -> Option<McpServerConfig> {
    let Some(path) = std::env::var_os("AGENTFLOW_MCP_EVERYTHING") else {
        skip_missing_component(
            "the MCP everything server",
            "source .ci/mcp.sh, or set AGENTFLOW_MCP_EVERYTHING to \
             @modelcontextprotocol/server-everything's dist/index.js",
        );
        return None;
    };
    Some(McpServerConfig::stdio(name, "node").arg(path).arg("stdio"))
}

/// A Python with the `mcp` package, or `None` (after reporting the skip).
fn python() -> Option<std::ffi::OsString> {
    let python = std::env::var_os("AGENTFLOW_MCP_PYTHON");
    if python.is_none() {
        skip_missing_component(
            "the Python MCP SDK",
            "source .ci/mcp.sh, or set AGENTFLOW_MCP_PYTHON to a python with `pip install mcp`",
        );
    }
    python
}

/// Our small Python server over stdio, or `None`.
fn python_server(name: &str) -> Option<McpServerConfig> {
    Some(McpServerConfig::stdio(name, python()?).arg(PYTHON_SERVER))
}

/// Runs `agent` on `query`; each event as `role: content`.
async fn run(agent: ChatModelAgent, query: &str) -> Vec<String> {
    Runner::new(FlowAgent::new(agent))
        .run(query)
        .map(|e| match e.message_output() {
            Some(m) => format!("{}: {}", m.role, m.content),
            None => format!("event without message: {:?}", e.error),
        })
        .collect()
        .await
}

/// Runs `worker`, an agent with `tools` whose model takes `steps`, on "go".
async fn run_worker(
    tools: Vec<Arc<dyn Tool>>,
    steps: impl IntoIterator<Item = ScriptStep>,
) -> Vec<String> {
    let agent = ChatModelAgent::builder("worker", ScriptedModel::new(steps))
        .tools(tools)
        .build()
        .unwrap();
    run(agent, "go").await
}

fn find<'a>(tools: &'a [Arc<dyn Tool>], name: &str) -> &'a Arc<dyn Tool> {
    tools
        .iter()
        .find(|t| t.name() == name)
        .unwrap_or_else(|| panic!("no tool {name}"))
}

fn cx() -> ToolContext {
    ToolContext::new(
        agentweave_runtime::RunContext::new_run(
            agentweave_runtime::Session::new(),
            [],
            false,
            "test",
        ),
        "call-1",
    )
}

#[tokio::test]
async fn lists_the_tools_of_the_everything_server_with_their_schemas() {
    let Some(config) = everything("everything") else {
        return;
    };
    let server = McpServer::connect(config).await.unwrap();
    let listed = server.list_tools().await.unwrap();
    let tools = server.tools().await.unwrap();
    assert_eq!(listed.len(), tools.len());
    for name in [
        "echo",
        "get-sum",
        "get-structured-content",
        "get-tiny-image",
    ] {
        assert!(
            tools.iter().any(|t| t.name() == name),
            "{name} missing: {:?}",
            tools.iter().map(|t| t.name()).collect::<Vec<_>>()
        );
    }
    // The schema and description are the server's, as it states them.
    let sum = find(&tools, "get-sum");
    let stated = listed.iter().find(|t| t.name == "get-sum").unwrap();
    assert_eq!(
        sum.parameters(),
        Value::Object((*stated.input_schema).clone())
    );
    assert_eq!(sum.description(), "Returns the sum of two numbers");
    assert_eq!(sum.parameters()["properties"]["a"]["type"], "number");
    assert_eq!(sum.parameters()["required"], json!(["a", "b"]));
    assert!(server.process_id().is_some());
    assert_eq!(server.connections(), 1);
    server.shutdown().await;
}

#[tokio::test]
async fn an_agent_calls_a_server_tool_with_the_model_arguments() {
    let Some(config) = everything("everything") else {
        return;
    };
    let toolset = McpToolset::connect([config]).await.unwrap();
    let model = ScriptedModel::new([
        ScriptStep::tool_call("get-sum", json!({"a": 2, "b": 40})),
        ScriptStep::tool_call("get-structured-content", json!({"location": "Chicago"})),
        ScriptStep::text("The sum is 42."),
    ]);
    let agent = ChatModelAgent::builder("calculator", model)
        .tools(toolset.tools().unwrap())
        .tool_timeout(Duration::from_secs(30))
        .build()
        .unwrap();
    let lines = run(agent, "What is 2 + 40?").await;
    assert_eq!(lines.len(), 5, "{lines:#?}");
    assert_eq!(lines[1], "tool: The sum of 2 and 40 is 42.");
    // Structured content reaches the model as its JSON.
    let structured: Value = serde_json::from_str(lines[3].strip_prefix("tool: ").unwrap())
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", lines[3]));
    assert!(structured["temperature"].is_number(), "{structured}");
    assert!(structured["conditions"].is_string(), "{structured}");
    assert_eq!(lines[4], "assistant: The sum is 42.");
}

#[tokio::test]
async fn an_image_result_is_described_not_dropped() {
    let Some(config) = everything("everything") else {
        return;
    };
    let server = McpServer::connect(config).await.unwrap();
    let tools = server.tools().await.unwrap();
    let text = find(&tools, "get-tiny-image")
        .call(&cx(), "{}")
        .await
        .unwrap();
    assert!(text.contains("[image: image/png, "), "{text}");
    server.shutdown().await;
}

#[tokio::test]
async fn a_tool_error_is_answered_to_the_model_and_the_run_goes_on() {
    let Some(config) = python_server("py") else {
        return;
    };
    let server = McpServer::connect(config).await.unwrap();
    let tools = server.tools().await.unwrap();
    let lines = run_worker(
        tools,
        [
            ScriptStep::tool_call("fail", json!({"reason": "no stock"})),
            ScriptStep::tool_call("add", json!({"a": 1})),
            ScriptStep::tool_call("add", json!({"a": 1, "b": 2})),
            ScriptStep::text("done"),
        ],
    )
    .await;
    assert_eq!(lines.len(), 7, "{lines:#?}");
    assert!(
        lines[1].starts_with("tool: error: tool 'fail' failed: ") && lines[1].contains("no stock"),
        "{}",
        lines[1]
    );
    // Arguments that do not fit the schema: the server says so, the model gets it.
    assert!(
        lines[3].starts_with("tool: error: tool 'add' failed: ") && lines[3].contains('b'),
        "{}",
        lines[3]
    );
    assert_eq!(lines[5], "tool: 3");
    assert_eq!(lines[6], "assistant: done");
    // Arguments that are not a JSON object never reach the server.
    let add = find(&server.tools().await.unwrap(), "add").clone();
    let e = add.call(&cx(), "[1, 2]").await.unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid arguments for tool 'add': the arguments must be a JSON object; call it again \
         with a JSON object that matches its parameters schema"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn a_server_that_exits_mid_call_is_a_typed_error_and_the_next_call_restarts_it() {
    let Some(config) = python_server("py") else {
        return;
    };
    let server = McpServer::connect(config).await.unwrap();
    let first_pid = server.process_id().unwrap();
    let e = server.call_tool("exit_now", None).await.unwrap_err();
    assert!(
        matches!(&e, McpError::Disconnected { server, tool, .. } if &**server == "py" && &**tool == "exit_now"),
        "{e:?}"
    );
    assert!(e.to_string().contains("the call was not retried"), "{e}");
    // As a tool of an agent, the model reads the same error and the agent goes on.
    let tools = server.tools().await.unwrap();
    assert_eq!(server.connections(), 2, "tools() reconnected");
    let restarted_pid = server.process_id().unwrap();
    assert_ne!(first_pid, restarted_pid);
    let lines = run_worker(
        tools,
        [
            ScriptStep::tool_call("exit_now", json!({})),
            ScriptStep::tool_call("add", json!({"a": 20, "b": 22})),
            ScriptStep::text("ok"),
        ],
    )
    .await;
    assert!(
        lines[1].starts_with("tool: error: tool 'exit_now' failed: MCP server 'py' went away"),
        "{lines:#?}"
    );
    assert_eq!(lines[3], "tool: 42", "{lines:#?}");
    assert_eq!(server.connections(), 3);
    server.shutdown().await;
}

#[tokio::test]
async fn a_hanging_call_is_bounded_by_the_agent_tool_timeout() {
    let Some(config) = python_server("py") else {
        return;
    };
    let server = McpServer::connect(config).await.unwrap();
    let model = ScriptedModel::new([
        ScriptStep::tool_call("hang", json!({})),
        ScriptStep::tool_call("add", json!({"a": 1, "b": 1})),
        ScriptStep::text("ok"),
    ]);
    let agent = ChatModelAgent::builder("worker", model)
        .tools(server.tools().await.unwrap())
        .tool_timeout(Duration::from_millis(500))
        .build()
        .unwrap();
    let lines = run(agent, "go").await;
    assert_eq!(
        lines[1],
        "tool: error: tool 'hang' timed out after 500 ms (the agent's tool_timeout); it was \
         stopped"
    );
    // The connection survived the abandoned call.
    assert_eq!(lines[3], "tool: 2");
    assert_eq!(server.connections(), 1);
    server.shutdown().await;
}

#[tokio::test]
async fn a_hanging_call_is_bounded_by_the_server_call_timeout() {
    let Some(config) = python_server("py") else {
        return;
    };
    let server = McpServer::connect(config.call_timeout(Duration::from_millis(300)))
        .await
        .unwrap();
    let e = server.call_tool("hang", None).await.unwrap_err();
    assert_eq!(
        e,
        McpError::CallTimedOut {
            server: "py".into(),
            tool: "hang".into(),
            limit: Duration::from_millis(300),
        }
    );
    let mut args = serde_json::Map::new();
    args.insert("a".into(), json!(5));
    args.insert("b".into(), json!(6));
    let sum = server.call_tool("add", Some(args)).await.unwrap();
    assert_eq!(agentweave_runtime::mcp::result_text(&sum), "11");
    server.shutdown().await;
}

#[tokio::test]
async fn a_removed_tool_is_a_clear_error() {
    let Some(config) = python_server("py") else {
        return;
    };
    let server = McpServer::connect(config).await.unwrap();
    let tools = server.tools().await.unwrap();
    let ephemeral = find(&tools, "ephemeral").clone();
    assert_eq!(ephemeral.call(&cx(), "{}").await.unwrap(), "still here");
    let retire = find(&tools, "retire_ephemeral").clone();
    assert_eq!(retire.call(&cx(), "{}").await.unwrap(), "removed");
    let e = ephemeral.call(&cx(), "{}").await.unwrap_err();
    let text = e.to_string();
    assert!(
        text.starts_with(
            "tool 'ephemeral' failed: MCP server 'py' no longer has tool 'ephemeral'; its tools \
             now are: "
        ) && text.contains("add")
            && !text.contains("ephemeral,"),
        "{text}"
    );
    // A fresh list no longer has it.
    assert!(server
        .tools()
        .await
        .unwrap()
        .iter()
        .all(|t| t.name() != "ephemeral"));
    server.shutdown().await;
}

#[cfg(target_os = "linux")]
fn process_gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        // A zombie has ended; only its exit status waits to be read.
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn the_child_process_ends_when_the_agent_is_dropped() {
    let Some(config) = python_server("py") else {
        return;
    };
    let toolset = McpToolset::connect([config]).await.unwrap();
    let pid = toolset.servers()[0].process_id().unwrap();
    let agent = ChatModelAgent::builder("worker", ScriptedModel::new([ScriptStep::text("hi")]))
        .tools(toolset.tools().unwrap())
        .build()
        .unwrap();
    drop(toolset);
    assert!(!process_gone(pid), "the agent still holds the server");
    let lines = run(agent, "hi").await; // the runner took the agent and dropped it
    assert_eq!(lines, ["assistant: hi"]);
    // Ending is asynchronous (EOF on stdin, then a kill): wait for it, boundedly.
    let mut waited = 0;
    while !process_gone(pid) && waited < 200 {
        tokio::time::sleep(Duration::from_millis(50)).await;
        waited += 1;
    }
    assert!(process_gone(pid), "process {pid} still runs");
}

#[tokio::test]
async fn several_servers_clashing_names_get_the_server_prefix() {
    let (Some(a), Some(b), Some(everything)) = (
        python_server("alpha"),
        python_server("beta"),
        everything("everything"),
    ) else {
        return;
    };
    let toolset = McpToolset::connect([a, b, everything]).await.unwrap();
    let tools = toolset.tools().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name()).collect();
    assert!(
        names.contains(&"alpha__add") && names.contains(&"beta__add"),
        "{names:?}"
    );
    assert!(!names.contains(&"add"), "{names:?}");
    // Unique names are kept as the server gives them.
    assert!(names.contains(&"get-sum"), "{names:?}");
    let lines = run_worker(
        tools,
        [
            ScriptStep::tool_call("beta__add", json!({"a": 2, "b": 2})),
            ScriptStep::tool_call("get-sum", json!({"a": 1, "b": 1})),
            ScriptStep::text("4 and 2"),
        ],
    )
    .await;
    assert_eq!(lines[1], "tool: 4");
    assert_eq!(lines[3], "tool: The sum of 1 and 1 is 2.");
    // With always_prefix, every tool carries its server's name.
    let all = toolset.clone().always_prefix(true).tools().unwrap();
    assert!(all.iter().any(|t| t.name() == "everything__get-sum"));
    // Two servers of one name are refused.
    let e = McpToolset::connect([
        python_server("same").unwrap(),
        python_server("same").unwrap(),
    ])
    .await
    .unwrap_err();
    assert!(matches!(e, McpError::Config { .. }), "{e:?}");
}

#[tokio::test]
async fn a_missing_command_is_a_connect_error() {
    let e = McpServer::connect(McpServerConfig::stdio(
        "ghost",
        "/nonexistent/agentflow-mcp-server",
    ))
    .await
    .unwrap_err();
    assert!(matches!(e, McpError::Connect { .. }), "{e:?}");
    assert!(
        e.to_string().starts_with(
            "could not connect to MCP server 'ghost' (/nonexistent/agentflow-mcp-server): could \
             not start the process"
        ),
        "{e}"
    );
}

/// A free port on 127.0.0.1 (the OS picks it; it is released for the server to take).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Waits until something listens on `port` (bounded: the server may fail to start).
async fn wait_for_port(port: u16) {
    for _ in 0..300 {
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("nothing listens on port {port}");
}

/// Starts `command` (a server listening on `port`; killed when the returned child drops),
/// waits for it to listen, and connects to its streamable HTTP endpoint as `web`.
async fn http_server(
    mut command: tokio::process::Command,
    port: u16,
) -> (tokio::process::Child, McpServer) {
    let child = command
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    wait_for_port(port).await;
    let server = McpServer::connect(McpServerConfig::http(
        "web",
        format!("http://127.0.0.1:{port}/mcp"),
    ))
    .await
    .unwrap();
    (child, server)
}

#[tokio::test]
async fn streamable_http_everything_server() {
    let Some(path) = std::env::var_os("AGENTFLOW_MCP_EVERYTHING") else {
        skip_missing_component("the MCP everything server", "source .ci/mcp.sh");
        return;
    };
    let port = free_port();
    let mut node = tokio::process::Command::new("node");
    node.arg(path)
        .arg("streamableHttp")
        .env("PORT", port.to_string());
    let (_process, server) = http_server(node, port).await;
    assert_eq!(server.process_id(), None);
    let tools = server.tools().await.unwrap();
    let text = find(&tools, "get-sum")
        .call(&cx(), r#"{"a": 3, "b": 4}"#)
        .await
        .unwrap();
    assert_eq!(text, "The sum of 3 and 4 is 7.");
    server.shutdown().await;
}

#[tokio::test]
async fn streamable_http_python_server() {
    let Some(python) = python() else {
        return;
    };
    let port = free_port();
    let mut python = tokio::process::Command::new(python);
    python.arg(PYTHON_SERVER).arg("http").arg(port.to_string());
    let (_process, server) = http_server(python, port).await;
    let tools = server.tools().await.unwrap();
    let text = find(&tools, "add")
        .call(&cx(), r#"{"a": 3, "b": 4}"#)
        .await
        .unwrap();
    assert_eq!(text, "7");
    let e = find(&tools, "fail")
        .call(&cx(), r#"{"reason": "over http"}"#)
        .await
        .unwrap_err();
    assert!(e.to_string().contains("over http"), "{e}");
    server.shutdown().await;
}

/// The everything server's long-running operation reports its steps as MCP progress
/// notifications: each reaches the caller as a progress event of the tool call, at the tool's
/// run path, before the tool's result.
#[tokio::test]
async fn mcp_progress_notifications_become_progress_events() {
    let Some(config) = everything("everything") else {
        return;
    };
    let toolset = McpToolset::connect([config]).await.unwrap();
    let model = ScriptedModel::new([
        ScriptStep::tool_call(
            "trigger-long-running-operation",
            json!({"duration": 0.3, "steps": 3}),
        ),
        ScriptStep::text("Done."),
    ]);
    let agent = ChatModelAgent::builder("operator", model)
        .tools(toolset.tools().unwrap())
        .tool_timeout(Duration::from_secs(60))
        .build()
        .unwrap();
    let events: Vec<agentweave_runtime::AgentEvent> = Runner::new(FlowAgent::new(agent))
        .run("Run it")
        .collect()
        .await;
    let mut progress = Vec::new();
    let mut result_at = None;
    for (i, e) in events.iter().enumerate() {
        if let Some(agentweave_runtime::EventOutput::Custom(v)) = &e.output {
            if let Some(p) = v.get("tool_progress") {
                assert_eq!(
                    e.run_path().to_string(),
                    "operator/trigger-long-running-operation"
                );
                assert_eq!(p["tool"], "trigger-long-running-operation");
                progress.push((i, p["progress"].clone()));
            }
        }
        if e.message_output()
            .is_some_and(|m| m.role == agentweave_runtime::Role::Tool)
        {
            result_at = Some(i);
        }
    }
    assert_eq!(
        progress.iter().map(|(_, p)| p.clone()).collect::<Vec<_>>(),
        [
            json!({"progress": 1.0, "total": 3.0}),
            json!({"progress": 2.0, "total": 3.0}),
            json!({"progress": 3.0, "total": 3.0}),
        ]
    );
    let result_at = result_at.expect("the tool's result");
    assert!(progress.iter().all(|(i, _)| *i < result_at));
    let result = events[result_at].message_output().unwrap();
    assert!(
        result.content.contains("Long running operation completed"),
        "{}",
        result.content
    );
}
