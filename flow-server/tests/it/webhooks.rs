//! Webhooks: a run that names a URL has its end POSTed there, signed (HMAC-SHA256 over
//! `TIMESTAMP.BODY`), retried after a refusal, never redirected to another host; a URL that is
//! not http(s) is refused before anything runs.

use crate::common;

use std::sync::Arc;

use agentweave_server::{AppState, Auth};
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use axum::routing::post;
use axum::Router;
use common::{error_code, post as post_json, spawn, TOKEN};
use serde_json::{json, Value};
use tokio::sync::{mpsc, Mutex};

const SECRET: &[u8] = b"webhook-secret-for-tests";

fn state() -> AppState {
    AppState::builder(agentweave_runtime::InMemoryStore::new())
        .flow("desk", agentweave_server::demo::desk())
        .auth(Auth::bearer(TOKEN))
        .webhook_secret(SECRET)
        // The test's receivers listen on loopback: let it through, as an operator would.
        .outbound(common::loopback_allowed())
        .build()
        .unwrap()
}

/// A receiver on `host`, port 0: answers each request with the next of `answers` (then 200)
/// and sends (headers, body) of each to the channel.
async fn receiver(
    host: &str,
    answers: Vec<axum::response::Response>,
) -> (String, mpsc::UnboundedReceiver<(HeaderMap, Vec<u8>)>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let answers = Arc::new(Mutex::new(answers.into_iter()));
    let app = Router::new().route(
        "/hook",
        post(move |headers: HeaderMap, body: axum::body::Bytes| {
            let tx = tx.clone();
            let answers = Arc::clone(&answers);
            async move {
                let _ = tx.send((headers, body.to_vec()));
                match answers.lock().await.next() {
                    Some(answer) => answer,
                    None => StatusCode::OK.into_response(),
                }
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind(format!("{host}:0"))
        .await
        .unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}/hook"), rx)
}

#[tokio::test]
async fn a_run_end_is_posted_signed_and_retried_after_a_refusal() {
    let server = spawn(state()).await;
    let (url, mut hits) = receiver(
        "127.0.0.1",
        vec![StatusCode::SERVICE_UNAVAILABLE.into_response()],
    )
    .await;
    let response = post_json(
        &server.base,
        "/v1/flows/desk/threads/t/runs",
        json!({ "message": "my kettle arrived broken", "webhook": url }),
    )
    .await;
    assert_eq!(response.status(), 202);
    let run: Value = response.json().await.unwrap();

    let (first_headers, first_body) = hits.recv().await.unwrap();
    let (headers, body) = hits.recv().await.unwrap();
    assert_eq!(first_body, body, "the retry sends the same body");
    let timestamp: u64 = headers["x-agentflow-timestamp"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(
        headers["x-agentflow-signature"].to_str().unwrap(),
        agentweave_server::webhooks::signature(SECRET, timestamp, &body)
    );
    assert_ne!(
        first_headers["x-agentflow-signature"].to_str().unwrap(),
        agentweave_server::webhooks::signature(b"another secret", timestamp, &body)
    );
    let body: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(body["run_id"], run["run_id"]);
    assert_eq!(body["status"], "success");
    assert_eq!(body["thread"], "t");
    assert!(body["output"].as_str().unwrap().contains("#1001"));
}

#[tokio::test]
async fn a_redirect_to_another_host_is_not_followed() {
    let server = spawn(state()).await;
    let (elsewhere, mut elsewhere_hits) = receiver("127.0.0.2", vec![]).await;
    let redirect = (
        StatusCode::TEMPORARY_REDIRECT,
        [(axum::http::header::LOCATION, elsewhere)],
    )
        .into_response();
    // Redirected at every attempt: the other host is never called.
    let answers = (0..agentweave_server::webhooks::ATTEMPTS)
        .map(|_| redirect_clone(&redirect))
        .collect();
    let (url, mut hits) = receiver("127.0.0.1", answers).await;
    post_json(
        &server.base,
        "/v1/flows/desk/threads/t/runs",
        json!({ "message": "hello", "webhook": url }),
    )
    .await;
    for _ in 0..agentweave_server::webhooks::ATTEMPTS {
        hits.recv().await.unwrap();
    }
    assert!(elsewhere_hits.try_recv().is_err());
}

fn redirect_clone(r: &axum::response::Response) -> axum::response::Response {
    (r.status(), r.headers().clone()).into_response()
}

#[tokio::test]
async fn a_webhook_that_is_not_http_is_refused_and_nothing_runs() {
    let server = spawn(state()).await;
    for url in ["ftp://example.com/hook", "file:///etc/passwd", "not a url"] {
        let (status, code, message) = error_code(
            post_json(
                &server.base,
                "/v1/flows/desk/threads/t/runs",
                json!({ "message": "hello", "webhook": url }),
            )
            .await,
        )
        .await;
        assert_eq!(
            (status, code.as_str()),
            (400, "bad_request"),
            "{url}: {message}"
        );
    }
    let runs: Value = common::get(&server.base, "/v1/flows/desk/threads/t/runs")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(runs["runs"], json!([]));
}
