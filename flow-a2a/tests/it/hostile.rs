//! Hostile A2A peers on loopback: one that never answers, one that streams forever, one that
//! sends a 100 MB part, one that answers something that is not JSON-RPC, one that fails until
//! it is retried. Each call ends with a typed error (or, retried, succeeds), and an `A2aAgent`
//! calling it ends its node with an error event naming the peer.

use std::convert::Infallible;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use agentweave_a2a::rpc::RpcError;
use agentweave_a2a::wire::{Message, Part, Role, SendMessageRequest};
use agentweave_a2a::{A2aAgent, A2aClient, A2aError};
use agentweave_runtime::model::{HttpError, HttpLimits, RetryPolicy, SizeLimit, TimeoutKind};
use agentweave_runtime::{FlowAgent, Runner};
use axum::body::{Body, Bytes};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use futures::StreamExt;

fn sse(body: impl futures::Stream<Item = Bytes> + Send + 'static) -> Response {
    let body = Body::from_stream(body.map(Ok::<_, Infallible>));
    ([(header::CONTENT_TYPE, "text/event-stream")], body).into_response()
}

const WORKING: &str = r#"data: {"jsonrpc":"2.0","id":1,"result":{"statusUpdate":{"taskId":"t","contextId":"c","status":{"state":"TASK_STATE_WORKING","message":{"messageId":"m","role":"ROLE_AGENT","parts":[{"text":"still working"}]}}}}}

"#;

