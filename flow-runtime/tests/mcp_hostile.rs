// Its own test binary, not a module of tests/it: it sets a process-wide environment variable
// (`std::env::set_var`), which other tests of a shared binary could read while it changes.
//! MCP least privilege and bounds, against a hostile stdio server (`tests/mcp/hostile.py`,
//! plain Python, no SDK) and the reference "everything" server: an empty environment for the
//! child, tool allow/deny lists, bounded tool lists, descriptions and results, and no wait
//! under the connection's lock without a bound.
#![cfg(feature = "mcp")]

use std::sync::Arc;
use std::time::Duration;

use agentweave_runtime::mcp::{McpError, McpLimits, McpServer, McpServerConfig};
use agentweave_runtime::testing::skip_missing_component;
use agentweave_runtime::tool::{Tool, ToolContext};

const HOSTILE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/mcp/hostile.py");

/// A secret of "the service": set in this test process's environment.
const SECRET_NAME: &str = "AGENTFLOW_TEST_SERVICE_TOKEN";
const SECRET: &str = "svc-secret-4bd1f0";

/// The Python interpreter itself (not a launcher shim that sets variables of its own).
fn python() -> String {
    let out = std::process::Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .expect("python3 runs");
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

fn hostile(mode: &str) -> McpServerConfig {
    McpServerConfig::stdio(format!("hostile-{mode}"), python())
        .arg(HOSTILE)
        .arg(mode)
        .connect_timeout(Duration::from_secs(5))
}

fn set_secret() {
    // Every test of this file sets the same value: no test reads another value.
    std::env::set_var(SECRET_NAME, SECRET);
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

fn find(tools: &[Arc<dyn Tool>], name: &str) -> Arc<dyn Tool> {
    Arc::clone(tools.iter().find(|t| t.name() == name).expect("the tool"))
}

#[tokio::test]
async fn a_stdio_server_gets_an_empty_environment_plus_its_allow_list() {
    set_secret();
    let server = McpServer::connect(
        hostile("plain")
            .env("SERVER_OWN", "given")
            .inherit_env(["HOME"]),
    )
    .await
    .unwrap();
    let result = server.call_tool("env", None).await.unwrap();
    let text = agentweave_runtime::mcp::result_text(&result);
    let env: serde_json::Map<String, serde_json::Value> = serde_json::from_str(&text).unwrap();
    assert!(!env.contains_key(SECRET_NAME), "{text}");
    assert!(!text.contains(SECRET), "{text}");
    assert_eq!(env["SERVER_OWN"], "given");
    assert!(env.contains_key("PATH"));
    if std::env::var_os("HOME").is_some() {
        assert!(env.contains_key("HOME"));
    }
    // Nothing else of this process's environment (Python may add a few of its own, such as
    // LC_CTYPE; none of ours).
    for (name, _) in std::env::vars() {
        if !["PATH", "HOME"].contains(&name.as_str()) {
            assert!(!env.contains_key(&name), "{name} was inherited: {text}");
        }
    }
}

#[tokio::test]
async fn denied_tools_are_not_offered_and_not_callable() {
    let server = McpServer::connect(hostile("plain").deny_tools(["env"]))
        .await
        .unwrap();
    let names: Vec<String> = server
        .tools()
        .await
        .unwrap()
        .iter()
        .map(|t| t.name().to_owned())
        .collect();
    assert_eq!(names, ["echo", "call"]);
    let e = server.call_tool("env", None).await.unwrap_err();
    assert!(matches!(e, McpError::ToolDenied { .. }), "{e}");
    let allowed = McpServer::connect(hostile("plain").allow_tools(["ech*"]))
        .await
        .unwrap();
    assert_eq!(allowed.tools().await.unwrap().len(), 1);
}

#[tokio::test]
async fn endless_tool_list_pages_are_a_typed_error() {
    let e = McpServer::connect(
        hostile("endless-pages").limits(McpLimits::default().max_list_pages(10)),
    )
    .await
    .unwrap_err();
    match e {
        McpError::LimitExceeded { field, limit, .. } => {
            assert_eq!(field, "max_list_pages");
            assert_eq!(limit, 10);
        }
        other => panic!("expected LimitExceeded, got {other}"),
    }
}

#[tokio::test]
async fn results_over_the_block_or_byte_limits_are_typed_errors() {
    let server = McpServer::connect(hostile("many-blocks")).await.unwrap();
    let e = find(&server.tools().await.unwrap(), "call")
        .call(&cx(), "{}")
        .await
        .unwrap_err();
    assert!(e.to_string().contains("max_result_blocks"), "{e}");

    let server = McpServer::connect(hostile("big-result")).await.unwrap();
    let e = server.call_tool("call", None).await.unwrap_err();
    assert!(
        matches!(
            e,
            McpError::LimitExceeded {
                field: "max_result_bytes",
                ..
            }
        ),
        "{e}"
    );
    // The connection stays usable.
    assert!(server.call_tool("echo", None).await.is_ok());
}

#[tokio::test]
async fn a_long_description_is_cut() {
    let server = McpServer::connect(hostile("long-description"))
        .await
        .unwrap();
    let echo = find(&server.tools().await.unwrap(), "echo");
    assert!(echo.description().len() <= McpLimits::default().max_description_bytes);
    assert!(echo.description().ends_with('…'));
}

#[tokio::test]
async fn an_error_then_a_silent_list_does_not_hang_the_call_nor_the_next() {
    let server = McpServer::connect(
        hostile("error-then-silent").connect_timeout(Duration::from_millis(500)),
    )
    .await
    .unwrap();
    // The call answers isError; the client re-reads the tool list, which never comes: bounded.
    let e = server.call_tool("call", None).await.unwrap_err();
    assert!(matches!(e, McpError::ListTimedOut { .. }), "{e}");
    // The next call is not stuck behind the connection's lock.
    let next = tokio::time::timeout(Duration::from_secs(20), server.call_tool("echo", None))
        .await
        .expect("the next call is not stuck");
    assert!(next.is_ok(), "{next:?}");
}

#[tokio::test]
async fn every_call_ends_within_its_call_timeout_even_when_the_relist_never_comes() {
    // The connect timeout is long (30 s): what bounds the calls below is their call timeout.
    let server = McpServer::connect(
        hostile("error-then-silent")
            .connect_timeout(Duration::from_secs(30))
            .call_timeout(Duration::from_secs(1)),
    )
    .await
    .unwrap();
    let bound = Duration::from_secs(15);
    // The call answers isError; the re-read of the tool list never comes: the call ends at
    // its deadline with the server's answer as it stands ...
    let (first, second) = tokio::join!(
        tokio::time::timeout(bound, server.call_tool("call", None)),
        // ... and a second call, waiting meanwhile for the connection the first holds, ends
        // within its own call timeout too.
        async {
            tokio::time::sleep(Duration::from_millis(100)).await;
            tokio::time::timeout(bound, server.call_tool("echo", None)).await
        },
    );
    let first =
        first.expect("the first call ended within its call timeout, not the connect timeout");
    assert_eq!(first.expect("the error result stands").is_error, Some(true));
    let second = second.expect("the second call was not held by the first's lock");
    assert!(
        matches!(second, Ok(_) | Err(McpError::CallTimedOut { .. })),
        "{second:?}"
    );
    // Afterwards the connection serves calls again.
    let next = tokio::time::timeout(bound, server.call_tool("echo", None))
        .await
        .expect("not stuck");
    assert!(next.is_ok(), "{next:?}");
}

#[tokio::test]
async fn the_reference_server_never_sees_the_service_secret_and_get_env_can_be_denied() {
    let Some(path) = std::env::var_os("AGENTFLOW_MCP_EVERYTHING") else {
        skip_missing_component(
            "the MCP everything server",
            "source .ci/mcp.sh, or set AGENTFLOW_MCP_EVERYTHING to \
             @modelcontextprotocol/server-everything's dist/index.js",
        );
        return;
    };
    set_secret();
    let config = || {
        McpServerConfig::stdio("everything", "node")
            .arg(&path)
            .arg("stdio")
    };
    let server = McpServer::connect(config()).await.unwrap();
    let result = server.call_tool("get-env", None).await.unwrap();
    let text = agentweave_runtime::mcp::result_text(&result);
    assert!(text.contains("PATH"), "{text}");
    assert!(!text.contains(SECRET_NAME), "{text}");
    assert!(!text.contains(SECRET), "{text}");

    let denied = McpServer::connect(config().deny_tools(["get-env"]))
        .await
        .unwrap();
    assert!(denied
        .tools()
        .await
        .unwrap()
        .iter()
        .all(|t| t.name() != "get-env"));
    assert!(matches!(
        denied.call_tool("get-env", None).await,
        Err(McpError::ToolDenied { .. })
    ));
}
