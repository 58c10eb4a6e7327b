//! Helpers of the server's tests: a server on a loopback port, and a client that reads its
//! Server-Sent Events.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use agentweave_server::AppState;
use eventsource_stream::Eventsource;
use futures::StreamExt;
use serde_json::Value;
use tokio::sync::oneshot;

/// The bearer token of the test servers.
pub const TOKEN: &str = "test-token-0123456789abcdef";

/// A server running on a loopback port until dropped.
///
/// Clients reach it through a recording proxy ([`record`]): every byte the server sends on
/// every connection is kept, and when the server is dropped (at the end of each test) the
/// bytes are scanned for what must never leave the server ([`assert_no_leaks`]). So every
/// test of the suite is also a test of the outward form.
pub struct TestServer {
    pub base: String,
    pub addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    sent: Sent,
    flows: Vec<String>,
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if !std::thread::panicking() {
            for bytes in self.sent.lock().unwrap().iter() {
                assert_no_leaks(&bytes.lock().unwrap(), &self.flows, &self.base);
            }
        }
    }
}

/// What the server sent, one buffer per connection.
type Sent = Arc<Mutex<Vec<Arc<Mutex<Vec<u8>>>>>>;

/// Serves `state` on 127.0.0.1, port 0, behind the recording proxy.
pub async fn spawn(state: AppState) -> TestServer {
    let flows = state.flows().map(|f| f.name().to_owned()).collect();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let upstream = listener.local_addr().unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    tokio::spawn(async move {
        agentweave_server::serve_until(listener, state, async {
            let _ = stopped.await;
        })
        .await
        .unwrap();
    });
    let (addr, sent) = record(upstream).await;
    TestServer {
        base: format!("http://{addr}"),
        addr,
        stop: Some(stop),
        sent,
        flows,
    }
}

/// A TCP proxy on a loopback port in front of `upstream`, keeping what `upstream` sends.
/// Each side's end of stream is passed on (half-close), so connection limits, timeouts and
/// closes behave as without it.
async fn record(upstream: SocketAddr) -> (SocketAddr, Sent) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let sent: Sent = Arc::default();
    let all = Arc::clone(&sent);
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            let Ok(server) = tokio::net::TcpStream::connect(upstream).await else {
                continue;
            };
            let bytes = Arc::new(Mutex::new(Vec::new()));
            all.lock().unwrap().push(Arc::clone(&bytes));
            let (mut client_read, mut client_write) = client.into_split();
            let (mut server_read, mut server_write) = server.into_split();
            tokio::spawn(async move {
                let mut buf = vec![0u8; 16 * 1024];
                loop {
                    match client_read.read(&mut buf).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => {
                            if server_write.write_all(&buf[..n]).await.is_err() {
                                break;
                            }
                        }
                    }
                }
                let _ = server_write.shutdown().await;
            });
            tokio::spawn(async move {
                let mut buf = vec![0u8; 16 * 1024];
                loop {
                    match server_read.read(&mut buf).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => {
                            bytes.lock().unwrap().extend_from_slice(&buf[..n]);
                            if client_write.write_all(&buf[..n]).await.is_err() {
                                break;
                            }
                        }
                    }
                }
                let _ = client_write.shutdown().await;
            });
        }
    });
    (addr, sent)
}

/// Text that must never leave the server, whatever the request: the agents' saved interrupt
/// state (an object or array under `state`; protocols such as A2A have a `state` string of
/// their own), internal URLs, OS error text, transport errors, panics.
pub const NEVER_SENT: &[&str] = &[
    "\"state\":{",
    "\"state\":[",
    "http://127.0.0.1",
    "http://localhost",
    "os error",
    "Connection refused",
    "error sending request",
    "panicked at",
    "INSTRUCTION-CANARY",
];

