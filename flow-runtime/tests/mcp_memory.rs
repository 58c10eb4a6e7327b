//! A hostile stdio MCP server's one huge line (issue 39): 550,000 content blocks in about
//! 15 MB. The client refuses it as it reads it, with a typed error, and its memory stays
//! within a small multiple of the configured limits: counted by this test binary's allocator
//! (the peak of live bytes during the call), not by time.
#![cfg(feature = "mcp")]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use flow_runtime::mcp::{McpError, McpLimits, McpServer, McpServerConfig};

/// The system allocator, counting the bytes live and their peak.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc(layout);
        if !p.is_null() {
            let live = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(live, Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout);
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

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
    let before = LIVE.load(Ordering::SeqCst);
    PEAK.store(before, Ordering::SeqCst);
    let e = server.call_tool("call", None).await.unwrap_err();
    let peak = PEAK.load(Ordering::SeqCst) - before;
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
    let after = LIVE.load(Ordering::SeqCst);
    assert!(
        after < before + limits.max_result_bytes,
        "{} bytes kept after the call",
        after.saturating_sub(before)
    );
}
