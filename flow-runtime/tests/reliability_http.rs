// Its own test binary, not a module of tests/it: a counting `#[global_allocator]`, which counts
// every allocation of the process: other tests' allocations would count in its measures.
//! Hostile HTTP servers against `OpenAiChatModel`, each on 127.0.0.1: a line that never ends,
//! data lines with no blank line, a huge event, an endless keep-alive stream, silent servers,
//! a huge body, a huge error body, storms of 429 and 500. Each call ends at its configured
//! bound with a typed error naming the limit, and the memory it used stays bounded (a counting
//! allocator measures the peak; no wall-clock assertions).
//!
//! Run with `cargo test -p agentweave-runtime --features openai --test reliability_http`.
#![cfg(feature = "openai")]

#[path = "support/counting.rs"]
mod counting;
mod support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use agentweave_runtime::model::{
    ChatModel, ChatRequest, HttpLimits, ModelError, OpenAiChatModel, OpenAiConfig, RetryPolicy,
    SizeLimit, TimeoutKind,
};
use agentweave_runtime::{AgentEvent, Message, Runner};
use futures::future::BoxFuture;
use futures::StreamExt;
use support::model_server::{self, SSE_HEAD};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const MIB: usize = 1 << 20;

type Handler = Arc<dyn Fn(TcpStream) -> BoxFuture<'static, ()> + Send + Sync>;

/// A server answering every request with `handler`; returns its base URL and the number of
/// requests it received.
async fn serve(handler: Handler) -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base_url = format!("http://{}/v1", listener.local_addr().unwrap());
    let count = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&count);
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let handler = Arc::clone(&handler);
            let seen = Arc::clone(&seen);
            tokio::spawn(async move {
                // A request cut short still counts.
                let _ = model_server::read_request(&mut socket).await;
                seen.fetch_add(1, Ordering::SeqCst);
                handler(socket).await;
            });
        }
    });
    (base_url, count)
}

/// Writes `head`, then `piece` again and again until the client hangs up.
fn endless(head: &'static str, piece: Vec<u8>) -> Handler {
    let piece: Arc<[u8]> = piece.into();
    Arc::new(move |mut socket| {
        let piece = Arc::clone(&piece);
        Box::pin(async move {
            if socket.write_all(head.as_bytes()).await.is_err() {
                return;
            }
            while socket.write_all(&piece).await.is_ok() {
                tokio::task::yield_now().await;
            }
        })
    })
}

/// Writes `head` and then holds the connection open, silent.
fn silent_after(head: &'static str) -> Handler {
    Arc::new(move |mut socket| {
        Box::pin(async move {
            let _ = socket.write_all(head.as_bytes()).await;
            let mut buf = [0u8; 64];
            // Returns when the client hangs up.
            while matches!(socket.read(&mut buf).await, Ok(n) if n > 0) {}
        })
    })
}

fn model(base_url: &str, limits: HttpLimits) -> OpenAiChatModel {
    OpenAiChatModel::new(OpenAiConfig::new(base_url, "test-model").limits(limits)).unwrap()
}

fn ask() -> ChatRequest {
    ChatRequest::new([Arc::new(Message::user("What is order 42?"))])
}

/// Streams one reply and returns its first error (the stream must end with one).
async fn stream_error(model: &OpenAiChatModel) -> ModelError {
    let mut stream = match model.stream(&ask()).await {
        Ok(stream) => stream,
        Err(e) => return e,
    };
    while let Some(chunk) = stream.next().await {
        if let Err(e) = chunk {
            assert!(
                stream.next().await.is_none(),
                "the stream goes on after {e}"
            );
            return e;
        }
    }
    panic!("the stream ended without an error");
}

fn assert_size_limit(error: &ModelError, want: SizeLimit, limit: usize) {
    let ModelError::LimitExceeded { what, limit: l, .. } = error else {
        panic!("expected a size limit, got {error:?}");
    };
    assert_eq!((*what, *l), (want, limit), "{error}");
    assert!(error.to_string().contains(want.field()), "{error}");
    assert!(!error.retryable());
}