/// Panics if `bytes` (what a server sent on one connection, HTTP framing included) holds any
/// of [`NEVER_SENT`] or a store key (`FLOW.TENANT.THREAD`) of one of `flows`. The server's own
/// public address (`own`, e.g. in an A2A agent card) is not an internal URL.
pub fn assert_no_leaks(bytes: &[u8], flows: &[String], own: &str) {
    let raw = String::from_utf8_lossy(bytes);
    // Chunked bodies: take the chunk-size lines out, so text split across chunks is whole.
    let text = unchunk(&raw).replace(own, "<this server>");
    for needle in NEVER_SENT {
        assert!(
            !text.contains(needle),
            "the server sent {needle:?}: {}",
            excerpt(&text, needle)
        );
    }
    for flow in flows {
        let prefix = format!("{flow}.");
        for (at, _) in text.match_indices(&prefix) {
            let rest = &text[at + prefix.len()..];
            let tenant = rest
                .bytes()
                .take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-'))
                .count();
            let key = (1..=32).contains(&tenant)
                && rest[tenant..].starts_with('.')
                && rest[tenant + 1..]
                    .bytes()
                    .next()
                    .is_some_and(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-'));
            assert!(
                !key,
                "the server sent a store key: {}",
                excerpt(&text, &text[at..at + prefix.len() + tenant + 2])
            );
        }
    }
}

fn unchunk(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut rest = raw;
    while let Some(at) = rest.find("\r\n") {
        out.push_str(&rest[..at]);
        let after = &rest[at + 2..];
        let hex = after.bytes().take_while(u8::is_ascii_hexdigit).count();
        if hex > 0 && after[hex..].starts_with("\r\n") {
            rest = &after[hex + 2..];
        } else {
            out.push_str("\r\n");
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

fn excerpt(text: &str, needle: &str) -> String {
    let at = text.find(needle).unwrap_or(0);
    let mut start = at.saturating_sub(200);
    while !text.is_char_boundary(start) {
        start -= 1;
    }
    let mut end = (at + needle.len() + 200).min(text.len());
    while !text.is_char_boundary(end) {
        end += 1;
    }
    text[start..end].to_owned()
}

/// The demo desk with the test token.
pub fn desk_state() -> AppState {
    AppState::builder(agentweave_runtime::InMemoryStore::new())
        .flow("desk", agentweave_server::demo::desk())
        .auth(agentweave_server::Auth::bearer(TOKEN))
        .turn_routing(agentweave_runtime::TurnRouting::Root)
        .build()
        .unwrap()
}

/// One Server-Sent Event: its name and its JSON data.
#[derive(Debug, Clone)]
pub struct Sse {
    pub name: String,
    pub data: Value,
}

/// Reads every event of an SSE response.
pub async fn read_sse(response: reqwest::Response) -> Vec<Sse> {
    assert_eq!(response.status(), 200, "SSE response status");
    assert_eq!(
        response.headers()["content-type"],
        "text/event-stream",
        "SSE content type"
    );
    let mut events = response.bytes_stream().eventsource();
    let mut out = Vec::new();
    while let Some(event) = events.next().await {
        let event = event.expect("well-formed SSE");
        out.push(Sse {
            name: event.event,
            data: serde_json::from_str(&event.data).expect("JSON data"),
        });
    }
    out
}

/// The client with the token.
pub fn client() -> reqwest::Client {
    reqwest::Client::new()
}

/// POSTs JSON with the test token.
pub async fn post(base: &str, path: &str, body: Value) -> reqwest::Response {
    client()
        .post(format!("{base}{path}"))
        .bearer_auth(TOKEN)
        .json(&body)
        .send()
        .await
        .unwrap()
}

/// GETs with the test token.
pub async fn get(base: &str, path: &str) -> reqwest::Response {
    client()
        .get(format!("{base}{path}"))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap()
}

/// Runs a turn and returns its events.
pub async fn turn(base: &str, flow: &str, thread: &str, message: &str) -> Vec<Sse> {
    read_sse(
        post(
            base,
            &format!("/v1/flows/{flow}/threads/{thread}/turns"),
            serde_json::json!({ "message": message }),
        )
        .await,
    )
    .await
}

/// The `done` event's data.
pub fn done(events: &[Sse]) -> &Value {
    let last = events.last().expect("events");
    assert_eq!(last.name, "done", "the last event is `done`: {events:#?}");
    &last.data
}

/// The error body's code.
pub async fn error_code(response: reqwest::Response) -> (u16, String, String) {
    let status = response.status().as_u16();
    let text = response.text().await.expect("a body");
    let body: Value = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("a JSON error body, not {text:?} (status {status}): {e}"));
    (
        status,
        body["error"]["code"]
            .as_str()
            .unwrap_or_else(|| panic!("an error code in {body} (status {status})"))
            .to_owned(),
        body["error"]["message"].as_str().unwrap().to_owned(),
    )
}

/// The strict outbound policy with loopback let through (`127.0.0.0/8`): the tests'
/// webhook receivers listen there.
pub fn loopback_allowed() -> agentweave_runtime::outbound::OutboundPolicy {
    agentweave_runtime::outbound::OutboundPolicy::default()
        .allow_net("127.0.0.0/8")
        .expect("a CIDR range")
}
