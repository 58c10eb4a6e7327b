//! The response body of a streamed turn: Server-Sent Events as bytes.
//!
//! [`frame`] writes one event (`event: NAME`, `data: JSON`, a blank line) straight into a
//! buffer: serde's JSON never holds a raw line break, so the data is one `data:` line. [`SseBody`]
//! turns a stream of frames into the body: the frames that are ready go out together as one
//! chunk (a turn's events mostly come in bursts; one chunk costs the HTTP layer and the
//! client one write and one read instead of one per event), an idle stream gets an SSE
//! comment now and then, and a turn that streams too long is cut off.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};
use bytes::BytesMut;
use futures::Stream;
use serde::Serialize;
use tokio::time::{Instant, Sleep};

/// Ready frames are gathered into one chunk up to about this size.
const CHUNK_BYTES: usize = 16 * 1024;

/// One SSE frame with `data` as its JSON; a payload over `limit` bytes is replaced by an
/// `error` frame naming the limit.
pub(crate) fn frame(name: &str, data: &impl Serialize, limit: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(160);
    out.extend_from_slice(b"event: ");
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b"\ndata: ");
    let start = out.len();
    if let Err(e) = serde_json::to_writer(&mut out, data) {
        tracing::error!(error = %e, "an event does not serialise");
        return b"event: error\ndata: {\"code\":\"internal\",\"message\":\"an event could not be serialised\"}\n\n"
            .to_vec();
    }
    let size = out.len() - start;
    if size > limit {
        #[derive(Serialize)]
        struct Message {
            code: &'static str,
            message: String,
        }
        let message = Message {
            code: "event_too_large",
            message: format!(
                "a `{name}` event of {size} bytes exceeds the server's event size limit of \
                 {limit} bytes and was not sent (Limits::max_event_bytes)"
            ),
        };
        return frame("error", &message, usize::MAX);
    }
    out.extend_from_slice(b"\n\n");
    out
}

/// What [`SseBody`] sends when a turn runs past its time limit.
pub(crate) type Overtime = fn(Duration) -> Vec<u8>;

/// A stream of frames as an SSE response body. See the module documentation.
pub(crate) struct SseBody<S> {
    frames: Option<Pin<Box<S>>>,
    buffer: BytesMut,
    keep_alive: Pin<Box<Sleep>>,
    interval: Duration,
    /// Whether anything was sent since the keep-alive timer was last armed.
    sent: bool,
    deadline: Pin<Box<Sleep>>,
    max_duration: Duration,
    overtime: Overtime,
}

impl<S: Stream<Item = Vec<u8>> + Send + 'static> SseBody<S> {
    /// The body of `frames`: a comment after `interval` without a frame (between one and two
    /// intervals after the last one: the timer is not re-armed on every frame), and after
    /// `max_duration` the frames of `overtime` and the end (dropping `frames`).
    pub(crate) fn new(
        frames: S,
        interval: Duration,
        max_duration: Duration,
        overtime: Overtime,
    ) -> Self {
        SseBody {
            frames: Some(Box::pin(frames)),
            buffer: BytesMut::new(),
            keep_alive: Box::pin(tokio::time::sleep(interval)),
            interval,
            sent: false,
            deadline: Box::pin(tokio::time::sleep(max_duration)),
            max_duration,
            overtime,
        }
    }
}

impl<S: Stream<Item = Vec<u8>> + Send + 'static> Stream for SseBody<S> {
    type Item = Result<Bytes, Infallible>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        let Some(frames) = this.frames.as_mut() else {
            return Poll::Ready(None);
        };
        if this.deadline.as_mut().poll(cx).is_ready() {
            // Dropping the frames drops the turn: the run is cancelled, nothing recorded.
            this.frames = None;
            return Poll::Ready(Some(Ok(Bytes::from((this.overtime)(this.max_duration)))));
        }
        let mut ended = false;
        while this.buffer.len() < CHUNK_BYTES {
            match frames.as_mut().poll_next(cx) {
                Poll::Ready(Some(frame)) => this.buffer.extend_from_slice(&frame),
                Poll::Ready(None) => {
                    ended = true;
                    break;
                }
                Poll::Pending => break,
            }
        }
        if ended {
            this.frames = None;
        }
        if !this.buffer.is_empty() {
            this.sent = true;
            return Poll::Ready(Some(Ok(this.buffer.split().freeze())));
        }
        if ended {
            return Poll::Ready(None);
        }
        while this.keep_alive.as_mut().poll(cx).is_ready() {
            let next = Instant::now() + this.interval;
            this.keep_alive.as_mut().reset(next);
            if !std::mem::take(&mut this.sent) {
                return Poll::Ready(Some(Ok(Bytes::from_static(b":\n\n"))));
            }
        }
        Poll::Pending
    }
}

impl<S: Stream<Item = Vec<u8>> + Send + 'static> IntoResponse for SseBody<S> {
    fn into_response(self) -> Response {
        let mut response = Body::from_stream(self).into_response();
        let headers = response.headers_mut();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/event-stream"),
        );
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
        response
    }
}