/// The peers, each at its own path; `flaky` answers 503 twice, then a completed task.
async fn peers() -> (String, Arc<AtomicUsize>) {
    let flaky_calls = Arc::new(AtomicUsize::new(0));
    let calls = Arc::clone(&flaky_calls);
    let app = Router::new()
        .route(
            "/silent",
            post(|| async {
                std::future::pending::<()>().await;
                ""
            }),
        )
        .route(
            "/forever",
            post(|| async {
                sse(futures::stream::unfold((), |()| async {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                    Some((Bytes::from_static(WORKING.as_bytes()), ()))
                }))
            }),
        )
        .route(
            "/huge",
            post(|| async {
                // One event whose text part is 100 MB, made as it is sent.
                let head = futures::stream::once(async {
                    Bytes::from_static(br#"data: {"jsonrpc":"2.0","id":1,"result":{"message":{"role":"ROLE_AGENT","parts":[{"text":""#)
                });
                let chunk = Bytes::from(vec![b'a'; 1 << 20]);
                let body = futures::stream::iter((0..100).map(move |_| chunk.clone()));
                sse(head.chain(body))
            }),
        )
        .route("/not-json", post(|| async { "<html>surprise</html>" }))
        .route(
            "/bad-sse",
            post(|| async { sse(futures::stream::iter([Bytes::from_static(b"data: {\"jsonrpc\": 2}\n\n")])) }),
        )
        .route(
            "/refuses",
            post(|| async {
                r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32001,"message":"no such task"}}"#
            }),
        )
        .route(
            "/flaky",
            post(move || {
                let calls = Arc::clone(&calls);
                async move {
                    if calls.fetch_add(1, Ordering::SeqCst) < 2 {
                        return StatusCode::SERVICE_UNAVAILABLE.into_response();
                    }
                    let done = r#"data: {"jsonrpc":"2.0","id":1,"result":{"statusUpdate":{"taskId":"t","contextId":"c","status":{"state":"TASK_STATE_COMPLETED","message":{"messageId":"m","role":"ROLE_AGENT","parts":[{"text":"done at last"}]}}}}}

"#;
                    sse(futures::stream::iter([Bytes::from_static(done.as_bytes())]))
                }
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (base, flaky_calls)
}

fn client(url: String) -> A2aClient {
    let limits = HttpLimits::default()
        .first_byte_timeout(Duration::from_millis(300))
        .total_timeout(Duration::from_secs(2))
        .max_sse_line_bytes(1 << 20)
        .max_sse_event_bytes(1 << 20);
    A2aClient::new(url)
        .unwrap()
        .limits(limits)
        .unwrap()
        .retry(RetryPolicy::none())
}

fn hello() -> SendMessageRequest {
    SendMessageRequest {
        message: Message {
            message_id: "m".into(),
            role: Role::User,
            parts: vec![Part::text("hello")],
            ..Message::default()
        },
        ..SendMessageRequest::default()
    }
}

/// The first error of a streamed call.
async fn stream_error(client: &A2aClient) -> A2aError {
    match client.send_streaming(&hello()).await {
        Err(e) => e,
        Ok(mut updates) => loop {
            match updates.next().await {
                Some(Err(e)) => break e,
                Some(Ok(_)) => continue,
                None => panic!("the stream ended without an error"),
            }
        },
    }
}

/// The error event an `A2aAgent` on `client` ends its run with.
async fn agent_error(client: A2aClient) -> String {
    let agent = A2aAgent::new("remote", client);
    let events: Vec<_> = Runner::new(FlowAgent::new(agent)).run("hi").collect().await;
    let last = events.last().expect("an event");
    let error = last
        .error
        .as_ref()
        .expect("the run ends with an error event");
    error.to_string()
}

#[tokio::test]
async fn a_peer_that_never_answers_meets_the_first_byte_timeout() {
    let (base, _) = peers().await;
    let e = stream_error(&client(format!("{base}/silent"))).await;
    assert!(
        matches!(
            e,
            A2aError::Http {
                source: HttpError::Timeout {
                    kind: TimeoutKind::FirstByte,
                    ..
                },
                ..
            }
        ),
        "{e}"
    );
    let text = agent_error(client(format!("{base}/silent"))).await;
    assert!(
        text.contains("remote") && text.contains("first_byte_timeout"),
        "{text}"
    );
}

#[tokio::test]
async fn a_peer_that_streams_forever_meets_the_total_timeout() {
    let (base, _) = peers().await;
    let e = stream_error(&client(format!("{base}/forever"))).await;
    assert!(
        matches!(
            e,
            A2aError::Http {
                source: HttpError::Timeout {
                    kind: TimeoutKind::Total,
                    ..
                },
                ..
            }
        ),
        "{e}"
    );
    let text = agent_error(client(format!("{base}/forever"))).await;
    assert!(text.contains("total_timeout"), "{text}");
}

#[tokio::test]
async fn a_100_mb_part_meets_the_event_size_limit() {
    let (base, _) = peers().await;
    let e = stream_error(&client(format!("{base}/huge"))).await;
    assert!(
        matches!(
            e,
            A2aError::Http { source: HttpError::TooLarge { what: SizeLimit::SseLine | SizeLimit::SseEvent, limit }, .. } if limit == 1 << 20
        ),
        "{e}"
    );
    let text = agent_error(client(format!("{base}/huge"))).await;
    assert!(text.contains("larger than 1048576 bytes"), "{text}");
}

#[tokio::test]
async fn answers_that_are_not_jsonrpc_are_malformed() {
    let (base, _) = peers().await;
    let e = stream_error(&client(format!("{base}/not-json"))).await;
    assert!(matches!(e, A2aError::Malformed { .. }), "{e}");
    let e = stream_error(&client(format!("{base}/bad-sse"))).await;
    assert!(matches!(e, A2aError::Malformed { .. }), "{e}");
    let e = client(format!("{base}/not-json"))
        .get_task("t")
        .await
        .unwrap_err();
    assert!(matches!(e, A2aError::Malformed { .. }), "{e}");
    let text = agent_error(client(format!("{base}/not-json"))).await;
    assert!(text.contains("not A2A"), "{text}");
}

#[tokio::test]
async fn a_jsonrpc_error_keeps_its_a2a_code() {
    let (base, _) = peers().await;
    let e = client(format!("{base}/refuses"))
        .get_task("t")
        .await
        .unwrap_err();
    assert!(
        matches!(
            e,
            A2aError::Rpc {
                source: RpcError::TaskNotFound(_),
                ..
            }
        ),
        "{e}"
    );
}

#[tokio::test]
async fn a_peer_that_is_unavailable_is_retried() {
    let (base, calls) = peers().await;
    let retrying = client(format!("{base}/flaky")).retry(
        RetryPolicy::new(3)
            .initial_backoff(Duration::from_millis(1))
            .max_backoff(Duration::from_millis(2)),
    );
    let agent = A2aAgent::new("remote", retrying);
    let events: Vec<_> = Runner::new(FlowAgent::new(agent)).run("hi").collect().await;
    let said: Vec<&str> = events
        .iter()
        .filter_map(|e| e.message_output().map(|m| m.content.as_str()))
        .collect();
    assert_eq!(said, ["done at last"]);
    assert_eq!(calls.load(Ordering::SeqCst), 3);
}

/// A peer whose card names `endpoint` as its JSON-RPC interface.
async fn card_pointing_at(endpoint: String) -> String {
    let card = serde_json::json!({
        "name": "lure",
        "supportedInterfaces": [{"url": endpoint, "protocolBinding": "JSONRPC"}],
    });
    let app = Router::new().route(
        "/.well-known/agent-card.json",
        axum::routing::get(move || {
            let card = card.clone();
            async move { axum::Json(card) }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    base
}

#[tokio::test]
async fn a_card_cannot_point_the_node_at_an_internal_address() {
    for lure in [
        "http://169.254.169.254/latest/meta-data/".to_owned(),
        "http://127.0.0.1:1/a2a".to_owned(),
        "http://[::ffff:127.0.0.1]:1/a2a".to_owned(),
        "http://admin:pw@example.com/a2a".to_owned(),
    ] {
        let base = card_pointing_at(lure.clone()).await;
        let refused = A2aAgent::from_card("lured", &base, Some("operator-token")).await;
        assert!(
            matches!(refused, Err(A2aError::Refused { .. })),
            "{lure}: {refused:?}"
        );
    }
    // An interface on the card's own origin is the operator's choice: accepted.
    let same = {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let card = serde_json::json!({
            "name": "own",
            "supportedInterfaces": [{"url": format!("{base}/a2a"), "protocolBinding": "JSONRPC"}],
        });
        let app = Router::new().route(
            "/.well-known/agent-card.json",
            axum::routing::get(move || {
                let card = card.clone();
                async move { axum::Json(card) }
            }),
        );
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        base
    };
    assert!(A2aAgent::from_card("own", &same, None).await.is_ok());
}

#[tokio::test]
async fn a_client_held_to_the_policy_refuses_internal_endpoints_unless_allowed() {
    use agentweave_runtime::outbound::OutboundPolicy;
    let (base, _) = peers().await;
    let strict = A2aClient::new(format!("{base}/refuses"))
        .unwrap()
        .outbound(OutboundPolicy::default());
    assert!(matches!(strict, Err(A2aError::Refused { .. })));
    let allowed = A2aClient::new(format!("{base}/refuses"))
        .unwrap()
        .outbound(OutboundPolicy::default().allow_net("127.0.0.0/8").unwrap())
        .unwrap();
    // Reached: the peer's own JSON-RPC refusal comes back.
    assert!(matches!(
        allowed.get_task("t").await,
        Err(A2aError::Rpc { .. })
    ));
}
