// Its own test binary, not a module of tests/it: a counting `#[global_allocator]`, which counts
// every allocation of the process: other tests' allocations would count in its measures.
//! A hostile stdio MCP server's one huge line (issue 39): 550,000 content blocks in about
//! 15 MB. The client refuses it as it reads it, with a typed error, and its memory stays
//! within a small multiple of the configured limits: counted by this test binary's allocator
//! (the peak of live bytes during the call), not by time.
#![cfg(feature = "mcp")]

use std::time::Duration;

use agentweave_runtime::mcp::{McpError, McpLimits, McpServer, McpServerConfig};

#[path = "support/counting.rs"]
mod counting;

const HOSTILE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/mcp/hostile.py");

#[tokio::test]
async fn a_huge_line_of_many_blocks_is_refused_within_a_small_multiple_of_the_limits() {
    let python = String::from_utf8(
        std::process::Command::new("python3")
            .args(["-c", "import sys; print(sys.executable)"])
            .output()
            .expect("python3 runs")
            .stdout,
    )
    .unwrap()
    .trim()
    .to_owned();
    let limits = McpLimits::default();
    let server = McpServer::connect(
        McpServerConfig::stdio("huge", python)
            .arg(HOSTILE)
            .arg("huge-line")
            .call_timeout(Duration::from_secs(60)),
    )
    .await
    .unwrap();
    let measure = counting::measure();
    let e = server.call_tool("call", None).await.unwrap_err();
    let peak = measure.peak_growth();
    assert!(
        matches!(
            e,
            McpError::LimitExceeded {
                field: "max_result_blocks",
                ..
            }
        ),
        "{e}"
    );
    println!("peak live bytes during the call: {peak}");
    // The limits: 1 MiB of result, 1,024 blocks. Before, this line took 829 MB at its peak.
    let bound = 8 * limits.max_result_bytes;
    assert!(
        peak < bound,
        "the call peaked at {peak} bytes (bound {bound})"
    );
    // The connection stays usable, and keeps nothing of the line.
    assert!(server.call_tool("echo", None).await.is_ok());
    let kept = measure.live_growth();
    assert!(
        kept < limits.max_result_bytes,
        "{kept} bytes kept after the call"
    );
}
