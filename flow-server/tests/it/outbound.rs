//! The outbound policy, attacked through the doors that take a caller's URL (issue 39, point
//! 1): webhooks and A2A push configurations never reach an internal address, in any spelling,
//! by a name that resolves there, or by a redirect to another origin; a caller's credentials
//! never go to a host the operator let through; one tenant's webhooks to a port that never
//! answers hold a bounded number of connections.

use crate::common;

use std::net::IpAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use agentweave_runtime::outbound::{Lookup, OutboundPolicy};
use agentweave_server::{AppState, Auth};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use common::{error_code, post as post_json, spawn, TOKEN};
use futures::future::BoxFuture;
use futures::FutureExt;
use serde_json::{json, Value};
use tokio::sync::mpsc;

const SECRET: &[u8] = b"outbound-webhook-secret";

fn state(policy: OutboundPolicy) -> AppState {
    AppState::builder(agentweave_runtime::InMemoryStore::new())
        .flow("desk", agentweave_server::demo::desk())
        .auth(Auth::bearer(TOKEN))
        .webhook_secret(SECRET)
        .outbound(policy)
        .build()
        .unwrap()
}

/// A resolver the test controls: answers `answers` in turn (the last one from then on) and
/// counts the questions.
#[derive(Clone)]
struct Scripted {
    answers: Arc<Vec<IpAddr>>,
    asked: Arc<AtomicUsize>,
}

impl Scripted {
    fn new(answers: &[&str]) -> Self {
        Scripted {
            answers: Arc::new(answers.iter().map(|a| a.parse().unwrap()).collect()),
            asked: Arc::default(),
        }
    }
}

impl Lookup for Scripted {
    fn lookup(&self, _host: String) -> BoxFuture<'static, std::io::Result<Vec<IpAddr>>> {
        let n = self.asked.fetch_add(1, Ordering::SeqCst);
        let answer = self.answers[n.min(self.answers.len() - 1)];
        async move { Ok(vec![answer]) }.boxed()
    }
}

