//! An MCP server over streamable HTTP is read within the same limit as a stdio server's
//! line ([`McpLimits::max_message_bytes`]): a hostile server (`tests/mcp/hostile.py --http`,
//! plain Python) answering a call with a 15 MB body gets a typed limit error, not 15 MB read
//! into memory, and the connection serves the next call. Python 3 is on every CI machine.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use agentweave_runtime::mcp::{McpError, McpLimits, McpServer, McpServerConfig};

const HOSTILE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/mcp/hostile.py");

/// The hostile server in `mode` over HTTP; killed when dropped.
struct HttpServer {
    child: Child,
    url: String,
}

impl HttpServer {
    fn start(mode: &str) -> HttpServer {
        let mut child = Command::new("python3")
            .args([HOSTILE, mode, "--http"])
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3 runs");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line
            .trim()
            .strip_prefix("listening ")
            .unwrap_or_else(|| panic!("the server said {line:?}"));
        HttpServer {
            child,
            url: format!("http://127.0.0.1:{port}/mcp"),
        }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test]
async fn an_http_answer_over_the_message_limit_is_a_limit_error() {
    let server = HttpServer::start("huge-line");
    let limit = 1 << 20;
    let mcp = McpServer::connect(
        McpServerConfig::http("hostile-http", server.url.as_str())
            .limits(McpLimits::default().max_message_bytes(limit))
            .connect_timeout(Duration::from_secs(10)),
    )
    .await
    .unwrap();
    let e = mcp.call_tool("call", None).await.unwrap_err();
    match &e {
        McpError::LimitExceeded {
            field, limit: l, ..
        } => {
            assert_eq!((*field, *l), ("max_message_bytes", limit), "{e}")
        }
        other => panic!("not a limit error: {other}"),
    }
    assert!(e.to_string().contains("max_message_bytes"), "{e}");
    // The next call is answered.
    let echo = mcp.call_tool("echo", None).await.unwrap();
    assert_ne!(echo.is_error, Some(true));
}

#[tokio::test]
async fn an_http_answer_within_the_limit_is_read_whole() {
    let server = HttpServer::start("big-result");
    // 3 MB of text in one block: within a 16 MiB message, over the default result limit.
    let mcp = McpServer::connect(McpServerConfig::http("big-http", server.url.as_str()))
        .await
        .unwrap();
    let e = mcp.call_tool("call", None).await.unwrap_err();
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
}
