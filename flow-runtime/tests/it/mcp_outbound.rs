//! An MCP server over HTTP held to the outbound policy (issue 39): a loopback URL, or a name
//! that resolves to loopback, is refused before any connection; the same server let through
//! by the operator is connected to.
//!
//! Run with `cargo test -p agentweave-runtime --features mcp --test it -- mcp_outbound::`.
#![cfg(feature = "mcp")]

use std::net::IpAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use agentweave_runtime::mcp::{McpError, McpServer, McpServerConfig};
use agentweave_runtime::outbound::{Lookup, OutboundPolicy};
use futures::future::BoxFuture;
use futures::FutureExt;

/// Every name is 127.0.0.1.
struct Loopback;

impl Lookup for Loopback {
    fn lookup(&self, _host: String) -> BoxFuture<'static, std::io::Result<Vec<IpAddr>>> {
        async { Ok(vec![IpAddr::from([127, 0, 0, 1])]) }.boxed()
    }
}

/// A port that accepts connections (and answers nothing); the number accepted.
async fn listener() -> (u16, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let accepted = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&accepted);
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            counted.fetch_add(1, Ordering::SeqCst);
            held.push(socket);
        }
    });
    (port, accepted)
}

#[tokio::test]
async fn an_mcp_url_to_loopback_is_refused_before_any_connection() {
    let (port, accepted) = listener().await;
    for url in [
        format!("http://127.0.0.1:{port}/mcp"),
        format!("http://[::ffff:127.0.0.1]:{port}/mcp"),
        format!("http://localhost:{port}/mcp"),
    ] {
        let refused = McpServer::connect(
            McpServerConfig::http("web", url.clone()).outbound(OutboundPolicy::default()),
        )
        .await;
        assert!(
            matches!(refused, Err(McpError::Config { .. })),
            "{url}: {refused:?}"
        );
    }
    // A name that resolves to loopback: refused by the resolver.
    let named = McpServer::connect(
        McpServerConfig::http("web", format!("http://mcp.example.test:{port}/mcp"))
            .connect_timeout(Duration::from_secs(5))
            .outbound(OutboundPolicy::default().lookup(Loopback)),
    )
    .await;
    let message = named.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(message.contains("loopback"), "{message}");
    assert_eq!(
        accepted.load(Ordering::SeqCst),
        0,
        "a connection was opened"
    );

    // Let through by the operator: the connection is opened (the silent port then meets the
    // connect timeout), so the refusals above were the policy's.
    let allowed = McpServer::connect(
        McpServerConfig::http("web", format!("http://mcp.example.test:{port}/mcp"))
            .connect_timeout(Duration::from_millis(500))
            .outbound(
                OutboundPolicy::default()
                    .lookup(Loopback)
                    .allow_net("127.0.0.0/8")
                    .unwrap(),
            ),
    )
    .await;
    assert!(allowed.is_err());
    assert!(accepted.load(Ordering::SeqCst) >= 1);
}