/// A receiver on 127.0.0.1, port 0: answers each POST with `answer` and sends each body to
/// the channel. Its port.
async fn receiver(
    answer: impl Fn() -> axum::response::Response + Clone + Send + Sync + 'static,
) -> (u16, mpsc::UnboundedReceiver<Vec<u8>>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |body: axum::body::Bytes| {
            let (tx, answer) = (tx.clone(), answer.clone());
            async move {
                let _ = tx.send(body.to_vec());
                answer()
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (port, rx)
}

async fn run_with_webhook(base: &str, thread: &str, url: &str) -> reqwest::Response {
    post_json(
        base,
        &format!("/v1/flows/desk/threads/{thread}/runs"),
        json!({ "message": "my kettle arrived broken", "webhook": url }),
    )
    .await
}

#[tokio::test]
async fn every_spelling_of_an_internal_address_is_refused_before_anything_runs() {
    let server = spawn(state(OutboundPolicy::default())).await;
    for url in [
        "http://localhost:8080/hook",
        "http://127.1/hook",
        "http://2130706433/hook",
        "http://0x7f000001/hook",
        "http://0.0.0.0/hook",
        "http://[::ffff:127.0.0.1]/hook",
        "http://[::1]/hook",
        "http://169.254.169.254/latest/meta-data/",
        "http://10.0.0.1/hook",
        "http://224.0.0.1/hook",
        "http://hooker:secret@example.com/hook",
    ] {
        let (status, code, message) =
            error_code(run_with_webhook(&server.base, "t", url).await).await;
        assert_eq!(
            (status, code.as_str()),
            (400, "bad_request"),
            "{url}: {message}"
        );
        assert!(message.contains("refused"), "{url}: {message}");
        assert!(
            !message.contains("secret"),
            "userinfo is not echoed: {message}"
        );
    }
    let runs: Value = common::get(&server.base, "/v1/flows/desk/threads/t/runs")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(runs["runs"], json!([]), "nothing ran");
}

#[tokio::test]
async fn a_name_that_resolves_to_loopback_is_refused_after_dns_and_allowed_when_the_operator_says_so(
) {
    let (port, mut hits) = receiver(|| StatusCode::OK.into_response()).await;
    let url = format!("http://hooks.example.test:{port}/hook");

    // Strict: the name passes the URL check, its address does not pass the resolver.
    let dns = Scripted::new(&["127.0.0.1"]);
    let server = spawn(state(OutboundPolicy::default().lookup(dns.clone()))).await;
    assert_eq!(
        run_with_webhook(&server.base, "t", &url).await.status(),
        202
    );
    while dns.asked.load(Ordering::SeqCst) == 0 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // A refused address is not retried: the one question stays one, and nothing arrives.
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    assert_eq!(
        dns.asked.load(Ordering::SeqCst),
        1,
        "no retry against a refused address"
    );
    assert!(
        hits.try_recv().is_err(),
        "the loopback receiver was reached"
    );

    // The same resolver and receiver, loopback let through: the webhook arrives (so the test
    // above could have seen one).
    let dns = Scripted::new(&["127.0.0.1"]);
    let policy = OutboundPolicy::default()
        .lookup(dns)
        .allow_net("127.0.0.0/8")
        .unwrap();
    let server = spawn(state(policy)).await;
    assert_eq!(
        run_with_webhook(&server.base, "t", &url).await.status(),
        202
    );
    let body: Value = serde_json::from_slice(&hits.recv().await.unwrap()).unwrap();
    assert_eq!(body["status"], "success");
}

#[tokio::test]
async fn dns_rebinding_between_two_attempts_never_reaches_loopback() {
    // The first answer is a public address that refuses the connection at once (port 9 of a
    // TEST-NET address has nothing; the connect timeout bounds it either way), so the
    // delivery retries, and the name then answers loopback.
    let (port, mut hits) = receiver(|| StatusCode::OK.into_response()).await;
    let dns = Scripted::new(&["192.0.2.1", "127.0.0.1"]);
    let policy = OutboundPolicy::default()
        .lookup(dns.clone())
        .connect_timeout(Duration::from_millis(300));
    let server = spawn(state(policy)).await;
    let url = format!("http://rebind.example.test:{port}/hook");
    assert_eq!(
        run_with_webhook(&server.base, "t", &url).await.status(),
        202
    );
    while dns.asked.load(Ordering::SeqCst) < 2 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    assert_eq!(
        dns.asked.load(Ordering::SeqCst),
        2,
        "asked again for the second connection, then refused"
    );
    assert!(hits.try_recv().is_err(), "the rebinding reached loopback");
}

#[tokio::test]
async fn a_307_to_another_port_of_the_same_host_is_not_followed() {
    let (other, mut other_hits) = receiver(|| StatusCode::OK.into_response()).await;
    let (port, mut hits) = receiver(move || {
        (
            StatusCode::TEMPORARY_REDIRECT,
            [(
                axum::http::header::LOCATION,
                format!("http://127.0.0.1:{other}/hook"),
            )],
        )
            .into_response()
    })
    .await;
    let server = spawn(state(common::loopback_allowed())).await;
    let url = format!("http://127.0.0.1:{port}/hook");
    assert_eq!(
        run_with_webhook(&server.base, "t", &url).await.status(),
        202
    );
    for _ in 0..agentweave_server::webhooks::ATTEMPTS {
        hits.recv().await.unwrap();
    }
    assert!(
        other_hits.try_recv().is_err(),
        "the POST body went to another port"
    );
}

#[tokio::test]
async fn a_push_config_with_credentials_to_an_internal_url_is_refused() {
    let server = spawn(state(common::loopback_allowed())).await;
    let create = |url: &str, auth: bool| {
        let mut params = json!({"taskId": "nobody.0", "url": url});
        if auth {
            params["authentication"] = json!({"scheme": "Bearer", "credentials": "caller-chosen"});
        }
        json!({"jsonrpc": "2.0", "id": 1, "method": "CreateTaskPushNotificationConfig",
               "params": params})
    };
    let call = |body: Value| {
        let base = server.base.clone();
        async move {
            let answer: Value = common::client()
                .post(format!("{base}/a2a/desk"))
                .bearer_auth(TOKEN)
                .header("A2A-Version", "1.0")
                .json(&body)
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            answer
        }
    };
    // To the loopback the operator let through: refused with credentials ...
    let refused = call(create("http://127.1:9/hook", true)).await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("credentials"),
        "{refused}"
    );
    // ... and a metadata address is refused with or without.
    for auth in [false, true] {
        let metadata = call(create("http://169.254.169.254/latest/", auth)).await;
        assert_eq!(metadata["error"]["code"], -32602, "{metadata}");
    }
    // Without credentials, the check passes on to the task (unknown here).
    let unknown = call(create("http://127.1:9/hook", false)).await;
    assert_eq!(unknown["error"]["code"], -32001, "{unknown}");
}

#[tokio::test]
async fn three_hundred_webhooks_to_a_silent_port_hold_a_bounded_number_of_connections() {
    // A port that accepts and never answers; it counts (and keeps) the connections.
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
    const CAP: usize = 4;
    let policy = common::loopback_allowed()
        .total_timeout(Duration::from_secs(120))
        .max_concurrent_per_tenant(CAP, 1_000);
    let server = spawn(state(policy)).await;
    let url = format!("http://127.0.0.1:{port}/hook");
    for i in 0..300 {
        let response = run_with_webhook(&server.base, &format!("t{i}"), &url).await;
        assert_eq!(response.status(), 202, "run {i}");
    }
    // Every run ends (the desk answers at once); their webhooks wait for the tenant's places.
    for i in (0..300).step_by(50) {
        loop {
            let runs: Value =
                common::get(&server.base, &format!("/v1/flows/desk/threads/t{i}/runs"))
                    .await
                    .json()
                    .await
                    .unwrap();
            if runs["runs"][0]["status"] == "success" {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    while accepted.load(Ordering::SeqCst) < CAP {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    assert_eq!(
        accepted.load(Ordering::SeqCst),
        CAP,
        "300 webhooks to a silent port opened more than the tenant's places"
    );
}