fn assert_timeout(error: &ModelError, want: TimeoutKind, limit: Duration) {
    let ModelError::Timeout { kind, limit: l, .. } = error else {
        panic!("expected a timeout, got {error:?}");
    };
    assert_eq!((*kind, *l), (want, limit), "{error}");
    assert!(error.to_string().contains(want.field()), "{error}");
    assert!(error.retryable());
}

#[tokio::test]
async fn a_line_that_never_ends_is_cut_at_the_line_limit_in_bounded_memory() {
    let (url, _) = serve(endless(SSE_HEAD, b"x".repeat(8192))).await;
    let limits = HttpLimits::default().max_sse_line_bytes(MIB);
    let m = counting::measure();
    let error = stream_error(&model(&url, limits)).await;
    assert_size_limit(&error, SizeLimit::SseLine, MIB);
    // The line buffer (at most 1 MiB, doubled while it grows) and the HTTP stack.
    assert!(m.peak_growth() < 6 * MIB, "peak {} bytes", m.peak_growth());
}

#[tokio::test]
async fn data_lines_without_a_blank_line_are_cut_at_the_event_limit_in_bounded_memory() {
    let (url, _) = serve(endless(SSE_HEAD, b"data: {\"choices\":[]}\n".repeat(400))).await;
    let limits = HttpLimits::default().max_sse_event_bytes(2 * MIB);
    let m = counting::measure();
    let error = stream_error(&model(&url, limits)).await;
    assert_size_limit(&error, SizeLimit::SseEvent, 2 * MIB);
    assert!(m.peak_growth() < 10 * MIB, "peak {} bytes", m.peak_growth());
}

#[tokio::test]
async fn a_huge_event_in_small_pieces_is_refused_at_the_event_limit() {
    // One 20 MB event, 8 KB a write, as `data:` lines of one chunk's JSON split in pieces.
    let line = format!("data: {}\n", "y".repeat(8186));
    assert_eq!(line.len(), 8193);
    let (url, _) = serve(endless(SSE_HEAD, line.into_bytes())).await;
    let limits = HttpLimits::default().max_sse_event_bytes(4 * MIB);
    let m = counting::measure();
    let error = stream_error(&model(&url, limits)).await;
    assert_size_limit(&error, SizeLimit::SseEvent, 4 * MIB);
    assert!(m.peak_growth() < 16 * MIB, "peak {} bytes", m.peak_growth());
}

#[tokio::test]
async fn an_endless_stream_of_keepalives_ends_at_the_total_deadline() {
    let (url, _) = serve(endless(SSE_HEAD, b": keep-alive\n\n".to_vec())).await;
    let total = Duration::from_millis(300);
    let limits = HttpLimits::default().total_timeout(total);
    let m = counting::measure();
    let error = stream_error(&model(&url, limits)).await;
    assert_timeout(&error, TimeoutKind::Total, total);
    assert!(m.peak_growth() < 4 * MIB, "peak {} bytes", m.peak_growth());
}

#[tokio::test]
async fn a_stream_silent_after_its_head_ends_at_the_idle_timeout() {
    let _serial = counting::measure();
    let (url, _) = serve(silent_after(SSE_HEAD)).await;
    let idle = Duration::from_millis(200);
    let error = stream_error(&model(&url, HttpLimits::default().idle_timeout(idle))).await;
    assert_timeout(&error, TimeoutKind::Idle, idle);
}

