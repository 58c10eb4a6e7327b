//! Helpers of the server's tests: a server on a loopback port, and a client that reads its
//! Server-Sent Events.
#![allow(dead_code)]

use std::net::SocketAddr;

use eventsource_stream::Eventsource;
use flow_server::AppState;
use futures::StreamExt;
use serde_json::Value;
use tokio::sync::oneshot;

/// The bearer token of the test servers.
pub const TOKEN: &str = "test-token-0123456789abcdef";

/// A server running on a loopback port until dropped.
pub struct TestServer {
    pub base: String,
    pub addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// Serves `state` on 127.0.0.1, port 0.
pub async fn spawn(state: AppState) -> TestServer {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    tokio::spawn(async move {
        flow_server::serve_until(listener, state, async {
            let _ = stopped.await;
        })
        .await
        .unwrap();
    });
    TestServer {
        base: format!("http://{addr}"),
        addr,
        stop: Some(stop),
    }
}

/// The demo desk with the test token.
pub fn desk_state() -> AppState {
    AppState::builder(flow_runtime::InMemoryStore::new())
        .flow("desk", flow_server::demo::desk())
        .auth(flow_server::Auth::bearer(TOKEN))
        .turn_routing(flow_runtime::TurnRouting::Root)
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