#[tokio::test]
async fn a_whole_reply_silent_after_its_head_ends_at_the_idle_timeout() {
    let _serial = counting::measure();
    let (url, _) = serve(silent_after(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{",
    ))
    .await;
    let idle = Duration::from_millis(200);
    let model = model(&url, HttpLimits::default().idle_timeout(idle));
    let error = model.generate(&ask()).await.unwrap_err();
    assert_timeout(&error, TimeoutKind::Idle, idle);
}

#[tokio::test]
async fn a_server_that_never_answers_ends_at_the_first_byte_timeout_streamed_or_not() {
    let _serial = counting::measure();
    let (url, _) = serve(silent_after("")).await;
    let wait = Duration::from_millis(200);
    let model = model(&url, HttpLimits::default().first_byte_timeout(wait));
    assert_timeout(
        &model.generate(&ask()).await.unwrap_err(),
        TimeoutKind::FirstByte,
        wait,
    );
    assert_timeout(&stream_error(&model).await, TimeoutKind::FirstByte, wait);
}

#[tokio::test]
async fn an_endless_body_is_refused_at_the_body_limit_in_bounded_memory() {
    let head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n";
    let (url, _) = serve(endless(head, b" ".repeat(8192))).await;
    let model = model(&url, HttpLimits::default().max_body_bytes(2 * MIB));
    let m = counting::measure();
    let error = model.generate(&ask()).await.unwrap_err();
    assert_size_limit(&error, SizeLimit::Body, 2 * MIB);
    assert!(m.peak_growth() < 10 * MIB, "peak {} bytes", m.peak_growth());
}

#[tokio::test]
async fn a_body_announced_too_large_is_refused_before_it_is_read() {
    let _serial = counting::measure();
    let head =
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000000000\r\n\r\n";
    let (url, _) = serve(silent_after(head)).await;
    let model = model(&url, HttpLimits::default().max_body_bytes(MIB));
    assert_size_limit(
        &model.generate(&ask()).await.unwrap_err(),
        SizeLimit::Body,
        MIB,
    );
}

#[tokio::test]
async fn an_endless_error_body_is_cut_and_reported() {
    let head = "HTTP/1.1 500 Internal Server Error\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n";
    let (url, _) = serve(endless(head, b"boom ".repeat(2000))).await;
    let model = model(&url, HttpLimits::default());
    let m = counting::measure();
    let error = model.generate(&ask()).await.unwrap_err();
    let ModelError::Http { status, body, .. } = &error else {
        panic!("expected an HTTP error, got {error:?}");
    };
    assert_eq!(*status, 500);
    assert!(body.starts_with("boom boom"), "{body}");
    assert_eq!(
        body.chars().count(),
        501,
        "cut to 500 characters and an ellipsis"
    );
    assert!(m.peak_growth() < 4 * MIB, "peak {} bytes", m.peak_growth());
}

#[tokio::test]
async fn storms_of_429_and_500_end_after_the_retry_budget_with_the_last_error() {
    let turn = Arc::new(AtomicUsize::new(0));
    let handler: Handler = Arc::new(move |mut socket| {
        let n = turn.fetch_add(1, Ordering::SeqCst);
        Box::pin(async move {
            let reply = if n % 2 == 0 {
                "HTTP/1.1 429 Too Many Requests\r\nRetry-After: 0\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n{\"error\":{\"message\":\"slow down\"}}"
            } else {
                "HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n{\"error\":{\"message\":\"down\"}}"
            };
            let _ = socket.write_all(reply.as_bytes()).await;
            let _ = socket.shutdown().await;
        })
    });
    let (url, requests) = serve(handler).await;
    let retry = RetryPolicy::new(5).initial_backoff(Duration::from_millis(1));
    let flow = support::clerk(model(&url, HttpLimits::default()), retry);
    let m = counting::measure();
    let events: Vec<AgentEvent> = Runner::new(flow).run("What is order 42?").collect().await;
    assert_eq!(
        requests.load(Ordering::SeqCst),
        6,
        "the first call and 5 retries"
    );
    let [event] = &events[..] else {
        panic!(
            "expected one error event, got {:?}",
            support::lines(&events)
        );
    };
    let error = event.error.as_ref().expect("an error event").to_string();
    assert!(
        error.contains("HTTP 500") && error.contains("down"),
        "{error}"
    );
    assert!(m.peak_growth() < 4 * MIB, "peak {} bytes", m.peak_growth());
}
